/**
 * The leader's loops driven through runOnce() with tiny intervals: no sleeps, real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Logger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { MaintenanceLeader } from '../../src/worker/maintenance/maintenance-leader.js';
import { nextRunAfter } from '../../src/worker/maintenance/retention-scheduler.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
let tq: TaskQ;
let backend: PostgresBackend;
let leader: MaintenanceLeader;
const warnings: string[] = [];
const recording: Logger = {
  debug() {},
  info() {},
  warn(_o, msg) {
    warnings.push(msg ?? '');
  },
  error() {},
  child: () => recording,
};

const budgeted = actor({ name: 'm_budget', retry: { timeBudget: '1s' } }, async () => undefined);
const later = actor({ name: 'm_later' }, async () => undefined);

beforeAll(async () => {
  db = await migratedSchema('mloop');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  backend = new PostgresBackend(db.driver, { schema: db.schema });
  const { settings } = loadWorkerSettings({
    overrides: {
      schema: db.schema,
      pruneBatchSize: 5000,
      pruneRetentionSucceeded: 0,
      pruneRetentionFailed: '1d',
      archiveRetentionPeriod: 0,
    },
  });
  leader = new MaintenanceLeader(
    backend,
    settings,
    { workerId: '018f0000-0000-7000-8000-0000000000c1', hostname: 'test' },
    recording,
    () => {
      throw new Error('fatal');
    },
  );
  expect(await leader.elector.runOnce()).toBe(true);
});
afterAll(async () => {
  await leader.elector.stop();
  await tq.close();
  await db.drop();
});

const q = (sql: string, v: unknown[] = []) => db.pool.query(sql.replaceAll('$S', `"${db.schema}"`), v);

describe('maintenance loops (runOnce)', () => {
  it('writes the maintenance_leader row while leading', async () => {
    const row = await q(`SELECT worker_id, hostname FROM $S.maintenance_leader`);
    expect(row.rows).toEqual([{ worker_id: '018f0000-0000-7000-8000-0000000000c1', hostname: 'test' }]);
  });

  it('Sweep 3 promotes due scheduled jobs; Sweep 2 fails jobs past their deadline', async () => {
    // Far enough ahead that a slow machine cannot make it due before the first sweep.
    const a = await tq.enqueue(later, {}, { delay: '5s' });
    const b = await tq.enqueue(budgeted, {}, { delay: '10m' });
    expect((await leader.promoter.runOnce()).promoted).toBe(0);
    await q(
      `UPDATE $S.jobs SET scheduled_at = scheduled_at - interval '6 seconds', schedule_to_close = schedule_to_close - interval '2 seconds'`,
    );
    expect((await leader.promoter.runOnce()).promoted).toBe(1);
    expect((await tq.getRow(a.jobId))?.status).toBe('pending');
    const report = await leader.sweeps.runOnce();
    expect(report.deadlineFailed).toBe(1);
    expect(await tq.getRow(b.jobId)).toMatchObject({ status: 'failed', errorClass: 'DeadlineExceeded' });
  });

  it('warns about stranded jobs of unregistered actors', async () => {
    warnings.length = 0;
    const stranded = await leader.stranded.runOnce();
    expect(stranded.map((s) => s.actor)).toContain('m_later');
    expect(warnings).toContain('stranded-jobs-no-actor-config');
  });

  it('prunes 60,000 terminal jobs to the archive in bounded batches, then expires the archive', async () => {
    await q(
      `INSERT INTO $S.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at, finished_at, attempt)
       SELECT gen_random_uuid(), 'bulk', 'bulk', '{}', 'succeeded', 1, 'transient', now(), now() - interval '1 minute', 1
       FROM generate_series(1, 60000)`,
    );
    await q(
      `INSERT INTO $S.job_attempts (job_id, attempt, outcome) SELECT id, 1, 'succeeded' FROM $S.jobs WHERE actor = 'bulk' LIMIT 1000`,
    );
    await q(
      `INSERT INTO $S.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at, finished_at)
       SELECT gen_random_uuid(), 'bulk', 'bulk', '{}', 'failed', 1, 'transient', now(), now() - interval '1 minute'
       FROM generate_series(1, 10)`,
    );
    const result = await leader.prune.runNow();
    expect(result).toEqual({ archived: 60_000, attempts: 1000, batches: 13, batchRowsDeleted: 0 });
    expect((await q(`SELECT count(*)::int AS n FROM $S.jobs WHERE actor = 'bulk'`)).rows[0].n).toBe(10);
    expect((await q(`SELECT count(*)::int AS n FROM $S.jobs_archive`)).rows[0].n).toBe(60_000);
    expect((await q(`SELECT count(*)::int AS n FROM $S.job_attempts_archive`)).rows[0].n).toBe(1000);
    await q(`UPDATE $S.jobs_archive SET expire_at = expire_at - interval '1 second'`);
    const expired = await leader.archiveExpiry.runNow();
    expect(expired).toEqual({ deleted: 60_000, batches: 13 });
    expect((await q(`SELECT count(*)::int AS n FROM $S.job_attempts_archive`)).rows[0].n).toBe(0);
  }, 120_000);

  it('schedules the daily runs from HH:MM or a cron expression (UTC)', () => {
    const from = new Date('2026-03-01T05:00:00Z');
    expect(nextRunAfter({ cronExpr: null, dailyUtc: '03:00' }, from).toISOString()).toBe(
      '2026-03-02T03:00:00.000Z',
    );
    expect(nextRunAfter({ cronExpr: null, dailyUtc: '06:30' }, from).toISOString()).toBe(
      '2026-03-01T06:30:00.000Z',
    );
    expect(nextRunAfter({ cronExpr: '15 */6 * * *', dailyUtc: '03:00' }, from).toISOString()).toBe(
      '2026-03-01T06:15:00.000Z',
    );
    expect(leader.prune.nextRunAt.getTime()).toBeGreaterThan(Date.now());
  });
});
