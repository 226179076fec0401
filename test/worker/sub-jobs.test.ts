/**
 * `ctx.jobs` in a running worker, on real Postgres and on the in-memory backend: buffered children
 * exist if and only if the parent's attempt succeeds (written in the same transaction as the
 * success), a gate refusing them at the commit fails the attempt, the autonomous and connection
 * modes write at once, thread-isolated actors get a typed error. On Postgres, another connection
 * polling with REPEATABLE READ snapshots never sees the success without all its children or a child
 * without the success.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { Backend } from '../../src/backend/backend.js';
import type { ClientLike } from '../../src/db/driver.js';
import { batchItem } from '../../src/client/batch-items.js';
import type { JobHandle } from '../../src/client/job-handle.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor, threadActor } from '../../src/core/actor.js';
import { JobNotFoundError } from '../../src/errors/index.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { testWorkerSettings } from '../helpers/in-process-worker.js';

const PARENTS = 'sj_parents';

/** Children land on a queue no worker serves: they stay pending, so they can be counted. */
const child = actor(
  { name: 'sj_child', queue: 'sj_children', payload: z.object({ parent: z.string(), attempt: z.number() }) },
  async () => undefined,
);
const cappedChild = actor(
  { name: 'sj_capped_child', queue: 'sj_children', maxPending: 3 },
  async () => undefined,
);
/** A child the worker runs, for `wait()` on a buffered child's handle. */
const doubler = actor(
  { name: 'sj_doubler', queue: PARENTS, payload: z.object({ v: z.number() }) },
  async (p) => p.v * 2,
);

/** Buffers `n` children (half one by one, half in one batch), then fails the attempts in `failOn`. */
const fanOut = actor(
  {
    name: 'sj_fan_out',
    queue: PARENTS,
    retry: { maxAttempts: 2, base: 10, jitter: 0 },
    payload: z.object({ n: z.number().int(), failOn: z.array(z.number().int()) }),
  },
  async (p, ctx) => {
    const item = { parent: ctx.jobId, attempt: ctx.attempt };
    const half = Math.floor(p.n / 2);
    for (let i = 0; i < half; i++) await ctx.jobs.enqueue(child, item);
    await ctx.jobs.enqueueBatch(Array.from({ length: p.n - half }, () => batchItem(child, item)));
    if (p.failOn.includes(ctx.attempt)) throw new Error(`failing attempt ${ctx.attempt} on purpose`);
    return ctx.jobs.pendingCount;
  },
);

/** One child of an actor whose maxPending is full by then: refused at the commit. */
const overCap = actor({ name: 'sj_over_cap', queue: PARENTS, retry: { maxAttempts: 1 } }, async (_p, ctx) => {
  await ctx.jobs.enqueue(cappedChild, null);
  return 'returned';
});

/** An autonomous child, then a failure: the child stays. */
const autonomousThenFail = actor(
  { name: 'sj_autonomous', queue: PARENTS, retry: { maxAttempts: 1 } },
  async (_p, ctx) => {
    await ctx.jobs.enqueue(child, { parent: ctx.jobId, attempt: ctx.attempt }, { autonomous: true });
    throw new Error('the parent fails; its autonomous child is already written');
  },
);

/** Children whose handles the test keeps, to wait on them once the parent succeeded. */
const kept: JobHandle<unknown>[] = [];
const keeper = actor(
  { name: 'sj_keeper', queue: PARENTS, payload: z.object({ existingKey: z.string() }) },
  async (p, ctx) => {
    const h = await ctx.jobs.enqueue(doubler, { v: 21 });
    // Not written yet: the job exists once this attempt succeeds.
    const before = await h.status().then(
      () => 'found',
      (e: unknown) => (e instanceof JobNotFoundError ? 'not-found' : String(e)),
    );
    const dup = await ctx.jobs.enqueue(
      child,
      { parent: ctx.jobId, attempt: 0 },
      { idempotencyKey: p.existingKey },
    );
    kept.push(h, dup);
    return { before, dupId: dup.jobId };
  },
);

/** Reads `ctx.jobs` in a thread: a typed error. */
const inThread = threadActor({
  name: 'sj_in_thread',
  queue: PARENTS,
  module: new URL('../fixtures/thread-handlers.ts', import.meta.url),
  exportName: 'readsJobs',
});

interface Harness {
  tq: TaskQ;
  backend: Backend;
  /** Opens a transaction on a connection of the caller. */
  begin(): Promise<{ conn: ClientLike; commit(): Promise<void>; rollback(): Promise<void> }>;
  close(): Promise<void>;
}

