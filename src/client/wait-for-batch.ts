import type { Backend } from '../backend/backend.js';
import { toMs, type Duration } from '../core/duration.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { isUuid } from '../core/ids.js';
import { BatchAbortedError, EmptyBatchError } from '../errors/batch-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { Snooze } from '../retry/control-flow.js';
import { interruptibleSleep } from '../worker/sleep.js';
import { completionOf, type BatchCompletionStatus } from './batch-handle.js';

/** Options of `waitForBatch`. */
export interface WaitForBatchOptions {
  /**
   * How long to wait before looking again while children run: the snooze's delay, or the blocking
   * mode's poll interval. At least 1 s (shorter is raised to 1 s, with a `snooze-interval-clamped`
   * warning). Default `'10s'`.
   */
  snoozeInterval?: Duration;
  /**
   * true (default): while children run, throw `Snooze(snoozeInterval)` — in a handler, the job comes
   * back later without using an attempt. false: block, polling every `snoozeInterval`, until every
   * child is terminal (for callers outside a handler, or a handler that prefers to hold its slot).
   */
  snoozeViaException?: boolean;
  /** Fewer children than this once all are terminal → `EmptyBatchError` (e.g. a lost fan-out). */
  expectAtLeast?: number;
  /** A batch with no child and no row: `'error'` (default) throws `EmptyBatchError`; `'ok'` returns. */
  onEmpty?: 'error' | 'ok';
  /**
   * A job not to count (a batch without a row: e.g. the caller itself, when it carries the batch
   * id). A batch row's finalizer is never a child, so it needs no exclusion.
   */
  excludeJobId?: string;
  /** Blocking mode: stop waiting when this aborts (the wait then rejects with its reason). */
  signal?: AbortSignal;
}

/** The shortest `snoozeInterval`. */
export const MIN_SNOOZE_INTERVAL_MS = 1000;
const DEFAULT_SNOOZE_INTERVAL_MS = 10_000;
const KEYS: readonly string[] = [
  'snoozeInterval',
  'snoozeViaException',
  'expectAtLeast',
  'onEmpty',
  'excludeJobId',
  'signal',
];

interface Checked {
  intervalMs: number;
  snooze: boolean;
  expectAtLeast: number | null;
  onEmpty: 'error' | 'ok';
  excludeJobId: string | null;
  signal: AbortSignal | null;
}

function check(batchId: string, o: WaitForBatchOptions, logger: Logger): Checked {
  if (!isUuid(batchId)) throw new InvalidArgumentError('waitForBatch.batchId', batchId, 'must be a UUID');
  if (o === null || typeof o !== 'object')
    throw new InvalidArgumentError('waitForBatch.options', o, 'must be an object');
  checkKnownKeys(o, KEYS, 'waitForBatch', 'an option of waitForBatch');
  let intervalMs =
    o.snoozeInterval === undefined
      ? DEFAULT_SNOOZE_INTERVAL_MS
      : toMs(o.snoozeInterval, 'waitForBatch.snoozeInterval', 'nonNegative');
  if (intervalMs < MIN_SNOOZE_INTERVAL_MS) {
    logger.warn(
      { batchId, requestedMs: intervalMs, usedMs: MIN_SNOOZE_INTERVAL_MS },
      'snooze-interval-clamped',
    );
    intervalMs = MIN_SNOOZE_INTERVAL_MS;
  }
  if (o.snoozeViaException !== undefined && typeof o.snoozeViaException !== 'boolean')
    throw new InvalidArgumentError(
      'waitForBatch.snoozeViaException',
      o.snoozeViaException,
      'must be a boolean',
    );
  if (o.expectAtLeast !== undefined && (!Number.isSafeInteger(o.expectAtLeast) || o.expectAtLeast < 1))
    throw new InvalidArgumentError(
      'waitForBatch.expectAtLeast',
      o.expectAtLeast,
      'must be a whole number of at least 1',
    );
  if (o.onEmpty !== undefined && o.onEmpty !== 'error' && o.onEmpty !== 'ok')
    throw new InvalidArgumentError('waitForBatch.onEmpty', o.onEmpty, "must be 'error' or 'ok'");
  if (o.excludeJobId !== undefined && !isUuid(o.excludeJobId))
    throw new InvalidArgumentError('waitForBatch.excludeJobId', o.excludeJobId, 'must be a UUID');
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
    throw new InvalidArgumentError('waitForBatch.signal', o.signal, 'must be an AbortSignal');
  return {
    intervalMs,
    snooze: o.snoozeViaException ?? true,
    expectAtLeast: o.expectAtLeast ?? null,
    onEmpty: o.onEmpty ?? 'error',
    excludeJobId: o.excludeJobId?.toLowerCase() ?? null,
    signal: o.signal ?? null,
  };
}

/**
 * Waits, in a finalizer, for a batch's children to end, following the reference's decision table
 * (the first matching row wins):
 *
 * | batch | children | result |
 * |---|---|---|
 * | aborted | none left running | `BatchAbortedError` |
 * | aborted | some still running | snooze (or keep waiting, blocking mode) |
 * | any | all terminal, fewer than `expectAtLeast` | `EmptyBatchError` |
 * | has a row | none at all | the (empty) status |
 * | no row | none at all | `EmptyBatchError`, or the empty status with `onEmpty: 'ok'` |
 * | any | some not terminal | snooze (`Snooze(snoozeInterval)`), or poll again (blocking mode) |
 * | otherwise | | the status |
 *
 * @throws Snooze (snooze mode), BatchAbortedError, EmptyBatchError, InvalidArgumentError; in
 *   blocking mode, the signal's reason when it aborts
 */
export async function waitForBatchOn(
  backend: Backend,
  logger: Logger,
  batchId: string,
  options: WaitForBatchOptions = {},
): Promise<BatchCompletionStatus> {
  const o = check(batchId, options, logger);
  const id = batchId.toLowerCase();
  for (;;) {
    const { batch, counts } = await backend.batchCounts(id, o.excludeJobId);
    const wait = (): Snooze | null => (o.snooze ? new Snooze(o.intervalMs) : null);
    let retry: Snooze | null | undefined;
    if (batch?.status === 'aborted') {
      if (counts.pending === 0)
        throw new BatchAbortedError(id, batch.consecutiveFailures, batch.failureThreshold);
      retry = wait();
    } else if (o.expectAtLeast !== null && counts.pending === 0 && counts.total < o.expectAtLeast) {
      throw new EmptyBatchError(id, o.expectAtLeast, counts.total);
    } else if (counts.total === 0) {
      if (batch !== null || o.onEmpty === 'ok') return completionOf(counts);
      throw new EmptyBatchError(id, o.expectAtLeast ?? 1, 0);
    } else if (counts.pending > 0) {
      retry = wait();
    } else {
      return completionOf(counts);
    }
    if (retry) throw retry;
    await interruptibleSleep(o.intervalMs, o.signal ?? undefined).promise;
    if (o.signal?.aborted) throw o.signal.reason;
  }
}
