/**
 * "No setting without behaviour": a misspelt option key of the worker, the settings loaders, the
 * Postgres driver, the migrator, the backends and the credential factories is an error naming
 * `<field>.<key>` (with a "did you mean" guess when one is near), thrown before anything connects,
 * migrates or runs — never a silently ignored default (`schemaName` migrating schema `taskq`).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { makeRedisClientFactory } from '../../src/credentials/make-redis-client-factory.js';
import { makeDedicatedConnFactory, makePgPoolFactory } from '../../src/credentials/pg-pool-factory.js';
import { ReloadableRedisCredentials } from '../../src/credentials/reloadable-redis-credentials.js';
import type {
  PgCredentialProvider,
  RedisCredentialProvider,
} from '../../src/credentials/credential-types.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { silentLogger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { loadTaskQSettings } from '../../src/settings/taskq-settings.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { runWorker } from '../../src/worker/run-worker.js';
import { Worker } from '../../src/worker/worker.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';
import { rejection } from '../helpers/rejections.js';

/** The same, for an async call. */
async function asyncRejection(fn: () => Promise<unknown>): Promise<InvalidArgumentError> {
  const err: unknown = await fn().then(
    () => new Error('expected an InvalidArgumentError, the call resolved'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidArgumentError);
  return err as InvalidArgumentError;
}

const noop = actor({ name: 'uok_noop' }, async () => undefined);

/** Settings for a worker over the in-memory backend: no health listener, no watchdog, a short settle. */
const memorySettings = { healthEnabled: false, watchdogEnabled: false, idleSettleWindow: '100ms' } as const;

let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: TEST_DSN, max: 1 });
});
afterAll(async () => {
  await admin.end();
});

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return rows.length > 0;
}

describe('settings loaders', () => {
  it('loadTaskQSettings refuses a misspelt overrides', () => {
    const err = rejection(() =>
      loadTaskQSettings({ env: {}, overides: { schema: 'x' } } as unknown as Parameters<
        typeof loadTaskQSettings
      >[0]),
    );
    expect(err.field).toBe('loadTaskQSettings.overides');
    expect(err.rule).toContain('did you mean overrides?');
  });

  it('loadWorkerSettings refuses a misspelt overrides, a non-object options and a non-object env', () => {
    const err = rejection(() =>
      loadWorkerSettings({ env: {}, overides: { maxConcurrency: 3 } } as unknown as Parameters<
        typeof loadWorkerSettings
      >[0]),
    );
    expect(err.field).toBe('loadWorkerSettings.overides');
    expect(err.rule).toContain('did you mean overrides?');
    expect(rejection(() => loadWorkerSettings(null as never)).field).toBe('loadWorkerSettings.options');
    expect(rejection(() => loadWorkerSettings({ env: 'TASKQ_QUEUES=a' as never })).field).toBe(
      'loadWorkerSettings.env',
    );
  });

  it('the correct keys still load', () => {
    expect(loadTaskQSettings({ env: {}, overrides: { schema: 'x' } }).schema).toBe('x');
    expect(loadWorkerSettings({ env: {}, overrides: { maxConcurrency: 3 } }).settings.maxConcurrency).toBe(3);
  });
});

describe('PgDriver, Migrator, PostgresBackend', () => {
  it('new PgDriver refuses a misspelt maxPoolSize before it builds a pool', () => {
    const err = rejection(
      () => new PgDriver({ connection: TEST_DSN, maxPoolSzie: 50 } as unknown as { connection: string }),
    );
    expect(err.field).toBe('PgDriver.maxPoolSzie');
    expect(err.rule).toContain('did you mean maxPoolSize?');
    expect(rejection(() => new PgDriver(null as never)).field).toBe('PgDriver.options');
  });

  it('new Migrator refuses schemaName, and no schema is created', async () => {
    const schema = uniqueSchemaName('uok_mig');
    const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 1 });
    try {
      const err = rejection(() => new Migrator(driver, { schemaName: schema } as never));
      expect(err.field).toBe('Migrator.schemaName');
      expect(err.value).toBeUndefined(); // an unknown key's value is never shown (it may be a secret)
      expect(rejection(() => new Migrator(driver, null as never)).field).toBe('Migrator.options');
      expect(await schemaExists(schema)).toBe(false);
    } finally {
      await driver.close();
    }
  });

  it('new PostgresBackend refuses schemaName and a misspelt claimConnections', async () => {
    const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 1 });
    try {
      expect(rejection(() => new PostgresBackend(driver, { schemaName: 'uok_x' } as never)).field).toBe(
        'PostgresBackend.schemaName',
      );
      const err = rejection(() => new PostgresBackend(driver, { claimConection: 2 } as never));
      expect(err.field).toBe('PostgresBackend.claimConection');
      expect(err.rule).toContain('did you mean claimConnections?');
      // The right keys still select the schema.
      expect(new PostgresBackend(driver, { schema: 'uok_x', claimConnections: 2 }).schema).toBe('uok_x');
    } finally {
      await driver.close();
    }
  });
});

