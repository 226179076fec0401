/**
 * The two claim statements behind `dispatchBatch` (src/backend/postgres/pg-dispatch.ts): the lean
 * one claims the common case itself and hands over to the full one, claiming nothing, when a stored
 * concurrency limit, a round-robin queue, a pending job with a fairness key or an identity key at
 * the head of the queue needs it.
 * Either way the claim's result is the full statement's. A lean claim that comes back short says so
 * (`onDrained`): it took everything claimable, so freed slots need not claim again.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { DispatchRequest } from '../../src/backend/worker-types.js';
import { TaskQ } from '../../src/client/taskq.js';
import { batchItem } from '../../src/client/batch-items.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import { PINNED_PLAN_SESSION_SETTINGS } from '../../src/db/session-settings.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

const alpha = actor({ name: 'alpha', queue: 'q1' }, async () => undefined);
const beta = actor({ name: 'beta', queue: 'q2' }, async () => undefined);

let db: TestSchema;
let backend: PostgresBackend;
let client: TaskQ;

const request = (over: Partial<DispatchRequest> = {}): DispatchRequest => ({
  workerId: '0192f1a0-0000-7000-8000-0000000000aa',
  queues: ['q1', 'q2'],
  actors: [
    { name: 'alpha', maxConcurrent: null },
    { name: 'beta', maxConcurrent: null },
  ],
  limit: 10,
  leaseMs: 60_000,
  oversample: 2,
  ...over,
});

beforeAll(async () => {
  db = await migratedSchema('lean');
  backend = new PostgresBackend(db.driver, { schema: db.schema });
  client = new TaskQ(backend, { capacityCacheTtl: 0 });
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query(`TRUNCATE "${db.schema}".jobs, "${db.schema}".actor_config, "${db.schema}".queues`);
  backend.dispatcher.leanPauseMs = 0;
  backend.dispatcher.handovers = 0;
});

describe('lean claims', () => {
  it('claim plain jobs across queues and actors in priority, then time order, with their events', async () => {
    const a1 = await client.enqueue(alpha, {});
    const b1 = await client.enqueue(beta, {}, { priority: 5 });
    const a2 = await client.enqueue(alpha, {}, { queue: 'q2' });
    await client.enqueue(alpha, {}, { delay: '1h' });
    await client.enqueue(alpha, {}, { queue: 'q3' });
    const rows = await backend.dispatchBatch(request());
    expect(rows.map((r) => r.id)).toEqual([b1.jobId, a1.jobId, a2.jobId]);
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    const stored = await Promise.all(rows.map((r) => backend.get(r.id)));
    expect(stored.every((r) => r!.status === 'running' && r!.lockedByWorker === request().workerId)).toBe(
      true,
    );
    expect(backend.dispatcher.handovers).toBe(0);
    const events = await db.pool.query(
      `SELECT job_id FROM "${db.schema}".job_events WHERE detail->>'reason' = 'dispatched'`,
    );
    expect(events.rowCount).toBe(3);
  });

  it('claim at most the limit, and nothing when nothing is due', async () => {
    for (let i = 0; i < 5; i++) await client.enqueue(alpha, {});
    expect(await backend.dispatchBatch(request({ limit: 3 }))).toHaveLength(3);
    expect(await backend.dispatchBatch(request())).toHaveLength(2);
    expect(await backend.dispatchBatch(request())).toEqual([]);
    expect(backend.dispatcher.handovers).toBe(0);
  });

  it('with several queues and actors, claim the best jobs of all of them up to the limit', async () => {
    const a1 = await client.enqueue(alpha, {});
    await client.enqueue(alpha, {});
    const b1 = await client.enqueue(beta, {}, { priority: 3 });
    await client.enqueue(beta, {});
    const rows = await backend.dispatchBatch(request({ limit: 2 }));
    expect(rows.map((r) => r.id)).toEqual([b1.jobId, a1.jobId]);
    // The rows locked but not claimed are free again for the next claim.
    expect(await backend.dispatchBatch(request())).toHaveLength(2);
  });

  it('skip rows another claim holds locked', async () => {
    const first = await client.enqueue(alpha, {});
    const second = await client.enqueue(alpha, {});
    const conn = await db.pool.connect();
    try {
      await conn.query('BEGIN');
      await conn.query(`SELECT 1 FROM "${db.schema}".jobs WHERE id = $1 FOR UPDATE`, [first.jobId]);
      const rows = await backend.dispatchBatch(request());
      expect(rows.map((r) => r.id)).toEqual([second.jobId]);
    } finally {
      await conn.query('ROLLBACK');
      conn.release();
    }
  });
});

describe('drained claims (onDrained)', () => {
  /** Runs one claim and says whether it reported that nothing else was claimable. */
  async function claimAndReport(over: Partial<DispatchRequest> = {}) {
    let drained = false;
    const rows = await backend.dispatchBatch(
      request({
        ...over,
        onDrained: () => {
          drained = true;
        },
      }),
    );
    return { rows, drained };
  }

  it('a lean claim that comes back short took everything claimable, and says so', async () => {
    for (let i = 0; i < 3; i++) await client.enqueue(alpha, {});
    await client.enqueue(alpha, {}, { delay: '1h' });
    const short = await claimAndReport({ limit: 10 });
    expect(short.rows).toHaveLength(3);
    expect(short.drained).toBe(true);
    expect((await claimAndReport()).drained).toBe(true); // nothing at all: drained too
  });

  it('a full claim does not: more may be waiting', async () => {
    for (let i = 0; i < 3; i++) await client.enqueue(alpha, {});
    const full = await claimAndReport({ limit: 3 });
    expect(full.rows).toHaveLength(3);
    expect(full.drained).toBe(false);
  });

  it('a claim the full statement made does not, however short: a rule may have held a job back', async () => {
    await client.enqueue(alpha, {}, { identityKey: 'k' });
    await client.enqueue(alpha, {}, { identityKey: 'k' });
    const keyed = await claimAndReport();
    expect(keyed.rows).toHaveLength(1); // the second waits for the first: the key is running
    expect(keyed.drained).toBe(false);
    await db.pool.query(`TRUNCATE "${db.schema}".jobs`);
    for (let i = 0; i < 3; i++) await client.enqueue(alpha, {});
    const capped = await claimAndReport({ actors: [{ name: 'alpha', maxConcurrent: 2 }] });
    expect(capped.rows).toHaveLength(2);
    expect(capped.drained).toBe(false);
  });
});

