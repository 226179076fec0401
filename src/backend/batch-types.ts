import type { EnqueueArgs, JobRow } from './types.js';

/** A batch row's state: `active` until every child is terminal (`complete`) or the policy aborts it. */
export type BatchStatus = 'active' | 'complete' | 'aborted';

/**
 * A batch's children by status. `pending` counts every child not yet terminal (pending, scheduled
 * and running), as the reference does; `total` is every child.
 */
export interface BatchCounts {
  total: number;
  pending: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  crashed: number;
  abandoned: number;
}

/**
 * The stored row of a batch created with a failure policy or a finalizer (`batches` table). Its
 * counters change in the transaction that changes a child's status, so they always equal the jobs
 * table.
 */
export interface BatchRow {
  id: string;
  /** The first child's queue (approximate for a batch spanning queues). */
  queue: string;
  status: BatchStatus;
  /** Children written so far (new jobs; an idempotency hit on an existing job is not a child). */
  expectedSize: number;
  /** False while a streaming enqueue may still add children; an open batch never completes. */
  sealed: boolean;
  consecutiveFailures: number;
  /** `AbortBatchAfter(n)`'s n; null when the batch never aborts. */
  failureThreshold: number | null;
  finalizerJobId: string | null;
  /** Reserved, always null. */
  originatingActor: string | null;
  /** Children by status, from the row's counters. */
  counts: BatchCounts;
  createdAt: Date;
  /** When the batch completed or aborted. */
  completedAt: Date | null;
  metadata: Record<string, unknown>;
}

/** What {@link Backend.writeBatch} writes, in one transaction. */
export interface BatchWrite {
  batchId: string;
  /**
   * Create the batch row (and its finalizer) first. Omitted: the row exists (a later chunk of a
   * streaming enqueue) and must be active or aborted, not sealed.
   */
  create?: {
    queue: string;
    failureThreshold: number | null;
    /** The finalizer job: enqueued with the batch, not stamped with the batch id, not counted. */
    finalizer: EnqueueArgs | null;
  };
  /** Children to add (may be empty). New rows count toward the batch. */
  children: readonly EnqueueArgs[];
  /** No child will be added after these: the batch may complete. */
  seal: boolean;
}

/** What {@link Backend.writeBatch} wrote. */
export interface BatchWriteResult {
  batch: BatchRow;
  /** One row per child, in order (an idempotency hit returns the existing job, not counted). */
  rows: JobRow[];
  /** The finalizer's row (the existing job on an idempotency hit), when `create.finalizer` was given. */
  finalizer: JobRow | null;
}

/** `listBatches`' filter, normalised. Newest first, keyset on `(createdAt, id)`. */
export interface NormalizedBatchFilter {
  queue: string | null;
  /** true: active batches only; false: complete or aborted only; null: all. */
  active: boolean | null;
  batchId: string | null;
  limit: number;
  /** Opaque cursor from the previous page. */
  cursor: string | null;
}

/** One page of `listBatches`. */
export interface BatchPage {
  batches: BatchRow[];
  nextCursor: string | null;
}