describe('credential factories', () => {
  it('makePgPoolFactory and makeDedicatedConnFactory refuse unknown keys; the provider is never asked', () => {
    let calls = 0;
    const provider: PgCredentialProvider = {
      getPgCredential: async () => {
        calls++;
        return { password: 'x' };
      },
    };
    const pool = rejection(() => makePgPoolFactory(TEST_DSN, provider, { maxPoolSize: 20 } as never));
    expect(pool.field).toBe('makePgPoolFactory.maxPoolSize');
    const conn = rejection(() =>
      makeDedicatedConnFactory(TEST_DSN, provider, { statementTimeoutMs: 100 } as never),
    );
    expect(conn.field).toBe('makeDedicatedConnFactory.statementTimeoutMs');
    expect(conn.rule).toContain('did you mean statementTimeout?');
    // A pool option is not a dedicated connection's.
    expect(rejection(() => makeDedicatedConnFactory(TEST_DSN, provider, { maxSize: 2 } as never)).field).toBe(
      'makeDedicatedConnFactory.maxSize',
    );
    expect(calls).toBe(0);
    // The right keys are still taken.
    expect(typeof makePgPoolFactory(TEST_DSN, provider, { maxSize: 2, statementTimeout: '5s' })).toBe(
      'function',
    );
  });

  it('makeRedisClientFactory (4th argument) and ReloadableRedisCredentials refuse fetchTimeout', () => {
    const provider: RedisCredentialProvider = { getRedisCredential: async () => ({ password: 'x' }) };
    const factory = rejection(() =>
      makeRedisClientFactory('rediss://h:6380', provider, {}, { fetchTimeout: 1 } as never),
    );
    expect(factory.field).toBe('makeRedisClientFactory.options.fetchTimeout');
    expect(factory.rule).toContain('did you mean fetchTimeoutMs?');
    const creds = rejection(
      () => new ReloadableRedisCredentials({ name: 'r', provider, fetchTimeout: 1 } as never),
    );
    expect(creds.field).toBe('ReloadableRedisCredentials.fetchTimeout');
    expect(creds.rule).toContain('did you mean fetchTimeoutMs?');
    expect(
      makeRedisClientFactory('rediss://h:6380', provider, { lazyConnect: true }, { fetchTimeoutMs: 5 })
        .credentials.name,
    ).toBe('redis');
  });
});

describe('InMemoryBackend', () => {
  it('refuses a misspelt clock, and a clock that is not one; takes the right key', () => {
    const clock = new FakeClock();
    const err = rejection(() => new InMemoryBackend({ clok: clock } as never));
    expect(err.field).toBe('InMemoryBackend.clok');
    expect(err.rule).toContain('did you mean clock?');
    expect(rejection(() => new InMemoryBackend({ clock: 5 } as never)).field).toBe('InMemoryBackend.clock');
    expect(new InMemoryBackend({ clock }).clock).toBe(clock);
  });
});

describe('Worker and runWorker', () => {
  it('new Worker refuses a misspelt option, and actor for actors', () => {
    const backend = new InMemoryBackend();
    const err = rejection(() => new Worker({ actors: [noop], backend, untilIdel: true } as never));
    expect(err.field).toBe('worker.untilIdel');
    expect(err.rule).toContain('did you mean untilIdle?');
    expect(rejection(() => new Worker({ actor: [noop], backend } as never)).rule).toContain(
      'did you mean actors?',
    );
    expect(rejection(() => new Worker(null as never)).field).toBe('worker.options');
    expect(rejection(() => new Worker({ actors: [noop], backend, settings: null as never })).field).toBe(
      'worker.settings',
    );
  });

  it('new Worker refuses an unknown key in already-loaded settings, naming every one', () => {
    const { settings } = loadWorkerSettings({ env: {} });
    let err: unknown;
    try {
      new Worker({
        actors: [noop],
        backend: new InMemoryBackend(),
        settings: { ...settings, maxConcurency: 3, lockLease: '30s' } as never,
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SettingsError);
    const problems = (err as SettingsError).problems;
    expect(problems.map((p) => [p.setting, p.source])).toEqual([
      ['maxConcurency', 'settings.maxConcurency'],
      ['lockLease', 'settings.lockLease'],
    ]);
    expect(problems[0]!.rule).toContain('did you mean maxConcurrency?');
    expect(problems[1]!.rule).toContain('did you mean lockLeaseMs?');
    // Loaded settings, changed through a real key, are taken as they are.
    const worker = new Worker({
      actors: [noop],
      backend: new InMemoryBackend(),
      settings: { ...settings, maxConcurrency: 3 },
      logger: silentLogger,
    });
    expect(worker.settings.maxConcurrency).toBe(3);
  });

  it('runWorker refuses onStart before anything runs: the job stays pending', async () => {
    const backend = new InMemoryBackend();
    const tq = new TaskQ(backend);
    try {
      const job = await tq.enqueue(noop, {});
      let started = false;
      const err = await asyncRejection(() =>
        runWorker({
          actors: [noop],
          backend,
          env: {},
          handleSignals: false,
          untilIdle: true,
          logger: silentLogger,
          settings: memorySettings,
          onStart: () => {
            started = true;
          },
        } as never),
      );
      expect(err.field).toBe('runWorker.onStart');
      expect(err.rule).toContain('did you mean onStarted?');
      expect(started).toBe(false);
      expect((await tq.getRow(job.jobId))?.status).toBe('pending');
      expect(await asyncRejection(() => runWorker(null as never))).toMatchObject({
        field: 'runWorker.options',
      });
    } finally {
      await tq.close();
    }
  });

  it('runWorker passes its own options (env, handleSignals, onStarted) without the Worker refusing them', async () => {
    const backend = new InMemoryBackend();
    const tq = new TaskQ(backend);
    try {
      const job = await tq.enqueue(noop, {});
      let started: Worker | null = null;
      const code = await runWorker({
        actors: [noop],
        backend,
        env: { TASKQ_MAX_CONCURRENCY: '2' },
        handleSignals: false,
        untilIdle: true,
        logger: silentLogger,
        settings: memorySettings,
        onStarted: (w) => {
          started = w;
        },
      });
      expect(code).toBe(0);
      expect((started as Worker | null)?.settings.maxConcurrency).toBe(2);
      expect((await tq.getRow(job.jobId))?.status).toBe('succeeded');
    } finally {
      await tq.close();
    }
  });
});
