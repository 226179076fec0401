/**
 * Several worker processes (not objects) against one real Postgres: mutual exclusion, the
 * maxConcurrent bound, identity serialisation, and dispatch order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { batchItem } from '../../src/client/batch-items.js';
import { capped, ordered, record_ } from '../fixtures/fleet-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let db: TestSchema;
let tq: TaskQ;

interface Run {
  job_id: string;
  actor: string;
  identity_key: string | null;
  pid: number;
  started_at: Date;
  finished_at: Date;
}

async function runs(actor: string): Promise<Run[]> {
  return (
    await db.pool.query<Run>(`SELECT * FROM "${db.schema}".test_runs WHERE actor = $1 ORDER BY started_at`, [
      actor,
    ])
  ).rows;
}

/** Largest number of intervals overlapping at one instant. */
function maxOverlap(rs: Run[]): number {
  const points = rs.flatMap((r) => [
    { t: r.started_at.getTime(), d: 1 },
    { t: r.finished_at.getTime(), d: -1 },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let cur = 0;
  let max = 0;
  for (const p of points) max = Math.max(max, (cur += p.d));
  return max;
}

async function allDone(n: number): Promise<void> {
  await waitFor(
    async () =>
      (await tq.countActiveJobs(['fleet', 'ordered'])) === 0 &&
      (await tq.list({ active: false, limit: n + 1 })).jobs.length >= n,
    60_000,
    'all jobs to finish',
  );
}

beforeAll(async () => {
  db = await migratedSchema('fleet');
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

async function fleet(n: number, env: Record<string, string>): Promise<WorkerProcess[]> {
  const procs = Array.from({ length: n }, () => startWorkerProcess(db.schema, env));
  await Promise.all(procs.map((p) => p.ready));
  return procs;
}

async function stopAll(procs: WorkerProcess[]): Promise<void> {
  const exits = await Promise.all(procs.map((p) => p.stop()));
  for (const e of exits) expect(e.code).toBe(0);
}

async function reset(): Promise<void> {
  await db.pool.query(
    `TRUNCATE "${db.schema}".jobs, "${db.schema}".test_runs, "${db.schema}".queues CASCADE`,
  );
}

describe('a fleet of worker processes', () => {
  it('runs every job exactly once, never twice at the same time, across three processes', async () => {
    await reset();
    const procs = await fleet(3, { TASKQ_QUEUES: 'fleet', TASKQ_MAX_CONCURRENCY: '4' });
    try {
      const batch = await tq.enqueueBatch(
        Array.from({ length: 300 }, (_, i) => batchItem(record_, { ms: i % 5 })),
      );
      await allDone(300);
      const rs = await runs('record');
      expect(rs).toHaveLength(300);
      expect(new Set(rs.map((r) => r.job_id)).size).toBe(300);
      expect(new Set(rs.map((r) => r.pid)).size).toBeGreaterThanOrEqual(2);
      const statuses = await db.pool.query(
        `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY status`,
      );
      expect(statuses.rows).toEqual([{ status: 'succeeded', n: 300 }]);
      const attempts = await db.pool.query(
        `SELECT count(*)::int AS n FROM "${db.schema}".job_attempts WHERE outcome = 'succeeded'`,
      );
      expect(attempts.rows[0].n).toBe(300);
      expect(batch.size).toBe(300);
    } finally {
      await stopAll(procs);
    }
  });

  it('keeps maxConcurrent within the documented (producers - 1) x maxConcurrent overshoot', async () => {
    await reset();
    const procs = await fleet(3, { TASKQ_QUEUES: 'fleet', TASKQ_MAX_CONCURRENCY: '8' });
    try {
      await tq.enqueueBatch(Array.from({ length: 40 }, () => batchItem(capped, { ms: 60 })));
      await allDone(40);
      const observed = maxOverlap(await runs('capped'));
      const bound = 2 + (3 - 1) * 2;
      console.log(`maxConcurrent 2 over 3 producers: observed peak ${observed} (bound ${bound})`);
      expect(observed).toBeGreaterThanOrEqual(1);
      expect(observed).toBeLessThanOrEqual(bound);
    } finally {
      await stopAll(procs);
    }
  });

  it('never overlaps two jobs of one identity key', async () => {
    await reset();
    const procs = await fleet(3, { TASKQ_QUEUES: 'fleet', TASKQ_MAX_CONCURRENCY: '6' });
    try {
      await tq.enqueueBatch(
        Array.from({ length: 45 }, (_, i) =>
          batchItem(record_, { ms: 25, identity: `k${i % 3}` }, { identityKey: `k${i % 3}` }),
        ),
      );
      await allDone(45);
      const rs = await runs('record');
      expect(rs).toHaveLength(45);
      for (const key of ['k0', 'k1', 'k2'])
        expect(maxOverlap(rs.filter((r) => r.identity_key === key))).toBe(1);
    } finally {
      await stopAll(procs);
    }
  });

  it('orders strict FIFO queues by priority, then time, then id', async () => {
    await reset();
    const items = [0, 1, 2, 3, 4, 5].map((i) =>
      batchItem(ordered, { ms: 0, identity: `p${i}` }, { priority: i % 3 }),
    );
    const batch = await tq.enqueueBatch(items);
    const expected = batch.jobHandles
      .map((h) => h.row)
      .sort(
        (a, b) =>
          b.priority - a.priority ||
          a.scheduledAt.getTime() - b.scheduledAt.getTime() ||
          (a.id < b.id ? -1 : 1),
      )
      .map((r) => r.id);
    const procs = await fleet(1, {
      TASKQ_QUEUES: 'ordered',
      TASKQ_MAX_CONCURRENCY: '1',
      TASKQ_PREFETCH: '0',
    });
    try {
      await allDone(6);
      expect((await runs('ordered')).map((r) => r.job_id)).toEqual(expected);
    } finally {
      await stopAll(procs);
    }
  });

  it('interleaves fairness keys on a round-robin queue', async () => {
    await reset();
    await db.pool.query(`INSERT INTO "${db.schema}".queues (name, mode) VALUES ('ordered', 'round_robin')`);
    await tq.enqueueBatch(
      Array.from({ length: 8 }, (_, i) =>
        batchItem(ordered, { ms: 0, identity: `big-${i}` }, { fairnessKey: 'big' }),
      ),
    );
    await tq.enqueueBatch(
      Array.from({ length: 2 }, (_, i) =>
        batchItem(ordered, { ms: 0, identity: `small-${i}` }, { fairnessKey: 'small' }),
      ),
    );
    // Fairness is decided per claim: one claim of four takes the first two jobs of each key.
    const procs = await fleet(1, {
      TASKQ_QUEUES: 'ordered',
      TASKQ_MAX_CONCURRENCY: '4',
      TASKQ_PREFETCH: '0',
    });
    try {
      await allDone(10);
      const firstClaim = await db.pool.query<{ identity_key: string }>(
        `SELECT r.identity_key FROM "${db.schema}".test_runs r JOIN "${db.schema}".jobs j ON j.id = r.job_id
         ORDER BY j.started_at, r.started_at LIMIT 4`,
      );
      // Strict FIFO would claim four "big" jobs; round-robin takes both "small" ones in the first claim.
      expect(firstClaim.rows.map((r) => r.identity_key.split('-')[0]).sort()).toEqual([
        'big',
        'big',
        'small',
        'small',
      ]);
    } finally {
      await stopAll(procs);
    }
  });
});
