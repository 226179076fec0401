/**
 * Outcome writes for tests that drive a backend by hand (claim, then `backend.settle`): a success
 * without a result, and a failure without retry, both by `workerId` with a 2 ms handler.
 */
import type { Settlement } from '../../src/backend/worker-types.js';

/** The error a failed settlement records. */
export const BOOM = { errorClass: 'Boom', message: 'boom', traceback: null };

/** `jobId` succeeded on `workerId`, with no stored result. */
export function succeeded(workerId: string, jobId: string): Settlement {
  return {
    workerId,
    handlerStartedAt: null,
    durationMs: 2,
    kind: 'succeeded',
    jobId,
    resultJson: null,
    resultSizeBytes: null,
    fallbackResultTtlMs: null,
  };
}

/** `jobId` failed on `workerId` with {@link BOOM}, and is not retried. */
export function failed(workerId: string, jobId: string): Settlement {
  return {
    workerId,
    handlerStartedAt: null,
    durationMs: 2,
    kind: 'failed',
    jobId,
    retryDelayMs: null,
    error: BOOM,
  };
}