/** The transaction a `withConnection` parent writes its child in, and what it then does with it. */
let txPlan: { begin: Harness['begin']; end: 'commit' | 'rollback' } | null = null;
const withConnection = actor({ name: 'sj_with_connection', queue: PARENTS }, async (_p, ctx) => {
  const tx = await txPlan!.begin();
  const h = await ctx.jobs.enqueue(
    child,
    { parent: ctx.jobId, attempt: ctx.attempt },
    { connection: tx.conn },
  );
  await (txPlan!.end === 'commit' ? tx.commit() : tx.rollback());
  return h.jobId;
});

const ACTORS = [fanOut, overCap, autonomousThenFail, keeper, doubler, inThread, withConnection];

async function postgresHarness(): Promise<Harness & { db: TestSchema }> {
  const db = await migratedSchema('subjobs');
  const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, capacityCacheTtl: 0 });
  const worker = new Worker({
    actors: ACTORS,
    settings: testWorkerSettings(db.schema, { queues: [PARENTS], maxConcurrency: 8 }),
    logger: silentLogger,
  });
  await worker.start();
  return {
    db,
    tq,
    backend: tq.backend,
    async begin() {
      const conn = await db.pool.connect();
      await conn.query('BEGIN');
      return {
        conn,
        commit: async () => {
          await conn.query('COMMIT');
          conn.release();
        },
        rollback: async () => {
          await conn.query('ROLLBACK');
          conn.release();
        },
      };
    },
    async close() {
      await worker.stop();
      await tq.close();
      await db.drop();
    },
  };
}

async function memoryHarness(): Promise<Harness> {
  const backend = new InMemoryBackend();
  const tq = new TaskQ(backend, { capacityCacheTtl: 0 });
  const worker = new Worker({
    actors: ACTORS.filter((a) => a !== inThread),
    backend,
    logger: silentLogger,
    settings: {
      pgDsn: null,
      queues: [PARENTS],
      maxConcurrency: 8,
      watchdogEnabled: false,
      healthEnabled: false,
    },
  });
  await worker.start();
  return {
    tq,
    backend,
    async begin() {
      const tx = backend.beginTransaction();
      return { conn: tx, commit: () => tx.commit(), rollback: () => tx.rollback() };
    },
    async close() {
      await worker.stop();
      await backend.close();
    },
  };
}

/** The children each parent has (by the payload's `parent`), with the attempts that enqueued them. */
async function childrenOf(tq: TaskQ, parent: string): Promise<{ attempt: number }[]> {
  const page = await tq.list({ actor: 'sj_child', limit: 1000 });
  return page.jobs
    .map((j) => j.payload as { parent: string; attempt: number })
    .filter((p) => p.parent === parent);
}

