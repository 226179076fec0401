/**
 * `AbortBatchAfter(5)` where the order of the outcomes is known: one worker, one slot, no prefetch,
 * so the children run and are counted in enqueue order. Runs of four failures come first and do
 * not abort; the batch aborts at the child that makes the first run of five, not one earlier, and
 * its waiting children are cancelled. The fleet test (test/faults/batch-fleet.test.ts) checks the
 * same rule where the order is only known from the audit log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem } from '../../src/client/batch-items.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { countersSnapshot, installBatchAudit, readAudit, replayAudit } from '../helpers/batch-audit.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const child = actor(
  {
    name: 'bo_child',
    payload: z.object({ i: z.number().int(), fail: z.boolean() }),
    retry: { kind: 'nonRetryable' },
  },
  async (p) => {
    if (p.fail) throw new Error(`planned failure of child ${p.i}`);
    return null;
  },
);

const CHILDREN = 60;
/** Failing children: runs of four (no abort), then the first run of five, ending at child 37. */
const FAILING = new Set([3, 4, 5, 6, 10, 12, 13, 14, 15, 20, 21, 22, 23, 33, 34, 35, 36, 37]);
const ABORT_AT = 37;

describe('AbortBatchAfter(5) with a known outcome order', () => {
  let s: TestSchema;
  let tq: TaskQ;

  beforeAll(async () => {
    s = await migratedSchema('babo');
    await installBatchAudit(s.pool, s.schema);
    tq = new TaskQ(new PostgresBackend(s.driver, { schema: s.schema }), { capacityCacheTtl: 0 });
  });
  afterAll(async () => {
    await tq.close();
    await s.drop();
  });

  it('aborts at the fifth consecutive failure, not at a run of four, and cancels the children that wait', async () => {
    const items = Array.from({ length: CHILDREN }, (_, i) => batchItem(child, { i, fail: FAILING.has(i) }));
    const h = await tq.enqueueBatch(items, { failurePolicy: new AbortBatchAfter(5) });
    const ids = h.jobHandles.map((j) => j.jobId);
    const worker = await startTestWorker([child], s.schema, { maxConcurrency: 1, prefetch: 0 });
    try {
      await waitFor(async () => (await h.status()).isComplete, 20_000, 'every child to be terminal');
    } finally {
      await worker.stop();
    }

    const row = (await tq.getBatch(h.batchId))!;
    expect(row.status).toBe('aborted');
    const replay = replayAudit(await readAudit(s.pool, s.schema, h.batchId), 5);
    expect(replay.mismatches).toEqual([]);
    expect(replay.abortedBy).toBe(ids[ABORT_AT]);
    expect(replay.streakAtAbort).toBe(5);
    expect(replay.abortedAt).toBe(replay.streakReachedAt);
    expect(replay.longestStreak).toBe(5);

    const status = new Map((await tq.list({ batchId: h.batchId, limit: 100 })).jobs.map((j) => [j.id, j]));
    // Every child up to the aborting one ran to its planned outcome; a child claimed while that
    // outcome was being written may finish too; the rest were cancelled by the abort.
    for (let i = 0; i < CHILDREN; i++) {
      const j = status.get(ids[i]!)!;
      const planned = FAILING.has(i) ? 'failed' : 'succeeded';
      if (i <= ABORT_AT) expect(j.status, `child ${i}`).toBe(planned);
      else if (j.status === 'cancelled') expect(j.errorClass, `child ${i}`).toBe('BatchAborted');
      else expect(j.status, `child ${i}`).toBe(planned);
    }
    expect(status.get(ids[CHILDREN - 1]!)!.status).toBe('cancelled');
    const snap = await countersSnapshot(s.pool, s.schema, h.batchId);
    expect(snap.mismatches).toEqual([]);
    expect(snap.row.cancelled).toBe(replay.abortCancels);
    // Every cancelled child (all after the aborting one, checked above) was cancelled by the abort.
    expect(replay.abortCancels).toBe([...status.values()].filter((j) => j.status === 'cancelled').length);
  });
});
