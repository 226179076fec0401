/**
 * Worker settings that no other test changed, each set to a value other than its default and its
 * effect observed (test/settings/every-setting.test.ts lists this file as their proof): the direct
 * DSN, the stored error's length and redaction, the pools' sizes and statement timeouts, the
 * LISTEN setup bound, the dispatch oversample, the maintenance schedules and retentions, and the
 * stranded-jobs cadence. Real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import type { Backend } from '../../src/backend/backend.js';
import type { DispatchRequest } from '../../src/backend/worker-types.js';
import { openWorkerBackend } from '../../src/backend/open-backend.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Driver } from '../../src/db/driver.js';
import { ProgressTooLarge } from '../../src/errors/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { loadWorkerSettings, type WorkerSettingsInput } from '../../src/settings/load-worker-settings.js';
import { MaintenanceLeader } from '../../src/worker/maintenance/maintenance-leader.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('wiring');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

const q = (sql: string, v: unknown[] = []) => db.pool.query(sql.replaceAll('$S', `"${db.schema}"`), v);

/** A logger that keeps every warning's message and error. */
function recordingLogger(): Logger & { warnings: { msg: string; err?: unknown }[] } {
  const warnings: { msg: string; err?: unknown }[] = [];
  const logger: Logger & { warnings: typeof warnings } = {
    warnings,
    debug() {},
    info() {},
    warn(o, msg) {
      warnings.push({ msg: msg ?? '', err: (o as { err?: unknown } | undefined)?.err });
    },
    error() {},
    child: () => logger,
  };
  return logger;
}

