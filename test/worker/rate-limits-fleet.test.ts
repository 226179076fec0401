/**
 * Rate limits across a fleet: three worker processes against real Redis and Postgres, sharing a
 * Redis token bucket, a Postgres reservation, a keyed reservation and a queue cap. Running handlers
 * are sampled from the database (`waitFor` polls: at most 50 ms apart) until every job is done;
 * token-bucket admissions are checked afterwards at the instants Redis made them.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import {
  FLEET_BUCKET,
  FLEET_SLOTS,
  bucketed,
  fleetNames,
  perTenant,
  queueCapped,
  reserved,
} from '../fixtures/ratelimit-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { expectWithinBucket, watchAdmissions } from '../helpers/redis-admissions.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';
import { TEST_REDIS_URL } from '../ratelimit/helpers.js';

let db: TestSchema;
let tq: TaskQ;
const QUEUE_CAP = 2;

beforeAll(async () => {
  db = await migratedSchema('rlfleet');
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  await db.pool.query(
    `CREATE TABLE "${db.schema}".rl_active (job_id uuid PRIMARY KEY, actor text, tenant text)`,
  );
  await new PostgresBackend(db.driver, { schema: db.schema }).setQueueMaxConcurrent('rl_capped', QUEUE_CAP);
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

interface Sample {
  actor: string;
  tenant: string;
  n: number;
}

describe('rate limits across three worker processes', () => {
  it('hold fleet-wide: token bucket, reservation, keyed reservation and queue cap', async () => {
    const runId = randomBytes(4).toString('hex');
    const procs: WorkerProcess[] = Array.from({ length: 3 }, () =>
      startWorkerProcess(db.schema, {
        TASKQ_QUEUES: 'rl,rl_capped',
        TASKQ_MAX_CONCURRENCY: '6',
        TASKQ_REDIS_URL: TEST_REDIS_URL,
        TQ_FIXTURE_ACTORS: 'ratelimit',
        TQ_FIXTURE_RUN: runId,
      }),
    );
    const watch = await watchAdmissions(fleetNames(runId).bucket);
    try {
      await Promise.all(procs.map((p) => p.ready));
      const batches = [
        await tq.enqueueBatch(
          Array.from({ length: 24 }, () => batchItem(bucketed, { ms: 5, tenant: 'none' })),
        ),
        await tq.enqueueBatch(
          Array.from({ length: 12 }, () => batchItem(reserved, { ms: 150, tenant: 'none' })),
        ),
        await tq.enqueueBatch(
          Array.from({ length: 12 }, (_, i) => batchItem(perTenant, { ms: 150, tenant: `t${i % 3}` })),
        ),
        await tq.enqueueBatch(
          Array.from({ length: 10 }, () => batchItem(queueCapped, { ms: 150, tenant: 'none' })),
        ),
      ];
      const total = batches.reduce((n, b) => n + b.size, 0);

      // Sample the running handlers until every job is done.
      const peaks = new Map<string, number>();
      let tenantsAtOnce = 0;
      await waitFor(
        async () => {
          const { rows } = await db.pool.query<Sample>(
            `SELECT actor, tenant, count(*)::int AS n FROM "${db.schema}".rl_active GROUP BY actor, tenant`,
          );
          const byActor = new Map<string, number>();
          for (const r of rows) {
            byActor.set(r.actor, (byActor.get(r.actor) ?? 0) + r.n);
            if (r.actor === 'rl_per_tenant')
              peaks.set(`tenant:${r.tenant}`, Math.max(peaks.get(`tenant:${r.tenant}`) ?? 0, r.n));
          }
          for (const [a, n] of byActor) peaks.set(a, Math.max(peaks.get(a) ?? 0, n));
          tenantsAtOnce = Math.max(tenantsAtOnce, rows.filter((r) => r.actor === 'rl_per_tenant').length);
          const { rows: left } = await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status <> 'succeeded'`,
          );
          return left[0]!.n === 0;
        },
        60_000,
        'every job to succeed',
      );

      // A reservation of N slots never had more than N handlers running; the queue cap held.
      expect(peaks.get('rl_reserved')).toBeLessThanOrEqual(FLEET_SLOTS);
      expect(peaks.get('rl_reserved')).toBeGreaterThanOrEqual(2); // the slots were really shared
      expect(peaks.get('rl_queue_capped')).toBeGreaterThanOrEqual(2);
      expect(peaks.get('rl_queue_capped')).toBeLessThanOrEqual(QUEUE_CAP);
      // Keyed: one per tenant at a time, while other tenants proceed.
      for (const t of ['t0', 't1', 't2']) expect(peaks.get(`tenant:${t}`)).toBe(1);
      expect(tenantsAtOnce).toBeGreaterThan(1);

      // Every job ran exactly once, and denials gave their attempt back.
      const { rows: runs } = await db.pool.query<{ actor: string; started_at: Date; attempt: number }>(
        `SELECT actor, started_at, attempt FROM "${db.schema}".test_runs ORDER BY started_at`,
      );
      expect(runs).toHaveLength(total);
      expect(runs.every((r) => r.attempt === 1)).toBe(true);

      // Token bucket: admitted once per job, within the bucket's bound, at the instants Redis made
      // the admissions; and the run took as long as the bucket demands (24 jobs: (24 − 4) / 4 = 5 s).
      const admissions = watch.of(`:${fleetNames(runId).bucket}`);
      expect(admissions).toHaveLength(batches[0]!.size);
      expectWithinBucket(admissions, FLEET_BUCKET);
      expect((admissions.at(-1)! - admissions[0]!) / 1e6).toBeGreaterThanOrEqual(
        (admissions.length - FLEET_BUCKET.capacity) / FLEET_BUCKET.refillPerSecond - 1e-6,
      );

      // The denials are on record, with their outcomes.
      const { rows: outcomes } = await db.pool.query<{ outcome: string; n: number }>(
        `SELECT outcome, count(*)::int AS n FROM "${db.schema}".job_attempts GROUP BY outcome`,
      );
      const byOutcome = Object.fromEntries(outcomes.map((o) => [o.outcome, o.n]));
      expect(byOutcome.rate_limit_denied).toBeGreaterThan(0);
      expect(byOutcome.reservation_denied).toBeGreaterThan(0);
      expect(byOutcome.succeeded).toBe(total);
    } finally {
      watch.stop();
      const exits = await Promise.all(procs.map((p) => p.stop()));
      for (const e of exits) expect(e.code).toBe(0);
    }
  });
});