describe('hand-over to the full claim', () => {
  it('a stored maxConcurrent is obeyed', async () => {
    await db.pool.query(
      `INSERT INTO "${db.schema}".actor_config (actor, queue, max_concurrent) VALUES ('alpha', 'q1', 1)`,
    );
    for (let i = 0; i < 3; i++) await client.enqueue(alpha, {});
    expect(await backend.dispatchBatch(request())).toHaveLength(1);
    expect(backend.dispatcher.handovers).toBe(1);
  });

  it('a round-robin queue interleaves its fairness keys', async () => {
    await db.pool.query(`INSERT INTO "${db.schema}".queues (name, mode) VALUES ('q1', 'round_robin')`);
    for (let i = 0; i < 4; i++) await client.enqueue(alpha, {}, { fairnessKey: 'big' });
    const small = await client.enqueue(alpha, {}, { fairnessKey: 'small' });
    const rows = await backend.dispatchBatch(request({ limit: 2 }));
    expect(rows.map((r) => r.id)).toContain(small.jobId);
    expect(backend.dispatcher.handovers).toBe(1);
  });

  it('identity keys: one running job per key', async () => {
    await client.enqueue(alpha, {}, { identityKey: 'k' });
    await client.enqueue(alpha, {}, { identityKey: 'k' });
    const other = await client.enqueue(alpha, {});
    const rows = await backend.dispatchBatch(request());
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.id)).toContain(other.jobId);
    expect(backend.dispatcher.handovers).toBe(1);
  });

  it('a strict FIFO queue holding jobs with a fairness key: one order across keyed and key-less jobs', async () => {
    // Keyed and key-less pending jobs sit in different indexes; the full claim merges their heads.
    const k1 = await client.enqueue(alpha, {}, { fairnessKey: 'tenant-a' });
    const n1 = await client.enqueue(alpha, {});
    const k2 = await client.enqueue(alpha, {}, { fairnessKey: 'tenant-b', priority: 2 });
    const n2 = await client.enqueue(alpha, {}, { priority: 1 });
    const k3 = await client.enqueue(alpha, {}, { fairnessKey: 'tenant-a' });
    const rows = await backend.dispatchBatch(request({ limit: 4 }));
    expect(rows.map((r) => r.id)).toEqual([k2.jobId, n2.jobId, k1.jobId, n1.jobId]);
    expect(backend.dispatcher.handovers).toBe(1);
    expect((await backend.dispatchBatch(request())).map((r) => r.id)).toEqual([k3.jobId]);
  });

  it('an actor that declares maxConcurrent goes straight to the full claim', async () => {
    for (let i = 0; i < 3; i++) await client.enqueue(alpha, {});
    const rows = await backend.dispatchBatch(request({ actors: [{ name: 'alpha', maxConcurrent: 2 }] }));
    expect(rows).toHaveLength(2);
    expect(backend.dispatcher.handovers).toBe(0);
  });

  it('after a hand-over, claims skip the lean statement for the pause', async () => {
    backend.dispatcher.leanPauseMs = 60_000;
    await client.enqueue(alpha, {}, { identityKey: 'k' });
    expect(await backend.dispatchBatch(request())).toHaveLength(1);
    await client.enqueue(alpha, {}, { identityKey: 'k2' });
    expect(await backend.dispatchBatch(request())).toHaveLength(1);
    expect(backend.dispatcher.handovers).toBe(1);
  });
});

