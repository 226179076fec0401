import type { JobHandle } from '../client/job-handle.js';
import { TaskQError } from './taskq-error.js';

/** One item of an autonomous `ctx.jobs.enqueueBatch` that was not written, and why. */
export interface FailedBatchItem {
  /** Position of the item in the `items` array. */
  index: number;
  /** What refused it (a gate such as `MaxPendingExceededError`, or the database's error). */
  error: unknown;
}

/**
 * An autonomous `ctx.jobs.enqueueBatch(items, { autonomous: true })` wrote some items and not
 * others. Each item is its own write, attempted in order: every item was tried, those that
 * succeeded are committed (their handles are in `handles`), those in `failedItems` were not written.
 */
export class PartialBatchError extends TaskQError {
  /** Items written. */
  readonly succeededCount: number;
  /** Items not written, in item order, each with its error. */
  readonly failedItems: readonly FailedBatchItem[];
  /** Items in the call. */
  readonly total: number;
  /** One entry per item, in item order: the written job's handle, or null where the item failed. */
  readonly handles: readonly (JobHandle<unknown> | null)[];

  constructor(fields: {
    succeededCount: number;
    failedItems: readonly FailedBatchItem[];
    total: number;
    handles: readonly (JobHandle<unknown> | null)[];
  }) {
    const indices = fields.failedItems.map((f) => f.index);
    const shown = indices.length > 20 ? `${indices.slice(0, 20).join(', ')}, …` : indices.join(', ');
    super(
      'TASKQ_PARTIAL_BATCH',
      `${fields.succeededCount} of ${fields.total} sub-jobs were enqueued; ${indices.length} failed ` +
        `(items ${shown}): see failedItems for each error, and handles for the jobs written`,
    );
    this.succeededCount = fields.succeededCount;
    this.failedItems = fields.failedItems;
    this.total = fields.total;
    this.handles = fields.handles;
  }
}

/**
 * `ctx.jobs` was used where it cannot work: in a thread-isolated actor (its context crosses a
 * thread boundary that actors and connections cannot), or after the attempt it belongs to ended.
 */
export class SubJobsUnavailableError extends TaskQError {
  constructor(message: string) {
    super('TASKQ_SUB_JOBS_UNAVAILABLE', message);
  }
}
