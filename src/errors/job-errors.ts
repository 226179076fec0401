import type { JobRow, JobStatus } from '../backend/types.js';
import { TaskQError } from './taskq-error.js';

/** No job with this id exists (it may have been pruned to the archive). */
export class JobNotFoundError extends TaskQError {
  /** The id that was looked up. */
  readonly jobId: string;

  constructor(jobId: string) {
    super('TASKQ_JOB_NOT_FOUND', `job ${jobId} does not exist (it may have been pruned to jobs_archive)`);
    this.jobId = jobId;
  }
}

/** An application-level transition check refused a move the state machine does not allow. */
export class IllegalStateTransition extends TaskQError {
  /** The job concerned. */
  readonly jobId: string;
  /** Its status before the attempted move. */
  readonly fromStatus: JobStatus;
  /** The status that was refused. */
  readonly toStatus: JobStatus;

  constructor(jobId: string, fromStatus: JobStatus, toStatus: JobStatus) {
    super(
      'TASKQ_ILLEGAL_STATE_TRANSITION',
      `job ${jobId} cannot move from ${fromStatus} to ${toStatus}; see docs/job-lifecycle.md for the allowed transitions`,
    );
    this.jobId = jobId;
    this.fromStatus = fromStatus;
    this.toStatus = toStatus;
  }
}

/** A terminal write found the job owned by another worker than the one writing. */
export class WorkerOwnershipMismatch extends TaskQError {
  /** The job concerned. */
  readonly jobId: string;
  /** The worker that tried to write. */
  readonly expected: string;
  /** The worker that owns the row (null when nobody does). */
  readonly actual: string | null;

  constructor(jobId: string, expected: string, actual: string | null) {
    super(
      'TASKQ_WORKER_OWNERSHIP_MISMATCH',
      `job ${jobId} is owned by worker ${actual ?? '(none)'}, not ${expected}; its lease probably expired and it was reclaimed`,
    );
    this.jobId = jobId;
    this.expected = expected;
    this.actual = actual;
  }
}

/** `JobHandle.wait()` saw the job end failed, cancelled, crashed or abandoned. */
export class JobFailed extends TaskQError {
  /** The terminal row, with `status`, `errorClass` and `errorMessage`. */
  readonly row: JobRow;

  constructor(row: JobRow) {
    super(
      'TASKQ_JOB_FAILED',
      `job ${row.id} (${row.actor}) ended ${row.status}` +
        (row.errorClass ? `: ${row.errorClass}${row.errorMessage ? `: ${row.errorMessage}` : ''}` : ''),
    );
    this.row = row;
  }
}

/** `JobHandle.wait()` saw the job succeed, but no usable result is stored (expired or never stored). */
export class ResultUnavailable extends TaskQError {
  /** The succeeded row. */
  readonly row: JobRow;

  constructor(row: JobRow, reason: string) {
    super('TASKQ_RESULT_UNAVAILABLE', `job ${row.id} (${row.actor}) succeeded but ${reason}`);
    this.row = row;
  }
}

/** The serialised result exceeds `resultMaxBytes`; the job fails without retry. */
export class ResultTooLarge extends TaskQError {
  /** The configured limit in bytes. */
  readonly limit: number;
  /** The serialised size in bytes. */
  readonly actual: number;

  constructor(limit: number, actual: number) {
    super(
      'TASKQ_RESULT_TOO_LARGE',
      `the result serialises to ${actual} bytes, above resultMaxBytes (${limit}); store large outputs elsewhere and return a reference`,
    );
    this.limit = limit;
    this.actual = actual;
  }
}

/** A wait (for a job, a result, a condition) ran out of time. */
export class WaitTimeoutError extends TaskQError {
  /** How long was waited, in milliseconds. */
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number) {
    super('TASKQ_WAIT_TIMEOUT', `timed out after ${timeoutMs} ms waiting for ${what}`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * `enqueueBatchFast` refused its batch: an item's idempotency key is already stored, or two items
 * share one. That path has no conflict handling (COPY cannot skip a row), so the whole batch is
 * refused and nothing is written; `enqueueBatch` returns the existing job instead.
 */
export class DuplicateIdempotencyKeyError extends TaskQError {
  /** Actor of the item with the repeated key (null when the database did not say which). */
  readonly actor: string | null;
  /** The key's scope. */
  readonly idempotencyScope: string | null;
  /** The repeated key. */
  readonly idempotencyKey: string | null;
  /** `'batch'`: two items of the batch share the key; `'stored'`: a stored job already has it. */
  readonly where: 'batch' | 'stored';

  constructor(fields: {
    actor: string | null;
    idempotencyScope: string | null;
    idempotencyKey: string | null;
    where: 'batch' | 'stored';
  }) {
    const key = `idempotency key ${JSON.stringify(fields.idempotencyKey)} (scope ${JSON.stringify(fields.idempotencyScope)})`;
    super(
      'TASKQ_DUPLICATE_IDEMPOTENCY_KEY',
      fields.where === 'batch'
        ? `${key} appears twice in the batch; enqueueBatchFast wrote nothing (deduplicate the items, or use enqueueBatch)`
        : `${key} is already stored; enqueueBatchFast wrote nothing (deduplicate the items, or use enqueueBatch, which returns the existing job)`,
    );
    this.actor = fields.actor;
    this.idempotencyScope = fields.idempotencyScope;
    this.idempotencyKey = fields.idempotencyKey;
    this.where = fields.where;
  }
}
