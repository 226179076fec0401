/**
 * `TaskQ.open({ dsn, pgCredentialProvider })` and `tq.reloadCredentials()`: the pool is rebuilt
 * through the factory and swapped in while calls keep working; a factory failure leaves the current
 * pool serving; a client without a factory (a DSN, a pool of the caller's) refuses.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import type { PgCredentialProvider } from '../../src/credentials/credential-types.js';
import { makePgPoolFactory } from '../../src/credentials/pg-pool-factory.js';
import type { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { PgDriver } from '../../src/db/pg-driver.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { TaskQStateError } from '../../src/errors/client-errors.js';
import { plain } from '../helpers/actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

const DSN = `${TEST_DSN}${TEST_DSN.includes('?') ? '&' : '?'}sslmode=disable`;
let db: TestSchema;

beforeAll(async () => {
  db = await migratedSchema('reload');
});
afterAll(async () => {
  await db?.drop();
});

const poolOf = (tq: TaskQ): pg.Pool => ((tq.backend as PostgresBackend).driver as PgDriver).pool;

describe('TaskQ.reloadCredentials', () => {
  it('rebuilds the pool through the provider and swaps it in; calls keep working', async () => {
    let calls = 0;
    const provider: PgCredentialProvider = {
      getPgCredential: async () => {
        calls++;
        return { password: 'unused-under-trust' };
      },
    };
    const tq = await TaskQ.open({
      dsn: DSN,
      schema: db.schema,
      pgCredentialProvider: provider,
      maxPoolSize: 2,
    });
    try {
      const first = await tq.enqueue(plain, { n: 1 });
      const old = poolOf(tq);
      const pending = Promise.all([2, 3, 4].map((n) => tq.enqueue(plain, { n })));
      await tq.reloadCredentials();
      await pending;
      expect(poolOf(tq)).not.toBe(old);
      expect(old.ended).toBe(true);
      expect(calls).toBe(2);
      expect((await tq.getRow(first.jobId))?.status).toBe('pending');
      await tq.enqueue(plain, { n: 5 });
    } finally {
      await tq.close();
    }
  });

  it('TaskQ.fromEnv imports TASKQ_PG_CREDENTIAL_PROVIDER: its pool is factory-built and reloads', async () => {
    const tq = await TaskQ.fromEnv({
      TASKQ_PG_DSN: DSN,
      TASKQ_SCHEMA_NAME: db.schema,
      TASKQ_PG_CREDENTIAL_PROVIDER: './test/fixtures/credentials/providers.mjs:ProviderClass',
    });
    try {
      const old = poolOf(tq);
      await tq.reloadCredentials();
      expect(poolOf(tq)).not.toBe(old);
      await tq.enqueue(plain, { n: 7 });
    } finally {
      await tq.close();
    }
  });

  it('leaves the current pool serving when the factory fails', async () => {
    let fail = false;
    const factory = makePgPoolFactory(DSN, {
      getPgCredential: async () => {
        if (fail) throw new Error('token endpoint down');
        return { password: 'x' };
      },
    });
    const tq = await TaskQ.open({ poolFactory: factory, schema: db.schema });
    try {
      const old = poolOf(tq);
      fail = true;
      await expect(tq.reloadCredentials()).rejects.toThrow('token endpoint down');
      expect(poolOf(tq)).toBe(old);
      expect(old.ended).toBe(false);
      await tq.enqueue(plain, { n: 6 });
    } finally {
      await tq.close();
    }
  });

  it('refuses a pool of the caller, a plain DSN, and a closed client', async () => {
    const own = new pg.Pool({ connectionString: TEST_DSN, max: 1 });
    const withPool = await TaskQ.open({ pool: own, schema: db.schema });
    const withDsn = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    try {
      for (const tq of [withPool, withDsn]) {
        const err = await tq.reloadCredentials().catch((e) => e);
        expect(err).toBeInstanceOf(TaskQStateError);
        expect(err.message).toMatch(/poolFactory.*pgCredentialProvider.*rotate it yourself/);
      }
      expect(own.ended).toBe(false);
    } finally {
      await withPool.close();
      await withDsn.close();
      await own.end();
    }
    await expect(withDsn.reloadCredentials()).rejects.toThrow(/closed/);
  });

  it('checks pgCredentialProvider before connecting: with dsn only, and a provider', async () => {
    const provider: PgCredentialProvider = { getPgCredential: async () => ({ password: 'x' }) };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ pgCredentialProvider: provider }, /needs dsn/],
      [
        { dsn: DSN, pgCredentialProvider: provider, poolFactory: async () => new pg.Pool() },
        /not with pool, poolFactory/,
      ],
      [{ pool: new pg.Pool(), pgCredentialProvider: provider }, /not with pool, poolFactory/],
      [{ dsn: DSN, pgCredentialProvider: { token: 'x' } }, /getPgCredential\(\) method/],
    ];
    for (const [options, message] of cases) {
      const err = await TaskQ.open({ schema: db.schema, ...options }).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err.message).toMatch(/TaskQ\.open\.pgCredentialProvider/);
      expect(err.message).toMatch(message);
    }
  });
});
