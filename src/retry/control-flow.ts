import { checkKnownKeys } from '../core/closest-name.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { TaskQError } from '../errors/taskq-error.js';

/**
 * Thrown by a handler to come back later without using up an attempt: the job lands `scheduled`
 * after `delay` (measured on the database clock). The attempt is recorded with outcome `snoozed`.
 */
export class Snooze extends TaskQError {
  /** Delay in milliseconds. */
  readonly delayMs: number;

  constructor(delay: Duration) {
    const ms = toMs(delay, 'Snooze.delay', 'nonNegative');
    super('TASKQ_SNOOZE', `job snoozed for ${ms} ms`);
    this.delayMs = ms;
  }
}

/**
 * Thrown by a handler to be retried after exactly `delay` (e.g. a server's `Retry-After`). By
 * default the attempt counts against the budget (`consumeBudget: true`); a transient policy that
 * has used every attempt then fails with `MaxAttemptsExceeded`.
 */
export class RetryAfter extends TaskQError {
  /** Delay in milliseconds. */
  readonly delayMs: number;
  /** Whether this attempt counts against `maxAttempts`. */
  readonly consumeBudget: boolean;

  constructor(delay: Duration, options: { consumeBudget?: boolean } = {}) {
    const ms = toMs(delay, 'RetryAfter.delay', 'nonNegative');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('RetryAfter.options', options, 'must be an object ({ consumeBudget? })');
    checkKnownKeys(options, ['consumeBudget'], 'RetryAfter.options', 'an option of RetryAfter');
    if (options.consumeBudget !== undefined && typeof options.consumeBudget !== 'boolean')
      throw new InvalidArgumentError(
        'RetryAfter.options.consumeBudget',
        options.consumeBudget,
        'must be a boolean',
      );
    super('TASKQ_RETRY_AFTER', `retry requested in ${ms} ms`);
    this.delayMs = ms;
    this.consumeBudget = options.consumeBudget ?? true;
  }
}

/** Abort reason of `ctx.signal` when the attempt's `startToClose` elapsed; the attempt fails and retries. */
export class StartToCloseTimeout extends TaskQError {
  /** The limit that elapsed, in ms. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super('TASKQ_START_TO_CLOSE_TIMEOUT', `the attempt exceeded its startToClose of ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/** Abort reason of `ctx.signal` when the worker shuts down; the job goes back to `pending`. */
export class WorkerShutdown extends TaskQError {
  constructor() {
    super('TASKQ_WORKER_SHUTDOWN', 'the worker is shutting down; the job will run again on another worker');
  }
}

/** Abort reason of `ctx.signal` when someone cancelled the job. */
export class CancelRequested extends TaskQError {
  constructor(reason?: string | null) {
    super('TASKQ_CANCEL_REQUESTED', reason ? `cancel requested: ${reason}` : 'cancel requested');
  }
}
