import { TaskQError } from './taskq-error.js';

/**
 * `enqueueBatchStreaming` stopped after some of its items were written: an item failed validation,
 * a chunk was refused (e.g. `MaxPendingExceededError`), the input iterator threw, `onProgress`
 * threw, or the failure policy aborted the batch (`BatchAbortedError`). The items before `written` are written (in your transaction with `connection`), none from
 * `written` on; resume from `items[written]` with the same `batchId` only for a batch without a row
 * (a batch with a row was sealed, see `sealed`). The original error is `cause`.
 *
 * A failure before anything was written is thrown as itself (as `enqueueBatch` would), not wrapped.
 */
export class StreamingBatchError extends TaskQError {
  /** The batch's id (`metadata.batch_id` of the children written). */
  readonly batchId: string;
  /** Items written before the failure (each a new job, or the existing job it deduplicated to). */
  readonly written: number;
  /**
   * The global index of the item the failure is about: the invalid item, the first item of a
   * refused chunk, the item the input failed to produce, or `written` when `onProgress` threw.
   */
  readonly failedIndex: number;
  /**
   * For a batch with a row (a failure policy or a finalizer): whether it is now sealed, so that it
   * completes once the children written end (false: sealing failed too, see the logs; the batch
   * stays open, `active`, until sealed). Null for a batch without a row.
   */
  readonly sealed: boolean | null;

  constructor(batchId: string, written: number, failedIndex: number, sealed: boolean | null, cause: unknown) {
    super(
      'TASKQ_STREAMING_BATCH_FAILED',
      `enqueueBatchStreaming of batch ${batchId} stopped at items[${failedIndex}] after writing ${written} ` +
        `item${written === 1 ? '' : 's'}` +
        (sealed === null ? '' : sealed ? ' (the batch is sealed)' : ' (sealing the batch failed)') +
        `: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.batchId = batchId;
    this.written = written;
    this.failedIndex = failedIndex;
    this.sealed = sealed;
  }
}
