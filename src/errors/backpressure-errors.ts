import { TaskQError } from './taskq-error.js';

/** Base of the synchronous enqueue refusals: the caller decides whether to retry, wait or give up. */
export class BackpressureError extends TaskQError {
  /** Actor whose capacity refused the enqueue. */
  readonly actor: string;
  /** Pending + scheduled count observed, when known. */
  readonly pending: number;
  /** The limit in force, when there is one. */
  readonly maxPending: number | null;

  constructor(code: string, message: string, actor: string, pending = 0, maxPending: number | null = null) {
    super(code, message);
    this.actor = actor;
    this.pending = pending;
    this.maxPending = maxPending;
  }
}

/** The actor already has `maxPending` (or more) jobs pending or scheduled. Nothing was written. */
export class MaxPendingExceededError extends BackpressureError {
  /** Pending + scheduled jobs of the actor when the enqueue was refused. */
  readonly currentCount: number;

  constructor(actor: string, currentCount: number, maxPending: number) {
    super(
      'TASKQ_MAX_PENDING_EXCEEDED',
      `actor ${JSON.stringify(actor)} has ${currentCount} pending or scheduled jobs, at or above its maxPending of ${maxPending}; ` +
        'retry later, or raise the limit with `taskq actor-config set <actor> --max-pending N`',
      actor,
      currentCount,
      maxPending,
    );
    this.currentCount = currentCount;
  }
}

/** A singleton actor already has a job pending, scheduled or running. Nothing was written. */
export class SingletonCollisionError extends BackpressureError {
  /** The job that holds the singleton slot (null when the race was caught by the unique index). */
  readonly blockingJobId: string | null;
  /**
   * Advisory hint in milliseconds: the blocking job's deadline minus this process's clock. Null when
   * the blocking job has no deadline. Mixes clock domains by design; never use it as a predicate.
   */
  readonly retryAfterMs: number | null;

  constructor(actor: string, blockingJobId: string | null = null, retryAfterMs: number | null = null) {
    super(
      'TASKQ_SINGLETON_COLLISION',
      `actor ${JSON.stringify(actor)} is a singleton and already has an active job` +
        (blockingJobId ? ` (${blockingJobId})` : '') +
        '; wait for it to finish or cancel it before enqueueing another',
      actor,
    );
    this.blockingJobId = blockingJobId;
    this.retryAfterMs = retryAfterMs;
  }
}
