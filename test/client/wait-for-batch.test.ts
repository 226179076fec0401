/**
 * `tq.waitForBatch`'s decision table (src/client/wait-for-batch.ts), every row, on the in-memory
 * backend with a FakeClock: snooze mode, and blocking mode with its poll sleep on vitest's fake
 * timers and its AbortSignal. Children move through the worker's backend calls (dispatchBatch,
 * settle), so the batch row's counters are the backend's own.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { newJobId } from '../../src/core/ids.js';
import { BatchAbortedError, EmptyBatchError } from '../../src/errors/batch-errors.js';
import type { Logger } from '../../src/obs/logger.js';
import { Snooze } from '../../src/retry/control-flow.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { failed, succeeded } from '../helpers/settlements.js';

const W = '018f0000-0000-7000-8000-00000000f001';
const kid = actor({ name: 'wfb_child', retry: { kind: 'nonRetryable' } }, async () => undefined);
const fin = actor({ name: 'wfb_final' }, async () => undefined);

/** A logger that keeps its warnings. */
function recordingLogger(): Logger & { warnings: { obj: object; msg?: string }[] } {
  const warnings: { obj: object; msg?: string }[] = [];
  const logger = {
    warnings,
    debug: () => undefined,
    info: () => undefined,
    warn: (obj: object, msg?: string) => void warnings.push({ obj, msg }),
    error: () => undefined,
    child: () => logger,
  };
  return logger;
}

