import { TaskQError } from './taskq-error.js';

/**
 * A streaming enqueue's later chunk found its batch missing or already sealed (no child can be
 * added to a sealed batch). Nothing of the chunk was written.
 */
export class BatchNotOpenError extends TaskQError {
  readonly batchId: string;
  readonly reason: 'missing' | 'sealed';

  constructor(batchId: string, reason: 'missing' | 'sealed') {
    super(
      'TASKQ_BATCH_NOT_OPEN',
      reason === 'missing'
        ? `batch ${batchId} has no row: children can be added only to a batch created with a failure policy or a finalizer`
        : `batch ${batchId} is sealed: no child can be added to it`,
    );
    this.batchId = batchId;
    this.reason = reason;
  }
}

/**
 * `waitForBatch` found the batch aborted by its failure policy and no child still running: the
 * finalizer should not treat the batch as done.
 */
export class BatchAbortedError extends TaskQError {
  readonly batchId: string;
  readonly consecutiveFailures: number;
  readonly threshold: number | null;

  constructor(batchId: string, consecutiveFailures: number, threshold: number | null) {
    super(
      'TASKQ_BATCH_ABORTED',
      `batch ${batchId} was aborted after ${consecutiveFailures} consecutive failed children` +
        (threshold === null ? '' : ` (its policy aborts at ${threshold})`),
    );
    this.batchId = batchId;
    this.consecutiveFailures = consecutiveFailures;
    this.threshold = threshold;
  }
}

/** `waitForBatch` found fewer children than expected (`expectAtLeast`), or none (`onEmpty: 'error'`). */
export class EmptyBatchError extends TaskQError {
  readonly batchId: string;
  readonly expected: number;
  readonly actual: number;

  constructor(batchId: string, expected: number, actual: number) {
    super(
      'TASKQ_EMPTY_BATCH',
      `batch ${batchId} has ${actual} ${actual === 1 ? 'child' : 'children'}, expected at least ${expected}`,
    );
    this.batchId = batchId;
    this.expected = expected;
    this.actual = actual;
  }
}
