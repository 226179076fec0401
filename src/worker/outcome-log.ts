import type { Settlement, SettleResult } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';

/**
 * The line an attempt's written outcome leaves in the worker's log (on the attempt's logger, so it
 * carries the job's fields). What the job's new status is decides, not what the worker asked for:
 * the write may fail a retry past the job's deadline or out of attempts.
 *
 * - `failed` → `job-failed` at error, with the error class and message the attempt stored (redacted
 *   and bounded by `toErrorInfo`), its stack, and `jobErrorClass` when the job's own class differs
 *   (`DeadlineExceeded`, `MaxAttemptsExceeded`);
 * - a failed attempt that runs again → `job-attempt-failed` at warn, with the error and `retryInMs`;
 * - `RetryAfter` → `job-retry-after` at info; a release at shutdown → `job-released` at info;
 * - `cancelled` → `job-cancelled` at info;
 * - `Snooze` → `job-snoozed`, a rate-limit or reservation denial → `job-denied`, both at debug (they
 *   can come many times a second for one job, and are the handler's or the limit's intent).
 *
 * Every outcome also logs `job-settled` at debug. Never the payload or the result. See docs/logging.md.
 */
export function logOutcome(log: Logger, outcome: Settlement, result: SettleResult): void {
  const status = result.status;
  log.debug({ status, kind: outcome.kind }, 'job-settled');
  if (status === 'succeeded' || status === 'noop') return;
  const error = outcome.kind === 'succeeded' ? null : outcome.error;
  if (status === 'failed') {
    const errorClass = error?.errorClass ?? result.errorClass ?? 'Error';
    log.error(
      {
        errorClass,
        message: error?.message ?? null,
        ...(result.errorClass !== null && result.errorClass !== errorClass
          ? { jobErrorClass: result.errorClass }
          : {}),
        ...(error?.traceback ? { stack: error.traceback } : {}),
      },
      'job-failed',
    );
    return;
  }
  if (status === 'cancelled') {
    log.info({ message: error?.message ?? null }, 'job-cancelled');
    return;
  }
  if (status !== 'pending' && status !== 'scheduled') return;
  switch (outcome.kind) {
    case 'failed':
      log.warn(
        {
          errorClass: outcome.error.errorClass,
          message: outcome.error.message,
          ...retryAt(outcome.retryDelayMs ?? 0),
        },
        'job-attempt-failed',
      );
      return;
    case 'reschedule':
      if (outcome.outcome === 'snoozed') log.debug(retryAt(outcome.delayMs), 'job-snoozed');
      else if (outcome.outcome === 'retry_after')
        log.info(
          {
            errorClass: outcome.error?.errorClass ?? null,
            message: outcome.error?.message ?? null,
            consumeBudget: outcome.consumeBudget,
            ...retryAt(outcome.delayMs),
          },
          'job-retry-after',
        );
      else log.debug({ outcome: outcome.outcome, ...retryAt(outcome.delayMs) }, 'job-denied');
      return;
    case 'release':
      log.info({}, 'job-released');
      return;
    default:
      return;
  }
}

/** When the job runs next: the delay the worker asked for, and the time it means on this worker's clock. */
function retryAt(delayMs: number): { retryInMs: number; retryAt: string } {
  return { retryInMs: delayMs, retryAt: new Date(Date.now() + delayMs).toISOString() };
}
