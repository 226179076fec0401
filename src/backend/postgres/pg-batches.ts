import type { Executor } from '../../db/driver.js';
import { BatchAbortedError, BatchNotOpenError } from '../../errors/batch-errors.js';
import { decodeBatchCursor, encodeBatchCursor } from '../batch-cursor.js';
import { countsOfRow, countsOfStatuses } from '../batch-counts.js';
import type {
  BatchCounts,
  BatchPage,
  BatchRow,
  BatchStatus,
  BatchWrite,
  BatchWriteResult,
  NormalizedBatchFilter,
} from '../batch-types.js';
import type { JobRow } from '../types.js';
import { enqueueMany, enqueueOne, type EnqueueTarget } from './pg-enqueue.js';
import type { PgOps } from './pg-ops.js';

type Raw = Record<string, unknown>;

const int = (v: unknown): number => Number(v ?? 0);

/** Maps a `batches` row (the counters included) to a {@link BatchRow}. */
export function toBatchRow(r: Raw): BatchRow {
  const expectedSize = int(r.expected_size);
  return {
    id: String(r.id),
    queue: String(r.queue),
    status: r.status as BatchStatus,
    expectedSize,
    sealed: Boolean(r.sealed),
    consecutiveFailures: int(r.consecutive_failures),
    failureThreshold: r.failure_threshold === null ? null : int(r.failure_threshold),
    finalizerJobId: r.finalizer_job_id === null ? null : String(r.finalizer_job_id),
    originatingActor: r.originating_actor === null ? null : String(r.originating_actor),
    counts: countsOfRow(expectedSize, {
      succeeded: int(r.succeeded),
      failed: int(r.failed),
      cancelled: int(r.cancelled),
      crashed: int(r.crashed),
      abandoned: int(r.abandoned),
    }),
    createdAt: new Date(r.created_at as string | Date),
    completedAt: r.completed_at === null ? null : new Date(r.completed_at as string | Date),
    metadata: (r.metadata ?? {}) as Record<string, unknown>,
  };
}

/**
 * A batch write (see `Backend.writeBatch`) inside `ex`'s transaction: the finalizer first (its id
 * goes into the row), the row, the children (each new one counting toward the row), then the size
 * and the seal. A later chunk locks the row first and refuses a sealed or missing batch.
 */
export async function writeBatchIn(
  ops: PgOps,
  ex: Executor,
  w: BatchWrite,
): Promise<BatchWriteResult & { inserted: number }> {
  const target: EnqueueTarget = { ex, ownPool: false };
  let finalizer: JobRow | null = null;
  if (w.create) {
    if (w.create.finalizer) finalizer = await enqueueOne(ops, target, w.create.finalizer, 'inline');
    await ops.run(
      'insertBatch',
      [w.batchId, w.create.queue, w.create.failureThreshold, finalizer?.id ?? null],
      ex,
    );
  } else {
    const [row] = await ops.run('lockBatch', [w.batchId], ex);
    if (!row) throw new BatchNotOpenError(w.batchId, 'missing');
    if (row.sealed) throw new BatchNotOpenError(w.batchId, 'sealed');
    // Children added after the policy gave up would run for a batch that is over.
    if (row.status === 'aborted' && w.children.length > 0)
      throw new BatchAbortedError(
        w.batchId,
        int(row.consecutive_failures),
        row.failure_threshold === null ? null : int(row.failure_threshold),
      );
  }
  let rows: JobRow[] = [];
  let inserted = 0;
  if (w.children.length > 0) {
    rows = await enqueueMany(ops, w.children, target, 'inline', w.batchId);
    for (let i = 0; i < rows.length; i++) if (rows[i]!.id === w.children[i]!.id) inserted++;
  }
  const [grown] = await ops.run('growBatch', [w.batchId, inserted, w.seal], ex);
  return { batch: toBatchRow(grown!), rows, finalizer, inserted };
}

/** One page of `listBatches`. */
export async function listBatchesPage(ops: PgOps, f: NormalizedBatchFilter): Promise<BatchPage> {
  const cursor = f.cursor === null ? null : decodeBatchCursor(f.cursor);
  if (f.limit === 0) return { batches: [], nextCursor: null };
  const rows = await ops.run('listBatches', [
    f.queue,
    f.active,
    f.batchId,
    cursor?.createdAt ?? null,
    cursor?.id ?? null,
    f.limit + 1,
  ]);
  const page = rows.slice(0, f.limit);
  const last = page[page.length - 1];
  return {
    batches: page.map(toBatchRow),
    nextCursor:
      rows.length > f.limit && last
        ? encodeBatchCursor({ createdAt: String(last.created_at_text), id: String(last.id) })
        : null,
  };
}

/** A batch's row (null without one) and its children's counts, in one round trip. */
export async function batchCountsOf(
  ops: PgOps,
  batchId: string,
  excludeJobId: string | null,
): Promise<{ batch: BatchRow | null; counts: BatchCounts }> {
  const [r] = await ops.run('batchCounts', [batchId, excludeJobId]);
  if (r && r.id !== null && r.id !== undefined) {
    const batch = toBatchRow(r);
    return { batch, counts: batch.counts };
  }
  return { batch: null, counts: countsOfStatuses((r?.child_counts ?? {}) as Record<string, number>) };
}
