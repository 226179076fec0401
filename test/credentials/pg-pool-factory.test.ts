/**
 * The credential factories over the test database. It trusts local connections, so the server never
 * asks for a password and node-postgres never calls the password function: the per-connection fetch,
 * a rotated user failing a new connection and real passwords are shown on a password-authenticated
 * cluster in test/faults/credential-rotation.test.ts. Here: the pinning fetch, the config built (the
 * DSN's own password never reaches node-postgres), and the options reaching the session.
 */
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';

import type { PgCredential, PgCredentialProvider } from '../../src/credentials/credential-types.js';
import { pgCredentialConfig } from '../../src/credentials/pg-credential-config.js';
import { makeDedicatedConnFactory, makePgPoolFactory } from '../../src/credentials/pg-pool-factory.js';
import { CredentialUsernameChangedError } from '../../src/errors/credential-errors.js';
import { TEST_DSN } from '../helpers/db.js';

/** The test DSN with TLS off (the test server has none) and a stale password a provider must beat. */
const DSN = (() => {
  const u = new URL(TEST_DSN);
  u.password = 'stale-in-dsn';
  u.searchParams.set('sslmode', 'disable');
  return u.toString();
})();
const USER = new URL(TEST_DSN).username || 'postgres';

class CountingProvider implements PgCredentialProvider {
  calls = 0;
  constructor(public credential: PgCredential) {}
  async getPgCredential(): Promise<PgCredential> {
    this.calls++;
    return this.credential;
  }
}

const toEnd: { end(): Promise<void> }[] = [];
afterEach(async () => {
  for (const x of toEnd.splice(0)) await x.end().catch(() => undefined);
});

describe('pgCredentialConfig', () => {
  it('parses the DSN, drops its password, pins the user and passes the password as a function', async () => {
    const provider = new CountingProvider({ password: 'fresh', username: 'v-1' });
    const config = await pgCredentialConfig(DSN, provider, 'pool');
    expect(config.connectionString).toBeUndefined();
    expect(config.user).toBe('v-1');
    expect(typeof config.password).toBe('function');
    expect(provider.calls).toBe(1);
    expect(await (config.password as () => Promise<string>)()).toBe('fresh');
    provider.credential = { password: 'x', username: 'v-2' };
    const err = await (config.password as () => Promise<string>)().catch((e) => e);
    expect(err).toBeInstanceOf(CredentialUsernameChangedError);
    expect(err.message).toMatch(/now issues "v-2" but this pool was built for "v-1".*credential reload/);
  });

  it('adds sslmode=require when the DSN sets no mode', async () => {
    const config = await pgCredentialConfig(
      'postgres://h/db',
      new CountingProvider({ password: 'p' }),
      'pool',
    );
    expect(config.ssl).toBeTruthy();
  });

  it('fails fast when the provider fails, and refuses what is not a provider', async () => {
    const failing = { getPgCredential: () => Promise.reject(new Error('vault sealed')) };
    await expect(makePgPoolFactory(DSN, failing)()).rejects.toThrow('vault sealed');
    await expect(pgCredentialConfig(DSN, {} as PgCredentialProvider, 'pool')).rejects.toThrow(
      /provider.*getPgCredential/,
    );
    const bad = { getPgCredential: async () => ({ pass: 'x' }) as unknown as PgCredential };
    await expect(pgCredentialConfig(DSN, bad, 'pool')).rejects.toThrow(/must resolve to \{ password/);
  });
});

describe('makePgPoolFactory', () => {
  it('builds a pool per call, fetching once to pin the user, with the options applied', async () => {
    const provider = new CountingProvider({ password: 'fresh' });
    const factory = makePgPoolFactory(DSN, provider, {
      maxSize: 2,
      applicationName: 'creds-test',
      statementTimeout: '7s',
      sessionSettings: { jit: 'off' },
    });
    const pool: pg.Pool = await factory();
    toEnd.push(pool);
    expect(provider.calls).toBe(1);
    const row = (
      await pool.query<{ app: string; st: string; jit: string; u: string }>(
        "SELECT current_setting('application_name') AS app, current_setting('statement_timeout') AS st, current_setting('jit') AS jit, current_user AS u",
      )
    ).rows[0];
    expect(row).toEqual({ app: 'creds-test', st: '7s', jit: 'off', u: USER });
    expect(pool.options.max).toBe(2);
    const second = await factory();
    toEnd.push(second);
    expect(second).not.toBe(pool);
    expect(provider.calls).toBe(2);
  });

  it('checks its options at build time', () => {
    const p = new CountingProvider({ password: 'p' });
    expect(() => makePgPoolFactory(DSN, p, { maxSize: 0 })).toThrow(/makePgPoolFactory.maxSize/);
    expect(() => makePgPoolFactory(DSN, p, { minSize: 5, maxSize: 2 })).toThrow(/makePgPoolFactory.minSize/);
    expect(() => makePgPoolFactory(DSN, p, { idleTimeout: -1 })).toThrow(/makePgPoolFactory.idleTimeout/);
  });
});

describe('makeDedicatedConnFactory', () => {
  it('opens a connected client per call, fetching a credential for each', async () => {
    const provider = new CountingProvider({ password: 'fresh' });
    const open = makeDedicatedConnFactory(DSN, provider, { applicationName: 'creds-listen' });
    const a = await open();
    const b = await open();
    toEnd.push(a, b);
    expect(provider.calls).toBe(2);
    const pids = [a, b].map((c) => (c as unknown as { processID: number }).processID);
    expect(new Set(pids).size).toBe(2);
    expect((await a.query("SELECT current_setting('application_name') AS app")).rows[0]).toEqual({
      app: 'creds-listen',
    });
  });
});