describe('connections', () => {
  it('pgDsnDirect: the worker connects with it, not with pgDsn', async () => {
    const ran = actor({ name: 'w_direct', queue: 'w_direct' }, async () => 'ok');
    // Nothing listens on port 1: a worker that used pgDsn could not start.
    const worker = await startTestWorker([ran], db.schema, {
      queues: ['w_direct'],
      pgDsn: 'postgres://nobody@127.0.0.1:1/none',
      pgDsnDirect: TEST_DSN,
    });
    try {
      const h = await tq.enqueue(ran, {});
      expect(await h.wait({ timeout: '10s' })).toBe('ok');
    } finally {
      await worker.stop();
    }
  });

  it('dispatcherPoolSize, heartbeatPoolSize and their command timeouts size and bound the pools', async () => {
    const { settings } = loadWorkerSettings({
      overrides: {
        pgDsn: TEST_DSN,
        schema: db.schema,
        dispatcherPoolSize: 2,
        dispatcherCommandTimeout: '3s',
        heartbeatPoolSize: 1,
        heartbeatCommandTimeout: '1500ms',
      },
    });
    const backend = openWorkerBackend({
      dsn: TEST_DSN,
      settings,
      claimConnections: 1,
      settleConnections: 1,
    }) as PostgresBackend;
    // The heartbeat pool is private to the backend: reached here only to look at its connections.
    const heartbeatDriver = (backend as unknown as { heartbeatDriver: Driver }).heartbeatDriver;
    try {
      const timeout = async (driver: Driver) =>
        ((await driver.query('SHOW statement_timeout')).rows[0] as { statement_timeout: string })
          .statement_timeout;
      expect(await timeout(backend.driver)).toBe('3s');
      expect(await timeout(heartbeatDriver)).toBe('1500ms');

      // Five statements at once on each pool: at most the pool's size run at the same time.
      const sleep = `SELECT pg_sleep(0.2) /* ${db.schema} */`;
      const peak = async (driver: Driver, name: string): Promise<number> => {
        let max = 0;
        const sample = async () => {
          // Only this test's statements: other tests' workers use the same application names.
          const r = await q(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE application_name = $1 AND state = 'active' AND query = $2`,
            [name, sleep],
          );
          max = Math.max(max, (r.rows[0] as { n: number }).n);
        };
        const sleeps = Array.from({ length: 5 }, () => driver.query(sleep));
        const sampling = (async () => {
          let done = false;
          void Promise.all(sleeps).then(() => (done = true));
          while (!done) await sample();
        })();
        await Promise.all([...sleeps, sampling]);
        return max;
      };
      const dispatcherPeak = await peak(backend.driver, 'taskq-worker');
      expect(dispatcherPeak).toBeGreaterThanOrEqual(1);
      expect(dispatcherPeak).toBeLessThanOrEqual(2);
      expect(await peak(heartbeatDriver, 'taskq-heartbeat')).toBe(1);
    } finally {
      await backend.close();
    }
  });

  it('notifyListenerSetupTimeout bounds a LISTEN setup that never finishes; the worker polls instead', async () => {
    const backend = new PostgresBackend(db.driver, { schema: db.schema });
    // A LISTEN handshake that stalls (a half-open connection): subscribe never settles.
    const stalled = new Proxy(backend, {
      get(target, prop, receiver) {
        if (prop === 'subscribe') return () => new Promise(() => undefined);
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as Backend;
    const logger = recordingLogger();
    const ran = actor({ name: 'w_listen', queue: 'w_listen' }, async () => 'polled');
    const worker = await startTestWorker(
      [ran],
      db.schema,
      { queues: ['w_listen'], notifyListenerSetupTimeout: '150ms', pollInterval: '100ms' },
      { backend: stalled, logger },
    );
    try {
      const unavailable = logger.warnings.find((w) => w.msg === 'notify-unavailable-polling');
      expect((unavailable?.err as Error | undefined)?.message).toBe(
        'LISTEN setup did not finish within 150 ms',
      );
      const h = await tq.enqueue(ran, {});
      expect(await h.wait({ timeout: '10s' })).toBe('polled');
    } finally {
      await worker.stop();
    }
  });
});

describe('what the worker stores and claims', () => {
  it('exceptionMessageMaxChars truncates the stored message; exceptionRedactionEnabled false keeps DETAIL lines', async () => {
    const long = actor({ name: 'w_long', queue: 'w_err', retry: { maxAttempts: 1 } }, async () => {
      throw new Error('x'.repeat(500));
    });
    const detail = actor({ name: 'w_detail', queue: 'w_err', retry: { maxAttempts: 1 } }, async () => {
      throw new Error('duplicate key\nDETAIL: Key (email)=(someone@example.com) already exists.');
    });
    const worker = await startTestWorker([long, detail], db.schema, {
      queues: ['w_err'],
      exceptionMessageMaxChars: 100,
      exceptionRedactionEnabled: false,
    });
    try {
      const a = await tq.enqueue(long, {});
      const b = await tq.enqueue(detail, {});
      await a.wait({ timeout: '10s' }).catch(() => undefined);
      await b.wait({ timeout: '10s' }).catch(() => undefined);
      // The defaults (2000 characters, redaction on) would keep all 500 and drop the DETAIL line.
      expect((await tq.getRow(a.jobId))?.errorMessage).toBe(`${'x'.repeat(100)}… (400 more characters)`);
      expect((await tq.getRow(b.jobId))?.errorMessage).toContain(
        'DETAIL: Key (email)=(someone@example.com) already exists.',
      );
    } finally {
      await worker.stop();
    }
  });

  it('progressDataMaxBytes: 2 KiB of progress data is refused at a 1 KiB cap (the default allows 16 KiB)', async () => {
    let refused: unknown = null;
    const reporting = actor({ name: 'w_progress', queue: 'w_progress' }, async (_p, ctx) => {
      await ctx.progress({ data: { small: 'x'.repeat(100) } });
      try {
        await ctx.progress({ data: { big: 'x'.repeat(2048) } });
      } catch (err) {
        refused = err;
      }
      return 'done';
    });
    const worker = await startTestWorker([reporting], db.schema, {
      queues: ['w_progress'],
      progressDataMaxBytes: 1024,
    });
    try {
      const h = await tq.enqueue(reporting, {});
      expect(await h.wait({ timeout: '10s' })).toBe('done');
      expect(refused).toBeInstanceOf(ProgressTooLarge);
      expect(refused).toMatchObject({ limit: 1024 });
    } finally {
      await worker.stop();
    }
  });

  it('dispatchOversample: every dispatch request the worker makes carries it', async () => {
    const backend = new PostgresBackend(db.driver, { schema: db.schema });
    const seen: number[] = [];
    const recording = new Proxy(backend, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop === 'dispatchBatch' || prop === 'warmUp')
          return (req: DispatchRequest) => {
            seen.push(req.oversample);
            return (value as (r: DispatchRequest) => unknown).call(target, req);
          };
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as Backend;
    const ran = actor({ name: 'w_oversample', queue: 'w_oversample' }, async () => 'ok');
    const worker = await startTestWorker(
      [ran],
      db.schema,
      { queues: ['w_oversample'], dispatchOversample: 7 },
      { backend: recording },
    );
    try {
      const h = await tq.enqueue(ran, {});
      expect(await h.wait({ timeout: '10s' })).toBe('ok');
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set([7]));
    } finally {
      await worker.stop();
    }
  });
});

describe('maintenance', () => {
  const identity = { workerId: '018f0000-0000-7000-8000-0000000000d1', hostname: 'test' };
  const fatal = () => {
    throw new Error('fatal');
  };
  const leaderWith = (overrides: WorkerSettingsInput, logger: Logger = recordingLogger()) =>
    new MaintenanceLeader(
      new PostgresBackend(db.driver, { schema: db.schema }),
      loadWorkerSettings({ overrides: { schema: db.schema, ...overrides } }).settings,
      identity,
      logger,
      fatal,
    );

  it('pruneScheduleUtc / pruneCronExpr and archiveExpiryScheduleUtc / archiveExpiryCronExpr set the next runs', () => {
    const daily = leaderWith({ pruneScheduleUtc: '06:30', archiveExpiryScheduleUtc: '07:45' });
    expect(daily.prune.nextRunAt.toISOString().slice(11, 16)).toBe('06:30');
    expect(daily.archiveExpiry.nextRunAt.toISOString().slice(11, 16)).toBe('07:45');
    // Cron wins over the daily time: minute 17 and 41 of some hour, never 03:00 / 04:00.
    const cron = leaderWith({
      pruneScheduleUtc: '06:30',
      pruneCronExpr: '17 * * * *',
      archiveExpiryCronExpr: '41 * * * *',
    });
    expect(cron.prune.nextRunAt.getUTCMinutes()).toBe(17);
    expect(cron.archiveExpiry.nextRunAt.getUTCMinutes()).toBe(41);
    expect(cron.prune.nextRunAt.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);
  });

  it('pruneRetentionCancelled and pruneRetentionAbandoned decide which terminal jobs the prune archives', async () => {
    const insert = (status: string, finishedAgo: string) =>
      q(
        `INSERT INTO $S.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at, finished_at, attempt)
         VALUES (gen_random_uuid(), 'w_retention', 'w_retention', '{}', $1, 1, 'transient', now(), now() - $2::interval, 1)`,
        [status, finishedAgo],
      );
    await insert('cancelled', '1 minute');
    await insert('abandoned', '1 minute');
    await insert('abandoned', '0 seconds');
    // The defaults (30 d, 90 d) would keep all three.
    const leader = leaderWith({ pruneRetentionCancelled: 0, pruneRetentionAbandoned: '30s' });
    try {
      expect(await leader.elector.runOnce()).toBe(true);
      await leader.prune.runNow();
      const left = await q(
        `SELECT status::text FROM $S.jobs WHERE actor = 'w_retention' ORDER BY status::text`,
      );
      expect(left.rows).toEqual([{ status: 'abandoned' }]);
      const archived = await q(
        `SELECT status::text FROM $S.jobs_archive WHERE actor = 'w_retention' ORDER BY status::text`,
      );
      expect(archived.rows).toEqual([{ status: 'abandoned' }, { status: 'cancelled' }]);
    } finally {
      await leader.elector.stop();
    }
  });

  it('strandedJobsInterval sets how often the stranded-jobs check runs', async () => {
    await tq.enqueue(
      actor({ name: 'w_unregistered', queue: 'w_stranded' }, async () => undefined),
      {},
    );
    const logger = recordingLogger();
    // The default (1 min) would warn once in the window below; 1 s warns again and again.
    const leader = leaderWith({ strandedJobsInterval: '1s' }, logger);
    try {
      expect(await leader.elector.runOnce()).toBe(true);
      leader.stranded.start();
      const count = () => logger.warnings.filter((w) => w.msg === 'stranded-jobs-no-actor-config').length;
      await waitFor(() => count() >= 3, 15_000, 'three stranded-jobs checks');
    } finally {
      await leader.stranded.stop();
      await leader.elector.stop();
    }
  });
});
