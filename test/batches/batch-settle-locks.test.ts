/**
 * Outcome writes that count toward several batches: the statement trigger folds each statement's
 * outcomes into the batch rows in id order, so two writes meeting the same batches in opposite
 * orders neither deadlock nor lose a count (a row trigger updating each batch as it met the jobs
 * deadlocked here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem } from '../../src/client/batch-items.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { ClaimedJob } from '../../src/backend/types.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import { newJobId } from '../../src/core/ids.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const child = actor({ name: 'bl_child' }, async () => null);

describe('batch counting in concurrent outcome writes (Postgres)', () => {
  let s: TestSchema;
  let backend: PostgresBackend;
  let tq: TaskQ;

  beforeAll(async () => {
    s = await migratedSchema('bl');
    backend = new PostgresBackend(s.driver, { schema: s.schema });
    tq = new TaskQ(backend, { capacityCacheTtl: 0 });
  });
  afterAll(async () => {
    await tq.close();
    await s.drop();
  });

  it('settles interleaved children of two batches from concurrent writes', async () => {
    const size = 200;
    const a = await tq.enqueueBatch(
      Array.from({ length: size }, () => batchItem(child, {})),
      { failurePolicy: new AbortBatchAfter(1000) },
    );
    const b = await tq.enqueueBatch(
      Array.from({ length: size }, () => batchItem(child, {})),
      { failurePolicy: new AbortBatchAfter(1000) },
    );
    const workerId = newJobId();
    const claimed: ClaimedJob[] = [];
    while (claimed.length < 2 * size) {
      const got = await backend.dispatchBatch({
        workerId,
        queues: ['default'],
        actors: [{ name: child.name, maxConcurrent: null }],
        limit: 100,
        leaseMs: 60_000,
        oversample: 2,
      });
      expect(got.length).toBeGreaterThan(0);
      claimed.push(...got);
    }
    const idsOfA = new Set(a.jobHandles.map((h) => h.jobId));
    const ofA = claimed.filter((j) => idsOfA.has(j.id));
    const ofB = claimed.filter((j) => !idsOfA.has(j.id));
    expect([ofA.length, ofB.length]).toEqual([size, size]);
    const outcome = (j: ClaimedJob): Settlement => ({
      kind: 'failed',
      jobId: j.id,
      workerId,
      handlerStartedAt: null,
      durationMs: 1,
      error: { errorClass: 'Error', message: 'planned', traceback: null },
      retryDelayMs: null,
    });
    // Twenty writes of twenty jobs each: half list A's children first, half B's.
    const writes: Settlement[][] = [];
    for (let w = 0; w < 20; w++) {
      const as = ofA.slice(w * 10, w * 10 + 10).map(outcome);
      const bs = ofB.slice(w * 10, w * 10 + 10).map(outcome);
      writes.push(w % 2 === 0 ? [...as, ...bs] : [...bs, ...as]);
    }
    const results = await Promise.all(writes.map((items) => backend.settle(items)));
    expect(results.flat().every((r) => r.status === 'failed')).toBe(true);
    for (const id of [a.batchId, b.batchId]) {
      const row = (await tq.getBatch(id))!;
      expect(row).toMatchObject({ status: 'complete', consecutiveFailures: size });
      expect(row.counts).toMatchObject({ failed: size, pending: 0 });
    }
  });
});
