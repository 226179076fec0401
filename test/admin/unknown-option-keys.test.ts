/**
 * The admin UI refuses a key it does not know instead of ignoring it: the options of
 * `resolveAdminOptions`, `adminPlugin` (plus Fastify's register keys) and `serveAdmin` (plus
 * host / port / prefix), the `oidc` and `saml` options, and the auth hook's user (a misspelt
 * `readPayload: false` answers 500 and is logged, never served with defaults). Real Postgres, real
 * HTTP for the hook.
 */
import { connect } from 'node:net';

import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { adminPlugin, resolveAdminOptions, serveAdmin, type AdminOptions } from '../../src/admin/index.js';
import type { OidcOptions, SamlOptions } from '../../src/admin/sso-options.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { freePort } from '../helpers/free-port.js';
import { recordingLogger } from '../helpers/log-records.js';

const SECRET = 'unknown-keys-session-secret-0123456789abcdef';
let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('admin_keys');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

/** The InvalidArgumentError `run` throws (or rejects with). */
async function refusal(run: () => unknown): Promise<InvalidArgumentError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return err as InvalidArgumentError;
  }
  throw new Error('expected an InvalidArgumentError, got none');
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const oidc = (extra: object): OidcOptions =>
  ({
    issuer: 'https://idp.example.com',
    clientId: 'c',
    clientSecret: 's',
    redirectUri: 'https://ops.example.com/auth/callback',
    sessionSecrets: [SECRET],
    groupClaim: 'groups',
    ...extra,
  }) as OidcOptions;

const saml = (extra: object): SamlOptions =>
  ({
    entityId: 'sp',
    acsUrl: 'https://ops.example.com/auth/saml/acs',
    idpEntityId: 'idp',
    idpSsoUrl: 'https://idp.example.com/sso',
    idpCert: 'CERT',
    sessionSecrets: [SECRET],
    groupAttribute: 'groups',
    ...extra,
  }) as SamlOptions;

describe('resolveAdminOptions', () => {
  it('refuses a misspelt option, naming it and the closest known one', async () => {
    const err = await refusal(() =>
      resolveAdminOptions({ tq, token: 's', actionEnabled: true } as unknown as AdminOptions),
    );
    expect(err.field).toBe('options.actionEnabled');
    expect(err.rule).toContain('did you mean actionsEnabled?');
  });

  it('never quotes the value of a misspelt key (it may be the token)', async () => {
    const err = await refusal(() =>
      resolveAdminOptions({ tq, environment: 'dev', tokn: 'very-secret-token' } as unknown as AdminOptions),
    );
    expect(err.field).toBe('options.tokn');
    expect(err.rule).toContain('did you mean token?');
    expect(err.message).not.toContain('very-secret-token');
  });

  it('refuses null options with a clear error', async () => {
    const err = await refusal(() => resolveAdminOptions(null as unknown as AdminOptions));
    expect(err.field).toBe('options');
  });

  it('refuses a misspelt oidc option: allowedGroup would admit every user', async () => {
    const err = await refusal(() => resolveAdminOptions({ tq, oidc: oidc({ allowedGroup: ['ops'] }) }));
    expect(err.field).toBe('options.oidc.allowedGroup');
    expect(err.rule).toContain('did you mean allowedGroups?');
    const secret = await refusal(() => resolveAdminOptions({ tq, oidc: oidc({ clientSecrte: 'shh-42' }) }));
    expect(secret.field).toBe('options.oidc.clientSecrte');
    expect(secret.message).not.toContain('shh-42');
  });

  it('refuses a misspelt saml option: actionGroup would let every user act', async () => {
    const err = await refusal(() => resolveAdminOptions({ tq, saml: saml({ actionGroup: ['ops'] }) }));
    expect(err.field).toBe('options.saml.actionGroup');
    expect(err.rule).toContain('did you mean actionGroups?');
  });

  it('still takes every documented oidc and saml key', () => {
    const o = resolveAdminOptions({
      tq,
      oidc: oidc({
        scope: 'openid email',
        sessionMaxAge: '1h',
        allowedGroups: ['a'],
        actionGroups: ['b'],
        payloadGroups: ['c'],
      }),
    });
    expect(o.sso).toMatchObject({ allowedGroups: ['a'], actionGroups: ['b'], payloadGroups: ['c'] });
    const s = resolveAdminOptions({
      tq,
      saml: saml({ spCert: null, spPrivateKey: null, sessionMaxAge: '1h', actionGroups: ['ops'] }),
    });
    expect(s.sso).toMatchObject({ kind: 'saml', actionGroups: ['ops'] });
  });
});

