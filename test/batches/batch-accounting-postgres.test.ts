/**
 * Batch rows on Postgres: created with their children and finalizer in one transaction, counters
 * kept by the jobs trigger in the transaction of every child's status change (outcome writes,
 * cancels, admin retries), the failure policy's abort, completion, and the read API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem } from '../../src/client/batch-items.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const child = actor(
  { name: 'bt_child', payload: z.object({ fail: z.boolean() }), retry: { kind: 'nonRetryable' } },
  async (p) => {
    if (p.fail) throw new Error('planned failure');
    return null;
  },
);
const finalizer = actor({ name: 'bt_final' }, async () => null);

/** The batch row's counters and the jobs table's counts by status, read in one snapshot. */
async function countersAndTable(
  s: TestSchema,
  batchId: string,
): Promise<{ row: Record<string, number>; table: Record<string, number> }> {
  const c = await s.pool.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    const row = (
      await c.query(
        `SELECT succeeded, failed, cancelled, crashed, abandoned, expected_size FROM "${s.schema}".batches WHERE id = $1`,
        [batchId],
      )
    ).rows[0] as Record<string, number>;
    const byStatus = (
      await c.query(
        `SELECT status::text, count(*)::int AS n FROM "${s.schema}".jobs WHERE batch_id = $1 GROUP BY status`,
        [batchId],
      )
    ).rows as { status: string; n: number }[];
    await c.query('COMMIT');
    const table: Record<string, number> = {};
    for (const r of byStatus) table[r.status] = r.n;
    return { row, table };
  } finally {
    c.release();
  }
}

describe('batch accounting (Postgres)', () => {
  let s: TestSchema;
  let tq: TaskQ;

  beforeAll(async () => {
    s = await migratedSchema('bt');
    tq = new TaskQ(new PostgresBackend(s.driver, { schema: s.schema }), { capacityCacheTtl: 0 });
  });
  afterAll(async () => {
    await tq.close();
    await s.drop();
  });

  it('writes the row, the children and the finalizer together; the finalizer is not a child', async () => {
    const items = Array.from({ length: 5 }, () => batchItem(child, { fail: false }));
    const h = await tq.enqueueBatch(items, {
      failurePolicy: new AbortBatchAfter(3),
      finalizer: batchItem(finalizer, {}),
    });
    expect(h.size).toBe(5);
    expect(h.jobHandles).toHaveLength(6);
    expect(h.finalizerHandle).not.toBeNull();
    const row = await tq.getBatch(h.batchId);
    expect(row).toMatchObject({
      status: 'active',
      expectedSize: 5,
      sealed: true,
      failureThreshold: 3,
      finalizerJobId: h.finalizerHandle!.jobId,
    });
    expect(await h.status()).toMatchObject({ total: 5, pending: 5, isComplete: false });
    const fin = await tq.getRow(h.finalizerHandle!.jobId);
    expect(fin!.metadata.batch_id).toBeUndefined();
  });

  it('counts outcomes, aborts at the threshold and cancels the children that wait', async () => {
    // Three children fail at once; ten more are scheduled an hour out, so none of them is claimed.
    const items = [
      ...Array.from({ length: 3 }, () => batchItem(child, { fail: true })),
      ...Array.from({ length: 10 }, () => batchItem(child, { fail: false }, { delay: '1h' })),
    ];
    const h = await tq.enqueueBatch(items, { failurePolicy: new AbortBatchAfter(3) });
    const worker = await startTestWorker([child, finalizer], s.schema, { maxConcurrency: 1 });
    try {
      await waitFor(async () => (await tq.getBatch(h.batchId))!.status === 'aborted');
    } finally {
      await worker.stop();
    }
    const row = (await tq.getBatch(h.batchId))!;
    expect(row.consecutiveFailures).toBe(3);
    expect(row.completedAt).not.toBeNull();
    expect(row.counts).toMatchObject({ total: 13, failed: 3, cancelled: 10, pending: 0 });
    expect(await h.status()).toMatchObject({ isComplete: true, failed: 3, cancelled: 10 });
    const { row: counters, table } = await countersAndTable(s, h.batchId);
    expect(counters).toMatchObject({ failed: table.failed, cancelled: table.cancelled, succeeded: 0 });
    const cancelled = await tq.list({ batchId: h.batchId, status: 'cancelled', limit: 100 });
    expect(cancelled.jobs).toHaveLength(10);
    for (const j of cancelled.jobs) expect(j.errorMessage).toBe('Batch aborted due to consecutive failures');
    const events = await tq.backend.getEvents(cancelled.jobs[0]!.id);
    expect(events.at(-1)!.detail).toMatchObject({ to_state: 'cancelled', reason: 'batch_aborted' });
  });

  it('completes when the last child ends, and an admin retry reopens it', async () => {
    const h = await tq.enqueueBatch([batchItem(child, { fail: false }), batchItem(child, { fail: true })], {
      finalizer: batchItem(finalizer, {}),
    });
    const worker = await startTestWorker([child, finalizer], s.schema, { maxConcurrency: 2 });
    try {
      await waitFor(async () => (await tq.getBatch(h.batchId))!.status === 'complete');
      const failed = (await tq.list({ batchId: h.batchId, status: 'failed' })).jobs[0]!;
      await worker.stop();
      expect(await tq.retryJob(failed.id)).toBe(true);
      const reopened = (await tq.getBatch(h.batchId))!;
      expect(reopened).toMatchObject({ status: 'active', completedAt: null });
      expect(reopened.counts).toMatchObject({ failed: 0, succeeded: 1, pending: 1 });
    } finally {
      await worker.stop();
    }
  });

  it('counts a client cancel of a waiting child in the cancel transaction', async () => {
    const h = await tq.enqueueBatch([batchItem(child, { fail: false }), batchItem(child, { fail: false })], {
      failurePolicy: new AbortBatchAfter(1),
    });
    await tq.cancelWhere({ batchId: h.batchId });
    const row = (await tq.getBatch(h.batchId))!;
    expect(row).toMatchObject({ status: 'complete' });
    expect(row.counts).toMatchObject({ cancelled: 2, pending: 0 });
  });

  it('lists batch rows newest first with a keyset cursor', async () => {
    const page1 = await tq.listBatches({ limit: 2 });
    expect(page1.batches).toHaveLength(2);
    expect(page1.nextCursor).not.toBeNull();
    const page2 = await tq.listBatches({ limit: 100, cursor: page1.nextCursor! });
    const ids = [...page1.batches, ...page2.batches].map((b) => b.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(4);
    expect(page2.nextCursor).toBeNull();
    expect((await tq.listBatches({ active: true })).batches.every((b) => b.status === 'active')).toBe(true);
  });
});