describe.each([
  ['Postgres', postgresHarness],
  ['in-memory', memoryHarness],
] as const)('ctx.jobs in a worker (%s)', (_name, makeHarness) => {
  let h: Harness;
  beforeAll(async () => {
    h = await makeHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('leaves no child of a parent whose attempts all fail', async () => {
    const parent = await h.tq.enqueue(fanOut, { n: 100, failOn: [1, 2] });
    await expect(parent.wait({ timeout: '20s' })).rejects.toMatchObject({ code: 'TASKQ_JOB_FAILED' });
    expect((await parent.attempts()).map((a) => a.outcome)).toEqual(['failed', 'failed']);
    expect(await childrenOf(h.tq, parent.jobId)).toEqual([]);
  });

  it('writes exactly the successful attempt’s 100 children after a failed attempt', async () => {
    const parent = await h.tq.enqueue(fanOut, { n: 100, failOn: [1] });
    expect(await parent.wait({ timeout: '20s' })).toBe(100);
    const children = await childrenOf(h.tq, parent.jobId);
    expect(children.length).toBe(100);
    expect(new Set(children.map((c) => c.attempt))).toEqual(new Set([2]));
  });

  it('fails the attempt with the gate’s error when the children are refused at the commit', async () => {
    for (let i = 0; i < 3; i++) await h.tq.enqueue(cappedChild, null);
    const parent = await h.tq.enqueue(overCap, null);
    await expect(parent.wait({ timeout: '20s' })).rejects.toMatchObject({ code: 'TASKQ_JOB_FAILED' });
    const row = (await parent.refresh())!;
    expect(row).toMatchObject({ status: 'failed', errorClass: 'MaxPendingExceededError', result: null });
    expect(row.errorMessage).toContain('maxPending of 3');
    expect((await parent.attempts()).map((a) => [a.outcome, a.errorClass])).toEqual([
      ['failed', 'MaxPendingExceededError'],
    ]);
    expect((await h.tq.list({ actor: 'sj_capped_child' })).jobs.length).toBe(3);
  });

  it('keeps an autonomous child of a failed parent', async () => {
    const parent = await h.tq.enqueue(autonomousThenFail, null);
    await expect(parent.wait({ timeout: '20s' })).rejects.toMatchObject({ code: 'TASKQ_JOB_FAILED' });
    expect((await childrenOf(h.tq, parent.jobId)).length).toBe(1);
  });

  it('writes a child with a connection in that transaction, whatever the parent does', async () => {
    txPlan = { begin: () => h.begin(), end: 'rollback' };
    const rolledBack = await h.tq.enqueue(withConnection, null);
    const goneId = (await rolledBack.wait({ timeout: '20s' })) as string;
    expect(await h.tq.getRow(goneId)).toBeNull();
    txPlan = { begin: () => h.begin(), end: 'commit' };
    const committed = await h.tq.enqueue(withConnection, null);
    const keptId = (await committed.wait({ timeout: '20s' })) as string;
    expect((await h.tq.getRow(keptId))?.status).toBe('pending');
  });

  it('gives handles that work once the parent succeeded, resolved to the job a key collided with', async () => {
    kept.length = 0;
    const existing = await h.tq.enqueue(
      child,
      { parent: 'elsewhere', attempt: 0 },
      { idempotencyKey: 'sj-key' },
    );
    const parent = await h.tq.enqueue(keeper, { existingKey: 'sj-key' });
    const out = (await parent.wait({ timeout: '20s' })) as { before: string; dupId: string };
    expect(out.before).toBe('not-found');
    const [doubled, dup] = kept;
    expect(await doubled!.wait({ timeout: '20s' })).toBe(42);
    // At the commit the key resolved to the existing job: the handle now points at it.
    expect(dup!.jobId).toBe(existing.jobId);
    expect(out.dupId).not.toBe(existing.jobId);
    expect(await h.tq.getRow(out.dupId)).toBeNull();
  });
});

describe('ctx.jobs on Postgres only', () => {
  let h: Harness & { db: TestSchema };
  beforeAll(async () => {
    h = await postgresHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('makes the children visible in the same commit as the success (REPEATABLE READ snapshots)', async () => {
    const observer = new pg.Client({ connectionString: TEST_DSN });
    await observer.connect();
    const q = `"${h.db.schema}"`;
    const parents: string[] = [];
    let snapshots = 0;
    let sawUnfinished = 0;
    const violations: string[] = [];
    let stop = false;
    const poll = (async () => {
      while (!stop) {
        const ids = [...parents];
        await observer.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        const statuses = await observer.query<{ id: string; status: string }>(
          `SELECT id::text, status::text FROM ${q}.jobs WHERE id = ANY($1::uuid[])`,
          [ids],
        );
        const counts = await observer.query<{ parent: string; n: number }>(
          `SELECT payload->>'parent' AS parent, count(*)::int AS n FROM ${q}.jobs
            WHERE actor = 'sj_child' AND payload->>'parent' = ANY($1::text[]) GROUP BY 1`,
          [ids],
        );
        await observer.query('COMMIT');
        snapshots++;
        const n = new Map(counts.rows.map((r) => [r.parent, r.n]));
        for (const r of statuses.rows) {
          const children = n.get(r.id) ?? 0;
          if (r.status !== 'succeeded') sawUnfinished++;
          if (r.status === 'succeeded' && children !== 100) violations.push(`succeeded with ${children}`);
          if (r.status !== 'succeeded' && children > 0) violations.push(`${r.status} with ${children}`);
        }
      }
    })();
    try {
      const handles = await Promise.all(
        Array.from({ length: 6 }, () => h.tq.enqueue(fanOut, { n: 100, failOn: [] })),
      );
      parents.push(...handles.map((x) => x.jobId));
      for (const x of handles) expect(await x.wait({ timeout: '30s' })).toBe(100);
    } finally {
      stop = true;
      await poll;
      await observer.end();
    }
    console.log(
      `sub-job visibility: ${snapshots} snapshots, ${sawUnfinished} parent readings before success`,
    );
    expect(violations).toEqual([]);
    expect(snapshots).toBeGreaterThan(1);
    for (const id of parents) expect((await childrenOf(h.tq, id)).length).toBe(100);
  });

  it('gives thread-isolated actors a typed error naming the rule', async () => {
    const job = await h.tq.enqueue(inThread, null);
    const out = (await job.wait({ timeout: '20s' })) as { code: string; message: string };
    expect(out.code).toBe('TASKQ_SUB_JOBS_UNAVAILABLE');
    expect(out.message).toContain('thread-isolated');
  });
});
