/**
 * A keyed rate limit across a fleet: two worker processes share a per-tenant Redis token bucket
 * (`keyedRateLimit`, capacity 2, refill 2/s per tenant). A hot tenant is throttled to its own
 * bucket while other tenants run at once. Admissions are checked afterwards per tenant, at the
 * instants Redis made them (`watchAdmissions`).
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import { KEYED_FLEET_BUCKET, keyedFleetBaseName, perTenantBucketed } from '../fixtures/ratelimit-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { expectWithinBucket, watchAdmissions } from '../helpers/redis-admissions.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';
import { TEST_REDIS_URL } from '../ratelimit/helpers.js';

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('rlkfleet');
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  await db.pool.query(
    `CREATE TABLE "${db.schema}".rl_active (job_id uuid PRIMARY KEY, actor text, tenant text)`,
  );
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

describe('a keyed Redis rate limit across two worker processes', () => {
  it('holds per key, while other keys proceed', async () => {
    const runId = randomBytes(4).toString('hex');
    const procs: WorkerProcess[] = Array.from({ length: 2 }, () =>
      startWorkerProcess(db.schema, {
        TASKQ_QUEUES: 'rl_keyed',
        TASKQ_MAX_CONCURRENCY: '6',
        TASKQ_REDIS_URL: TEST_REDIS_URL,
        TQ_FIXTURE_ACTORS: 'ratelimit',
        TQ_FIXTURE_RUN: runId,
      }),
    );
    const watch = await watchAdmissions(keyedFleetBaseName(runId));
    try {
      await Promise.all(procs.map((p) => p.ready));
      const hot = 14;
      const cold = ['cold-a', 'cold-b', 'cold-c'];
      const perCold = 3;
      const batch = await tq.enqueueBatch([
        ...Array.from({ length: hot }, () => batchItem(perTenantBucketed, { ms: 5, tenant: 'hot' })),
        ...cold.flatMap((tenant) =>
          Array.from({ length: perCold }, () => batchItem(perTenantBucketed, { ms: 5, tenant })),
        ),
      ]);
      const total = batch.size;
      await waitFor(
        async () => {
          const { rows } = await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status <> 'succeeded'`,
          );
          return rows[0]!.n === 0;
        },
        60_000,
        'every job to succeed',
      );

      const { rows: runs } = await db.pool.query<{
        tenant: string;
        started_at: Date;
        attempt: number;
        pid: number;
      }>(
        `SELECT identity_key AS tenant, started_at, attempt, pid FROM "${db.schema}".test_runs ORDER BY started_at`,
      );
      // Every job ran exactly once; denials gave their attempt back.
      expect(runs).toHaveLength(total);
      expect(runs.every((r) => r.attempt === 1)).toBe(true);
      const byPid = new Map<number, number>();
      for (const r of runs) byPid.set(r.pid, (byPid.get(r.pid) ?? 0) + 1);
      console.log(`runs per worker process: ${[...byPid.values()].join(', ')}`);

      // Redis admitted each job once, per tenant bucket, within the bucket's bound.
      const admissionsOf = (tenant: string): number[] => watch.of(`:${tenant}`);
      expect(admissionsOf('hot')).toHaveLength(hot);
      for (const tenant of cold) expect(admissionsOf(tenant)).toHaveLength(perCold);
      for (const tenant of ['hot', ...cold]) expectWithinBucket(admissionsOf(tenant), KEYED_FLEET_BUCKET);

      // The hot tenant was really throttled: (14 − 2) / 2 = 6 s at least from first to last admission.
      const hotAdmissions = admissionsOf('hot');
      const hotSpan = (hotAdmissions.at(-1)! - hotAdmissions[0]!) / 1e6;
      console.log(`hot tenant: ${hot} admissions over ${hotSpan.toFixed(2)} s`);
      expect(hotSpan).toBeGreaterThanOrEqual(
        (hot - KEYED_FLEET_BUCKET.capacity) / KEYED_FLEET_BUCKET.refillPerSecond - 1e-6,
      );
      // Other tenants were not held behind it: each was admitted in full before the hot tenant's last.
      for (const tenant of cold)
        expect(Math.max(...admissionsOf(tenant))).toBeLessThan(hotAdmissions.at(-1)!);

      // The hot tenant's denials are on record as rate-limit denials.
      const { rows: outcomes } = await db.pool.query<{ outcome: string; n: number }>(
        `SELECT outcome, count(*)::int AS n FROM "${db.schema}".job_attempts GROUP BY outcome`,
      );
      const byOutcome = Object.fromEntries(outcomes.map((o) => [o.outcome, o.n]));
      expect(byOutcome.rate_limit_denied).toBeGreaterThan(0);
      expect(byOutcome.succeeded).toBe(total);

      // The keyed buckets were materialised per tenant (and published for the admin UI).
      const { rows: buckets } = await db.pool.query<{ bucket_name: string }>(
        `SELECT bucket_name FROM "${db.schema}".rate_limit_buckets WHERE keyed AND backend = 'redis' ORDER BY 1`,
      );
      expect(buckets.map((b) => b.bucket_name)).toEqual(
        ['hot', ...cold].map((t) => `${keyedFleetBaseName(runId)}:${t}`).sort(),
      );
    } finally {
      watch.stop();
      const exits = await Promise.all(procs.map((p) => p.stop()));
      for (const e of exits) expect(e.code).toBe(0);
    }
  });
});
