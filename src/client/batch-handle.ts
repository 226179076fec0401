import type { Backend } from '../backend/backend.js';
import type { BatchCounts, BatchRow } from '../backend/batch-types.js';
import type { JobHandle } from './job-handle.js';

/** A batch's children by status, and whether every one of them is terminal. */
export interface BatchCompletionStatus extends BatchCounts {
  /** No child is pending, scheduled or running. */
  isComplete: boolean;
}

/** The completion status of `counts`. */
export function completionOf(counts: BatchCounts): BatchCompletionStatus {
  return { ...counts, isComplete: counts.pending === 0 };
}

/**
 * What `enqueueBatch` (and `enqueueBatchStreaming`) return: the batch id, a handle per child (and the
 * finalizer's, last), and the batch's live status.
 */
export class BatchHandle {
  constructor(
    private readonly backend: Backend,
    /** Shared batch id stamped into each child's `metadata.batch_id`. */
    readonly batchId: string,
    /**
     * One handle per item, in order (an idempotency hit yields the existing job's handle), then the
     * finalizer's when there is one. Empty for a streaming enqueue (its children are not kept).
     */
    readonly jobHandles: JobHandle<unknown>[],
    /** Number of items (the finalizer not counted). */
    readonly size: number,
    /** The finalizer's handle, when the batch has one. */
    readonly finalizerHandle: JobHandle<unknown> | null = null,
    /** The batch's row as written, when it has one (a failure policy or a finalizer). */
    readonly row: BatchRow | null = null,
  ) {}

  /**
   * The children by status, in one round trip: from the batch row's counters (kept in the
   * transaction of every child's status change), or, for a batch without a row, counted from the
   * jobs table. The finalizer is not a child.
   */
  async status(): Promise<BatchCompletionStatus> {
    return completionOf((await this.backend.batchCounts(this.batchId)).counts);
  }
}