describe('adminPlugin', () => {
  it('refuses a misspelt option at registration', async () => {
    const app = Fastify();
    const err = await refusal(() =>
      app
        .register(adminPlugin, { prefix: '/admin', tq, token: 's', actionEnabled: true } as AdminOptions)
        .ready(),
    );
    expect(err.field).toBe('options.actionEnabled');
    expect(err.rule).toContain('is not an option of adminPlugin (did you mean actionsEnabled?)');
    await app.close();
  });

  it("takes Fastify's register keys (prefix, logLevel, logSerializers) with its own", async () => {
    const app = Fastify();
    await app.register(adminPlugin, {
      prefix: '/admin',
      logLevel: 'warn',
      logSerializers: {},
      tq,
      token: 's',
      actionsEnabled: true,
    });
    await app.ready();
    const page = await app.inject({ url: '/admin/', headers: { authorization: 'Bearer s' } });
    expect(page.statusCode).toBe(200);
    await app.close();
  });
});

describe('serveAdmin', () => {
  it('refuses a misspelt option before listening', async () => {
    const port = await freePort();
    const err = await refusal(() =>
      serveAdmin({ tq, token: 's', host: '127.0.0.1', port, prot: 1234 } as AdminOptions),
    );
    expect(err.field).toBe('options.prot');
    expect(err.rule).toContain('is not an option of serveAdmin (did you mean port?)');
    expect(await listening(port)).toBe(false);
    const sso = await refusal(() =>
      serveAdmin({ tq, host: '127.0.0.1', port, oidc: oidc({ allowedGroup: ['ops'] }) }),
    );
    expect(sso.field).toBe('options.oidc.allowedGroup');
    expect(await listening(port)).toBe(false);
  });

  it('refuses null options with a clear error', async () => {
    const err = await refusal(() => serveAdmin(null as unknown as AdminOptions));
    expect(err.field).toBe('options');
  });

  it('takes host, port and prefix', async () => {
    const server = await serveAdmin({ tq, token: 's', host: '127.0.0.1', port: 0, prefix: '/ops' });
    try {
      expect(server.url).toMatch(/\/ops$/);
      const page = await fetch(`${server.url}/`, { headers: { authorization: 'Bearer s' } });
      expect(page.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe("the auth hook's user", () => {
  const work = actor({ name: 'keys_work', queue: 'keys_q' }, async () => undefined);

  it('answers 500 and logs the field and rule for an unknown or ill-typed field; never serves defaults', async () => {
    const { logger, records } = recordingLogger();
    const users: Record<string, unknown> = {
      bob: { user: 'bob', readPayload: false },
      sue: { user: 'sue', actions: 'no' },
      num: { user: 42 },
      ann: { user: 'ann', readPayloads: false },
    };
    const server = await serveAdmin({
      tq,
      host: '127.0.0.1',
      port: 0,
      logger,
      actionsEnabled: true,
      auth: async (request) => (users[String(request.headers['x-user'])] ?? null) as never,
    });
    try {
      const job = await tq.enqueue(work, { card: '4111-SECRET' });
      const get = (user: string) =>
        fetch(`${server.url}/jobs/${job.jobId}`, { headers: { accept: 'text/html', 'x-user': user } });

      const bob = await get('bob');
      expect(bob.status).toBe(500);
      expect(await bob.text()).not.toContain('4111-SECRET');
      const bad = records.filter((r) => r.msg === 'admin-auth-hook-invalid');
      expect(bad).toHaveLength(1);
      expect(bad[0]?.level).toBe('error');
      expect(bad[0]?.obj.field).toBe('auth().readPayload');
      expect(bad[0]?.obj.rule).toContain('did you mean readPayloads?');

      const sue = await get('sue');
      expect(sue.status).toBe(500);
      expect(records.filter((r) => r.msg === 'admin-auth-hook-invalid')[1]?.obj.field).toBe('auth().actions');
      expect((await get('num')).status).toBe(500);

      // The correct field still works, and null still refuses with 401.
      const ann = await get('ann');
      expect(ann.status).toBe(200);
      const annPage = await ann.text();
      expect(annPage).not.toContain('4111-SECRET');
      expect(annPage).toContain('hidden');
      expect((await get('nobody')).status).toBe(401);
    } finally {
      await server.close();
    }
  });
});
