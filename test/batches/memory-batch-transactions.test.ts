/**
 * A later chunk written in a caller's transaction on the in-memory backend, against outcomes
 * counted while that transaction is open. On Postgres the chunk holds the batch row's lock until it
 * commits, so an outcome waits for it (a case the shared contract cannot run on one connection);
 * the in-memory backend must end in the same state.
 */
import { describe, expect, it } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { EnqueueArgs } from '../../src/backend/types.js';
import { buildEnqueueArgs } from '../../src/client/enqueue-options.js';
import { BatchAbortedError } from '../../src/errors/batch-errors.js';
import { actor } from '../../src/core/actor.js';
import { newJobId } from '../../src/core/ids.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const W = '018f0000-0000-7000-8000-00000000f0f1';
const kid = actor({ name: 'mbt_child', retry: { kind: 'nonRetryable' } }, async () => undefined);
const child = (batchId: string): EnqueueArgs =>
  buildEnqueueArgs(kid, '{}', {}, { maxPending: null, idempotencyMaxBytes: 1024, batchId });

async function openBatch(backend: InMemoryBackend): Promise<{ batchId: string; first: string }> {
  const batchId = newJobId();
  const first = child(batchId);
  await backend.writeBatch({
    batchId,
    create: { queue: 'default', failureThreshold: 1, finalizer: null },
    children: [first],
    seal: false,
  });
  return { batchId, first: first.id };
}

async function failOne(backend: InMemoryBackend, jobId: string): Promise<void> {
  const claimed = await backend.dispatchBatch({
    workerId: W,
    queues: ['default'],
    actors: [{ name: kid.name, maxConcurrent: null }],
    limit: 10,
    leaseMs: 60_000,
    oversample: 2,
  });
  expect(claimed.map((c) => c.id)).toContain(jobId);
  await backend.settle([
    {
      workerId: W,
      handlerStartedAt: null,
      durationMs: 1,
      kind: 'failed',
      jobId,
      retryDelayMs: null,
      error: { errorClass: 'Boom', message: 'boom', traceback: null },
    },
  ]);
}

describe('in-memory writeBatch in a transaction, against concurrent outcomes', () => {
  it('cancels the chunk’s children at commit when the batch aborted while the chunk was open', async () => {
    const backend = new InMemoryBackend({ clock: new FakeClock() });
    const { batchId, first } = await openBatch(backend);
    const tx = backend.beginTransaction();
    const more = [child(batchId), child(batchId)];
    await backend.writeBatch({ batchId, children: more, seal: true }, { connection: tx });
    await failOne(backend, first);
    expect((await backend.getBatch(batchId))?.status).toBe('aborted');
    await tx.commit();
    expect(await backend.getBatch(batchId)).toMatchObject({
      status: 'aborted',
      expectedSize: 3,
      sealed: true,
      counts: { total: 3, pending: 0, failed: 1, cancelled: 2 },
    });
    for (const m of more) {
      expect(await backend.get(m.id)).toMatchObject({ status: 'cancelled', errorClass: 'BatchAborted' });
      expect((await backend.getEvents(m.id)).at(-1)?.detail).toMatchObject({ reason: 'batch_aborted' });
    }
  });

  it('refuses a chunk for an already aborted batch, as Postgres does: nothing written', async () => {
    const backend = new InMemoryBackend({ clock: new FakeClock() });
    const { batchId, first } = await openBatch(backend);
    await failOne(backend, first);
    const tx = backend.beginTransaction();
    const late = child(batchId);
    await expect(
      backend.writeBatch({ batchId, children: [late], seal: true }, { connection: tx }),
    ).rejects.toBeInstanceOf(BatchAbortedError);
    await tx.rollback();
    expect(await backend.get(late.id)).toBeNull();
    expect(await backend.getBatch(batchId)).toMatchObject({
      status: 'aborted',
      counts: { total: 1, pending: 0, failed: 1 },
    });
  });

  it('drops the chunk on rollback: no child, the size unchanged', async () => {
    const backend = new InMemoryBackend({ clock: new FakeClock() });
    const { batchId } = await openBatch(backend);
    const tx = backend.beginTransaction();
    const dropped = child(batchId);
    await backend.writeBatch({ batchId, children: [dropped], seal: true }, { connection: tx });
    await tx.rollback();
    expect(await backend.get(dropped.id)).toBeNull();
    expect(await backend.getBatch(batchId)).toMatchObject({ expectedSize: 1, sealed: false });
  });
});
