import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InvalidArgumentError, loadTaskQSettings, SettingsError, TaskQ } from '../../src/index.js';
import type { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { plain } from '../helpers/actors.js';
import { recordingLogger } from '../helpers/log-records.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

function problemsOf(run: () => unknown): SettingsError {
  try {
    run();
  } catch (err) {
    if (err instanceof SettingsError) return err;
    throw err;
  }
  throw new Error('expected a SettingsError');
}

describe('loadTaskQSettings', () => {
  it('has the reference defaults and reads nothing unless given an environment', () => {
    expect(loadTaskQSettings()).toEqual({
      pgDsn: null,
      schema: 'taskq',
      redisUrl: null,
      idempotencyKeyMaxBytes: 1024,
      payloadMaxBytes: 1024 * 1024,
      healthToken: null,
      pgCredentialProvider: null,
      redisCredentialProvider: null,
      environment: null,
      adminHost: '0.0.0.0',
      adminPort: 8080,
      adminMaxSseConnections: 50,
      adminUiPollingIntervalSeconds: 2,
      adminWorkerLivenessSeconds: 30,
      adminUiRequireAuth: true,
      adminUiFrameAncestors: 'none',
      adminUiSecureCookies: true,
      adminActionsEnabled: false,
      adminUrl: null,
      ssoBackend: 'none',
      adminUiAllowRateLimitReset: false,
      migrateOnStart: false,
    });
  });

  it('reads TASKQ_* variables, and overrides beat them', () => {
    const env = {
      TASKQ_PG_DSN: 'postgres://u@db:5432/app',
      TASKQ_SCHEMA_NAME: 'jobs_a',
      TASKQ_REDIS_URL: 'redis://cache:6379/2',
      TASKQ_IDEMPOTENCY_KEY_MAX_BYTES: '512',
      TASKQ_PAYLOAD_MAX_BYTES: '65536',
    };
    expect(loadTaskQSettings({ env })).toEqual({
      pgDsn: 'postgres://u@db:5432/app',
      schema: 'jobs_a',
      redisUrl: 'redis://cache:6379/2',
      idempotencyKeyMaxBytes: 512,
      payloadMaxBytes: 65536,
      healthToken: null,
      pgCredentialProvider: null,
      redisCredentialProvider: null,
      environment: null,
      adminHost: '0.0.0.0',
      adminPort: 8080,
      adminMaxSseConnections: 50,
      adminUiPollingIntervalSeconds: 2,
      adminWorkerLivenessSeconds: 30,
      adminUiRequireAuth: true,
      adminUiFrameAncestors: 'none',
      adminUiSecureCookies: true,
      adminActionsEnabled: false,
      adminUrl: null,
      ssoBackend: 'none',
      adminUiAllowRateLimitReset: false,
      migrateOnStart: false,
    });
    expect(loadTaskQSettings({ env, overrides: { schema: 'jobs_b', redisUrl: null } })).toMatchObject({
      schema: 'jobs_b',
      redisUrl: null,
    });
  });

  it('ignores variables only workers read, so a client can share a worker environment', () => {
    const s = loadTaskQSettings({ env: { TASKQ_MAX_CONCURRENCY: 'not-a-number', TASKQ_QUEUES: ',,' } });
    expect(s.schema).toBe('taskq');
  });

  it('reports every bad value at once, naming the variable, the value and the rule', () => {
    const err = problemsOf(() =>
      loadTaskQSettings({
        env: {
          TASKQ_PG_DSN: 'mysql://x',
          TASKQ_SCHEMA_NAME: 'bad-schema',
          TASKQ_REDIS_URL: 'http://cache',
          TASKQ_IDEMPOTENCY_KEY_MAX_BYTES: '0',
        },
      }),
    );
    expect(err.problems.map((p) => [p.setting, p.source, p.value])).toEqual([
      ['pgDsn', 'TASKQ_PG_DSN', 'mysql://x'],
      ['schema', 'TASKQ_SCHEMA_NAME', 'bad-schema'],
      ['redisUrl', 'TASKQ_REDIS_URL', 'http://cache'],
      ['idempotencyKeyMaxBytes', 'TASKQ_IDEMPOTENCY_KEY_MAX_BYTES', '0'],
    ]);
    for (const p of err.problems) expect(p.rule.length).toBeGreaterThan(5);
    expect(err.message).toMatch(/^Invalid client settings \(4 problems\)/);
  });

  it('rejects an unknown override key with a suggestion', () => {
    const err = problemsOf(() => loadTaskQSettings({ overrides: { shema: 'x' } as never }));
    expect(err.problems[0]).toMatchObject({
      setting: 'shema',
      rule: 'is not a client setting (did you mean schema?)',
    });
  });
});

describe('TaskQ.fromEnv / fromSettings', () => {
  let db: TestSchema;
  beforeAll(async () => {
    db = await migratedSchema('tqs');
  });
  afterAll(async () => {
    await db.drop();
  });

  it('opens a working client from the environment', async () => {
    await using tq = await TaskQ.fromEnv({ TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema });
    expect((tq.backend as PostgresBackend).schema).toBe(db.schema);
    const h = await tq.enqueue(plain, { n: 1 });
    expect((await tq.getRow(h.jobId))?.status).toBe('pending');
  });

  it('applies the key bound from settings', async () => {
    await using tq = await TaskQ.fromEnv(
      { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema },
      { overrides: { idempotencyKeyMaxBytes: 8 } },
    );
    await expect(tq.enqueue(plain, { n: 2 }, { idempotencyKey: 'nine-byte' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    const n = await db.pool.query(
      `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE idempotency_key = 'nine-byte'`,
    );
    expect(n.rows[0].n).toBe(0);
  });

  it('logs a TASKQ_* variable no part of TaskQ reads, naming the closest one', async () => {
    const { logger, records } = recordingLogger();
    await using tq = await TaskQ.fromEnv(
      {
        TASKQ_PG_DSN: TEST_DSN,
        TASKQ_SCHEMA_NAME: db.schema,
        TASKQ_SCHEMA: 'elsewhere',
        // A worker's variable, and a test suite's, are not a client's mistake.
        TASKQ_MAX_CONCURRENCY: '4',
        TASKQ_TEST_DSN: TEST_DSN,
      },
      { logger },
    );
    expect((tq.backend as PostgresBackend).schema).toBe(db.schema);
    expect(records.filter((r) => r.msg === 'settings-warning')).toEqual([
      {
        level: 'warn',
        msg: 'settings-warning',
        obj: {
          warning: 'TASKQ_SCHEMA is not a TaskQ setting and is ignored (did you mean TASKQ_SCHEMA_NAME?)',
        },
      },
    ]);
  });

  it('refuses settings without a DSN, and invalid settings, before connecting', async () => {
    await expect(TaskQ.fromEnv({})).rejects.toThrow(/TaskQSettings\.pgDsn.*TASKQ_PG_DSN/s);
    await expect(
      TaskQ.fromEnv({ TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: 'no spaces' }),
    ).rejects.toBeInstanceOf(SettingsError);
  });
});
