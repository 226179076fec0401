/**
 * The completer's batching, without a database: one write at a time while few outcomes wait, a
 * second write beside it once a full batch waits, never more than two, every outcome resolved, and
 * a failed write retried on its own.
 */
import { describe, expect, it } from 'vitest';

import type { Backend } from '../../src/backend/backend.js';
import type { Settlement, SettleResult } from '../../src/backend/worker-types.js';
import { silentLogger } from '../../src/obs/logger.js';
import {
  Completer,
  MAX_SETTLE_BATCH,
  MAX_SETTLE_WRITES_IN_FLIGHT,
  SECOND_WRITE_MIN,
} from '../../src/worker/completer.js';
import { waitFor } from '../helpers/wait.js';

/** A success outcome for job `n`. */
function outcome(n: number): Settlement {
  return {
    kind: 'succeeded',
    jobId: `job-${n}`,
    workerId: 'w',
    handlerStartedAt: new Date(0),
    durationMs: 0,
    resultJson: null,
    resultSizeBytes: null,
    fallbackResultTtlMs: null,
  } as Settlement;
}

/** A backend whose writes wait until the test releases them; it records each write's size. */
function gatedBackend(options: { failFirst?: boolean } = {}) {
  const sizes: number[] = [];
  const waiting: (() => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let failed = false;
  const backend = {
    settle: async (items: readonly Settlement[]): Promise<SettleResult[]> => {
      sizes.push(items.length);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await new Promise<void>((resolve) => waiting.push(resolve));
        if (options.failFirst && !failed) {
          failed = true;
          throw new Error('connection lost');
        }
        return items.map((i) => ({ jobId: i.jobId, status: 'succeeded' }) as unknown as SettleResult);
      } finally {
        inFlight--;
      }
    },
  } as unknown as Backend;
  return {
    backend,
    sizes,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    /** Lets every write started so far finish. */
    releaseAll() {
      for (const release of waiting.splice(0)) release();
    },
  };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('Completer', () => {
  it('writes a lone outcome at once and coalesces what arrives during the write', async () => {
    const b = gatedBackend();
    const completer = new Completer(b.backend, silentLogger, 1);
    const first = completer.settle(outcome(0));
    await turn();
    expect(b.sizes).toEqual([1]);
    // Fewer than a full batch wait: they join the next write instead of opening a second one.
    const rest = Array.from({ length: SECOND_WRITE_MIN - 1 }, (_, i) => completer.settle(outcome(i + 1)));
    await turn();
    expect(b.sizes).toEqual([1]);
    expect(completer.backlog).toBe(SECOND_WRITE_MIN - 1);
    b.releaseAll();
    await first;
    await turn();
    await turn();
    expect(b.sizes).toEqual([1, SECOND_WRITE_MIN - 1]);
    b.releaseAll();
    await Promise.all(rest);
    await completer.drain();
    expect(b.maxInFlight).toBe(1);
  });

  it('starts a second write once a full batch waits, and never more than two', async () => {
    expect(MAX_SETTLE_WRITES_IN_FLIGHT).toBe(2);
    const b = gatedBackend();
    const completer = new Completer(b.backend, silentLogger, 1);
    const all = [completer.settle(outcome(0))];
    await turn();
    for (let i = 1; i <= 3 * MAX_SETTLE_BATCH; i++) all.push(completer.settle(outcome(i)));
    await turn();
    await turn();
    // The first write (1 outcome) and one full batch beside it; the rest waits.
    expect(b.sizes).toEqual([1, MAX_SETTLE_BATCH]);
    expect(b.inFlight).toBe(2);
    expect(completer.backlog).toBe(2 * MAX_SETTLE_BATCH);
    const drained = completer.drain();
    while (b.sizes.reduce((a, n) => a + n, 0) < all.length) {
      b.releaseAll();
      await turn();
    }
    b.releaseAll();
    const results = await Promise.all(all);
    await drained;
    expect(results.map((r) => r.jobId)).toEqual(all.map((_, i) => `job-${i}`));
    expect(b.maxInFlight).toBe(2);
    expect(b.sizes.every((n) => n <= MAX_SETTLE_BATCH)).toBe(true);
  });

  it('retries a failed write while the other goes on', async () => {
    const b = gatedBackend({ failFirst: true });
    const completer = new Completer(b.backend, silentLogger, 1);
    const all = Array.from({ length: MAX_SETTLE_BATCH + 1 }, (_, i) => completer.settle(outcome(i)));
    await turn();
    expect(b.sizes).toEqual([MAX_SETTLE_BATCH]);
    const more = Array.from({ length: MAX_SETTLE_BATCH }, (_, i) =>
      completer.settle(outcome(i + MAX_SETTLE_BATCH + 1)),
    );
    await turn();
    await turn();
    expect(b.inFlight).toBe(2);
    // The first write fails: it is retried with the same outcomes.
    let settled = 0;
    const results = Promise.all([...all, ...more].map((p) => p.finally(() => settled++)));
    const drained = completer.drain();
    // Let every write through (the retry's too) until each outcome has settled.
    await waitFor(
      () => {
        b.releaseAll();
        return settled === 2 * MAX_SETTLE_BATCH + 1;
      },
      10_000,
      'every outcome to settle',
    );
    await drained;
    const written = await results;
    expect(new Set(written.map((r) => r.jobId)).size).toBe(2 * MAX_SETTLE_BATCH + 1);
    expect(b.sizes.filter((n) => n === MAX_SETTLE_BATCH).length).toBeGreaterThanOrEqual(3);
  });
});