describe('concurrent lean claims', () => {
  it('four claimers on their own connections take every job exactly once', async () => {
    const total = 2_000;
    for (let i = 0; i < total; i += 500)
      await client.enqueueBatch(Array.from({ length: 500 }, () => batchItem(alpha, {})));
    // Each claimer is a worker's claim connection: its own session with the worker's settings.
    const claimers = Array.from({ length: 4 }, (_, k) => {
      const driver = new PgDriver({
        connection: TEST_DSN,
        maxPoolSize: 1,
        sessionSettings: PINNED_PLAN_SESSION_SETTINGS,
      });
      const b = new PostgresBackend(driver, { schema: db.schema });
      return { driver, backend: b, workerId: `0192f1a0-0000-7000-8000-00000000010${k}` };
    });
    try {
      const claimedBy = await Promise.all(
        claimers.map(async (c) => {
          const ids: string[] = [];
          for (;;) {
            const rows = await c.backend.dispatchBatch(request({ workerId: c.workerId, limit: 37 }));
            if (rows.length === 0) break;
            for (const r of rows) {
              expect(r.attempt).toBe(1);
              ids.push(r.id);
            }
          }
          return ids;
        }),
      );
      const all = claimedBy.flat();
      expect(all).toHaveLength(total);
      expect(new Set(all).size).toBe(total);
      // Each job is stored as running under the worker whose claim returned it.
      for (const [k, ids] of claimedBy.entries()) {
        const owned = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${db.schema}".jobs
           WHERE id = ANY ($1::uuid[]) AND status = 'running' AND locked_by_worker = $2`,
          [ids, claimers[k]!.workerId],
        );
        expect(owned.rows[0]!.n).toBe(ids.length);
      }
      const { rows } = await db.pool.query<{ status: string; n: number }>(
        `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY status`,
      );
      expect(rows).toEqual([{ status: 'running', n: total }]);
      const events = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${db.schema}".job_events WHERE detail->>'reason' = 'dispatched'`,
      );
      expect(events.rows[0]!.n).toBe(total);
      expect(claimers.every((c) => c.backend.dispatcher.handovers === 0)).toBe(true);
    } finally {
      await Promise.all(claimers.map((c) => c.driver.close()));
    }
  });
});

describe('warm-up', () => {
  it('opens every claim connection and both outcome connections, planning their statements, and claims nothing', async () => {
    const claim = new PgDriver({
      connection: TEST_DSN,
      maxPoolSize: 2,
      sessionSettings: PINNED_PLAN_SESSION_SETTINGS,
    });
    const settle = new PgDriver({
      connection: TEST_DSN,
      maxPoolSize: 2,
      sessionSettings: PINNED_PLAN_SESSION_SETTINGS,
    });
    const warmed = new PostgresBackend(db.driver, {
      schema: db.schema,
      claimDriver: claim,
      claimConnections: 2,
      settleDriver: settle,
      settleConnections: 2,
    });
    try {
      const job = await client.enqueue(alpha, {});
      await warmed.warmUp(request());
      expect(claim.pool.totalCount).toBe(2);
      expect(settle.pool.totalCount).toBe(2);
      // Each outcome connection has planned both outcome statements (two connections, two each).
      const held = await Promise.all([settle.pool.connect(), settle.pool.connect()]);
      try {
        for (const c of held) {
          const names = await c.query<{ name: string }>(
            `SELECT name FROM pg_prepared_statements ORDER BY name`,
          );
          expect(names.rows.map((r) => r.name.split('_')[1]).sort()).toEqual(['settle', 'settleSucceeded']);
        }
      } finally {
        for (const c of held) c.release();
      }
      expect((await backend.get(job.jobId))?.status).toBe('pending');
      const prepared = await claim.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE '%dispatchLean%'`,
      );
      expect(prepared.rows[0]?.n).toBe(1);
      // A real claim afterwards works as before.
      expect((await warmed.dispatchBatch(request())).map((r) => r.id)).toEqual([job.jobId]);
    } finally {
      await claim.close();
      await settle.close();
    }
  });
});