describe('tq.waitForBatch (in-memory backend)', () => {
  let clock: FakeClock;
  let backend: InMemoryBackend;
  let logger: ReturnType<typeof recordingLogger>;
  let tq: TaskQ;

  beforeEach(() => {
    clock = new FakeClock();
    backend = new InMemoryBackend({ clock });
    logger = recordingLogger();
    tq = new TaskQ(backend, { clock, logger, capacityCacheTtl: 0 });
  });
  afterEach(async () => {
    vi.useRealTimers();
    await tq.close();
  });

  /** Claims every pending child (and finalizer) for worker W. */
  const claimAll = () =>
    backend.dispatchBatch({
      workerId: W,
      queues: ['default'],
      actors: [kid.name, fin.name].map((name) => ({ name, maxConcurrent: null })),
      limit: 100,
      leaseMs: 60_000,
      oversample: 2,
    });
  const ok = (jobId: string): Settlement => succeeded(W, jobId);
  const fail = (jobId: string): Settlement => failed(W, jobId);
  /** A batch with a row (a finalizer), `n` children; returns the batch id and child ids. */
  async function rowBatch(n: number, threshold?: number): Promise<{ batchId: string; ids: string[] }> {
    const h = await tq.enqueueBatch(
      Array.from({ length: n }, () => batchItem(kid, {})),
      {
        finalizer: batchItem(fin, {}),
        ...(threshold === undefined ? {} : { failurePolicy: new AbortBatchAfter(threshold) }),
      },
    );
    return { batchId: h.batchId, ids: h.jobHandles.slice(0, n).map((j) => j.jobId) };
  }
  const rejection = (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => {
        throw new Error('expected a rejection');
      },
      (e: unknown) => e,
    );

  describe('snooze mode (the default)', () => {
    it('aborted with no child running: BatchAbortedError with the streak and threshold', async () => {
      const { batchId, ids } = await rowBatch(3, 1);
      await claimAll();
      await backend.settle([fail(ids[0]!), ok(ids[1]!), ok(ids[2]!)]);
      expect((await tq.getBatch(batchId))?.status).toBe('aborted');
      const err = await rejection(tq.waitForBatch(batchId));
      expect(err).toBeInstanceOf(BatchAbortedError);
      expect(err).toMatchObject({ batchId, threshold: 1 });
    });

    it('aborted with a child still running: snoozes for snoozeInterval', async () => {
      const { batchId, ids } = await rowBatch(2, 1);
      await claimAll();
      await backend.settle([fail(ids[0]!)]);
      expect((await tq.getBatch(batchId))?.status).toBe('aborted');
      const err = await rejection(tq.waitForBatch(batchId, { snoozeInterval: '5s' }));
      expect(err).toBeInstanceOf(Snooze);
      expect((err as Snooze).delayMs).toBe(5000);
    });

    it('all terminal but fewer than expectAtLeast: EmptyBatchError; while children run it snoozes instead', async () => {
      const { batchId, ids } = await rowBatch(2);
      await claimAll();
      await expect(tq.waitForBatch(batchId, { expectAtLeast: 3 })).rejects.toBeInstanceOf(Snooze);
      await backend.settle(ids.map(ok));
      const err = await rejection(tq.waitForBatch(batchId, { expectAtLeast: 3 }));
      expect(err).toBeInstanceOf(EmptyBatchError);
      expect(err).toMatchObject({ batchId, expected: 3, actual: 2 });
      expect(await tq.waitForBatch(batchId, { expectAtLeast: 2 })).toMatchObject({
        total: 2,
        isComplete: true,
      });
    });

    it('a batch with a row and no child: the empty status', async () => {
      const h = await tq.enqueueBatch([batchItem(kid, {})], { failurePolicy: new AbortBatchAfter(1) });
      // A second, empty batch with a row, written as a streaming enqueue's first chunk would be.
      const empty = newJobId();
      await backend.writeBatch({
        batchId: empty,
        create: { queue: 'default', failureThreshold: null, finalizer: null },
        children: [],
        seal: true,
      });
      expect(await tq.waitForBatch(empty)).toEqual({
        total: 0,
        pending: 0,
        succeeded: 0,
        failed: 0,
        cancelled: 0,
        crashed: 0,
        abandoned: 0,
        isComplete: true,
      });
      await expect(tq.waitForBatch(h.batchId)).rejects.toBeInstanceOf(Snooze);
    });

    it("no row and no child: EmptyBatchError, or the empty status with onEmpty: 'ok'", async () => {
      const unknown = newJobId();
      const err = await rejection(tq.waitForBatch(unknown));
      expect(err).toBeInstanceOf(EmptyBatchError);
      expect(err).toMatchObject({ batchId: unknown, expected: 1, actual: 0 });
      expect(await tq.waitForBatch(unknown, { onEmpty: 'ok' })).toMatchObject({ total: 0, isComplete: true });
    });

    it('children still running: Snooze; all terminal: the status (a batch without a row, excludeJobId left out)', async () => {
      const h = await tq.enqueueBatch([batchItem(kid, {}), batchItem(kid, {})]);
      const [a, b] = h.jobHandles.map((j) => j.jobId);
      expect(await tq.getBatch(h.batchId)).toBeNull();
      const snooze = await rejection(tq.waitForBatch(h.batchId));
      expect(snooze).toBeInstanceOf(Snooze);
      expect((snooze as Snooze).delayMs).toBe(10_000);
      await claimAll();
      await backend.settle([ok(a!)]);
      // `b` is the caller itself: left out, the batch is done.
      expect(await tq.waitForBatch(h.batchId, { excludeJobId: b! })).toMatchObject({
        total: 1,
        succeeded: 1,
        isComplete: true,
      });
      await expect(tq.waitForBatch(h.batchId)).rejects.toBeInstanceOf(Snooze);
      await backend.settle([fail(b!)]);
      expect(await tq.waitForBatch(h.batchId)).toEqual({
        total: 2,
        pending: 0,
        succeeded: 1,
        failed: 1,
        cancelled: 0,
        crashed: 0,
        abandoned: 0,
        isComplete: true,
      });
    });

    it('a batch with a row: the status from its counters once every child ended', async () => {
      const { batchId, ids } = await rowBatch(2);
      await claimAll();
      await backend.settle([ok(ids[0]!), fail(ids[1]!)]);
      expect(await tq.waitForBatch(batchId)).toMatchObject({
        total: 2,
        succeeded: 1,
        failed: 1,
        isComplete: true,
      });
    });

    it('raises a snoozeInterval under 1 s to 1 s, with a warning', async () => {
      const { batchId } = await rowBatch(1);
      const err = await rejection(tq.waitForBatch(batchId, { snoozeInterval: 10 }));
      expect((err as Snooze).delayMs).toBe(1000);
      expect(logger.warnings).toContainEqual({
        obj: { batchId, requestedMs: 10, usedMs: 1000 },
        msg: 'snooze-interval-clamped',
      });
    });
  });

  describe('blocking mode (snoozeViaException: false)', () => {
    /** Lets the wait run until it sleeps (no timer fires). */
    const settleMicrotasks = () => vi.advanceTimersByTimeAsync(0);

    it('polls every snoozeInterval until every child ended, then returns the status', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { batchId, ids } = await rowBatch(2);
      const polls = vi.spyOn(backend, 'batchCounts');
      let done = false;
      const wait = tq.waitForBatch(batchId, { snoozeViaException: false, snoozeInterval: '2s' });
      void wait.then(() => (done = true));
      await settleMicrotasks();
      expect(polls).toHaveBeenCalledTimes(1);
      await claimAll();
      await backend.settle([ok(ids[0]!)]);
      await vi.advanceTimersByTimeAsync(1999);
      expect(polls).toHaveBeenCalledTimes(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(polls).toHaveBeenCalledTimes(2);
      expect(done).toBe(false);
      await backend.settle([ok(ids[1]!)]);
      await vi.advanceTimersByTimeAsync(2000);
      await expect(wait).resolves.toMatchObject({ total: 2, succeeded: 2, isComplete: true });
      expect(polls).toHaveBeenCalledTimes(3);
    });

    it('keeps waiting on an aborted batch while a child runs, then throws BatchAbortedError', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { batchId, ids } = await rowBatch(2, 1);
      await claimAll();
      await backend.settle([fail(ids[0]!)]);
      const wait = rejection(tq.waitForBatch(batchId, { snoozeViaException: false }));
      await settleMicrotasks();
      await backend.settle([ok(ids[1]!)]);
      await vi.advanceTimersByTimeAsync(10_000);
      expect(await wait).toBeInstanceOf(BatchAbortedError);
    });

    it("stops when the signal aborts, rejecting with the signal's reason", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { batchId } = await rowBatch(1);
      const controller = new AbortController();
      const wait = rejection(
        tq.waitForBatch(batchId, { snoozeViaException: false, signal: controller.signal }),
      );
      await settleMicrotasks();
      const reason = new Error('shutting down');
      controller.abort(reason);
      expect(await wait).toBe(reason);
    });

    it('returns at once when the batch is already done, without sleeping', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { batchId, ids } = await rowBatch(1);
      await claimAll();
      await backend.settle([ok(ids[0]!)]);
      await expect(tq.waitForBatch(batchId, { snoozeViaException: false })).resolves.toMatchObject({
        succeeded: 1,
        isComplete: true,
      });
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});
