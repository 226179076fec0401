/**
 * The in-memory backend's batches, mirroring the `batches` table, its triggers (the row trigger
 * `batch_child_status_changed` notes each child's change, `batch_outcomes_fold` folds a transaction's
 * notes into the rows at commit: migrations/0005_pre_batches.sql) and `postgres/sql/batches.sql`.
 * Every writer of a job's status reports its changes through {@link MemoryBatches.statusChanged},
 * once per operation (as the fold runs once per transaction), so the counters change with every status
 * change of a counted child, whichever operation makes it.
 */
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
import { gateLockNames } from '../enqueue-gates.js';
import { TERMINAL_STATUSES } from '../state-machine.js';
import type { JobRow, JobStatus } from '../types.js';
import { gateAndBuild, gateBatch, type MemoryGateLocks } from './memory-enqueue.js';
import type { MemoryState, StatusChange } from './memory-state.js';
import type { MemoryTransaction } from './memory-transaction.js';

/** The message of a child cancelled by its batch's abort (as the trigger writes it). */
export const BATCH_ABORTED_MESSAGE = 'Batch aborted due to consecutive failures';

/** A stored batch: the `batches` row, with the ids of its counted children (`jobs.batch_id`). */
interface StoredBatch {
  id: string;
  queue: string;
  status: BatchStatus;
  expectedSize: number;
  sealed: boolean;
  consecutiveFailures: number;
  failureThreshold: number | null;
  finalizerJobId: string | null;
  succeeded: number;
  failed: number;
  cancelled: number;
  crashed: number;
  abandoned: number;
  createdAt: Date;
  completedAt: Date | null;
}

type Counter = 'succeeded' | 'failed' | 'cancelled' | 'crashed' | 'abandoned';

const terminalCount = (b: StoredBatch): number =>
  b.succeeded + b.failed + b.cancelled + b.crashed + b.abandoned;

/**
 * A batch has ended: marked complete, or sealed with every child it expects counted terminal (an
 * aborted batch once its running children have finished). The Postgres trigger's condition.
 */
const hasEnded = (b: StoredBatch): boolean =>
  b.status === 'complete' || (b.sealed && terminalCount(b) >= b.expectedSize);

/** What the batches need from the backend that owns them. */
export interface MemoryBatchDeps {
  state: MemoryState;
  gateLocks: MemoryGateLocks;
  /** The rows a caller's open transaction has written (visible to its own later writes). */
  txRows: WeakMap<MemoryTransaction, JobRow[]>;
}

/** The batches of one in-memory backend. */
export class MemoryBatches {
  private readonly rows = new Map<string, StoredBatch>();
  /** The in-memory `jobs.batch_id`: the batch each counted child counts toward. */
  private readonly batchOf = new Map<string, string>();
  /** Batches created in a caller's open transaction: visible to its own later chunks only. */
  private readonly txBatches = new WeakMap<MemoryTransaction, Map<string, StoredBatch>>();

  constructor(private readonly d: MemoryBatchDeps) {}

  /** Forgets every batch (between tests). */
  clear(): void {
    this.rows.clear();
    this.batchOf.clear();
  }

  /**
   * The trigger: `changes` are the status changes one operation made, in order. A counted child
   * entering a terminal status is counted (`failed` extends the streak, `succeeded` resets it); at
   * the threshold the batch aborts, cancelling its pending and scheduled children; a sealed batch
   * whose children are all terminal completes. Leaving a terminal status (an admin retry)
   * uncounts it and reopens a complete batch.
   */
  statusChanged(changes: readonly StatusChange[]): void {
    if (this.batchOf.size === 0) return;
    const aborted: string[] = [];
    const endedBefore = new Map<StoredBatch, boolean>();
    for (const { job, from } of changes) {
      const batchId = this.batchOf.get(job.id);
      const b = batchId === undefined ? undefined : this.rows.get(batchId);
      if (!b) continue;
      const wasTerminal = TERMINAL_STATUSES.has(from);
      const isTerminal = TERMINAL_STATUSES.has(job.status);
      if (wasTerminal === isTerminal) continue;
      if (!endedBefore.has(b)) endedBefore.set(b, hasEnded(b));
      if (wasTerminal) b[from as Counter]--;
      if (isTerminal) {
        b[job.status as Counter]++;
        if (job.status === 'failed') b.consecutiveFailures++;
        else if (job.status === 'succeeded') b.consecutiveFailures = 0;
      }
      if (
        b.status === 'active' &&
        isTerminal &&
        job.status === 'failed' &&
        b.failureThreshold !== null &&
        b.consecutiveFailures >= b.failureThreshold
      ) {
        aborted.push(...this.abort(b));
      } else if (b.status === 'active' && isTerminal && b.sealed && terminalCount(b) >= b.expectedSize) {
        b.status = 'complete';
        b.completedAt = this.d.state.clock.now();
      } else if (b.status === 'complete' && !isTerminal) {
        b.status = 'active';
        b.completedAt = null;
      }
    }
    if (aborted.length > 0) this.d.state.emitDone(aborted);
    for (const [b, ended] of endedBefore) if (!ended) this.wakeFinalizerIfEnded(b);
  }

  /**
   * The Postgres trigger `batches_ended_wake_finalizer`: when `b` has ended, its finalizer, if it is
   * scheduled after a snooze, becomes pending at once and the producers are woken (a finalizer
   * waiting out a retry backoff keeps it). Called where a batch may have ended, with `b` not ended
   * before the change.
   */
  private wakeFinalizerIfEnded(b: StoredBatch): void {
    if (b.finalizerJobId === null || !hasEnded(b)) return;
    const s = this.d.state;
    const j = s.jobs.get(b.finalizerJobId);
    if (!j || j.status !== 'scheduled') return;
    const last = s.attempts().findLast((a) => a.jobId === j.id);
    if (last?.outcome !== 'snoozed') return;
    j.status = 'pending';
    j.scheduledAt = s.clock.now();
    s.event(j.id, 'state_change', {
      from_state: 'scheduled',
      to_state: 'pending',
      reason: 'batch_ended',
      batch_id: b.id,
    });
    s.emitWake();
  }

  /** Aborts `b`: cancels its pending and scheduled children and counts them in one step. */
  private abort(b: StoredBatch): string[] {
    const s = this.d.state;
    const children: JobRow[] = [];
    for (const [jobId, batchId] of this.batchOf) {
      const j = batchId === b.id ? s.jobs.get(jobId) : undefined;
      if (j) children.push(j);
    }
    const ids = this.cancelAborted(b, children);
    b.status = 'aborted';
    b.completedAt = s.clock.now();
    return ids;
  }

  /**
   * Cancels the pending and scheduled jobs of `jobs` for `b`'s abort, and those claimed but not
   * started (their attempt given back), and counts them.
   */
  private cancelAborted(b: StoredBatch, jobs: readonly JobRow[]): string[] {
    const s = this.d.state;
    const now = s.clock.now();
    const ids: string[] = [];
    for (const j of jobs) {
      const unstarted = j.status === 'running' && j.startedAt === null;
      if (j.status !== 'pending' && j.status !== 'scheduled' && !unstarted) continue;
      const from = j.status;
      Object.assign(j, {
        status: 'cancelled',
        finishedAt: now,
        cancelRequestedAt: now,
        errorClass: 'BatchAborted',
        errorMessage: BATCH_ABORTED_MESSAGE,
        attempt: unstarted ? Math.max(j.attempt - 1, 0) : j.attempt,
        lockedByWorker: null,
        lockExpiresAt: null,
      } satisfies Partial<JobRow>);
      s.event(j.id, 'state_change', {
        from_state: from,
        to_state: 'cancelled',
        reason: 'batch_aborted',
        batch_id: b.id,
      });
      ids.push(j.id);
    }
    b.cancelled += ids.length;
    return ids;
  }

  /** See `Backend.writeBatch`: gates first, then everything or nothing. */
  async write(w: BatchWrite, tx: MemoryTransaction | undefined): Promise<BatchWriteResult> {
    const s = this.d.state;
    const batchId = w.batchId.toLowerCase();
    const finalizerArgs = w.create?.finalizer ?? null;
    const names = gateLockNames(finalizerArgs ? [finalizerArgs, ...w.children] : w.children);
    const release = names.length > 0 ? await this.d.gateLocks.acquire(names, tx) : undefined;
    try {
      const now = s.clock.now();
      const staged: JobRow[] = [];
      const visible = (): JobRow[] => [
        ...s.jobs.values(),
        ...(tx ? (this.d.txRows.get(tx) ?? []) : []),
        ...staged,
      ];
      const own = tx ? this.txBatches.get(tx) : undefined;
      let batch: StoredBatch;
      let finalizer: JobRow | null = null;
      if (w.create) {
        if (this.rows.has(batchId) || own?.has(batchId))
          throw new Error(`batch ${batchId} already exists (batches_pkey)`);
        if (finalizerArgs) {
          const out = gateAndBuild(finalizerArgs, visible(), now);
          if ('existing' in out) finalizer = out.existing;
          else staged.push((finalizer = out.insert));
        }
        batch = {
          id: batchId,
          queue: w.create.queue,
          status: 'active',
          expectedSize: 0,
          sealed: false,
          consecutiveFailures: 0,
          failureThreshold: w.create.failureThreshold,
          finalizerJobId: finalizer?.id ?? null,
          succeeded: 0,
          failed: 0,
          cancelled: 0,
          crashed: 0,
          abandoned: 0,
          createdAt: now,
          completedAt: null,
        };
      } else {
        const found = own?.get(batchId) ?? this.rows.get(batchId);
        if (!found) throw new BatchNotOpenError(batchId, 'missing');
        if (found.sealed) throw new BatchNotOpenError(batchId, 'sealed');
        if (found.status === 'aborted' && w.children.length > 0)
          throw new BatchAbortedError(batchId, found.consecutiveFailures, found.failureThreshold);
        batch = found;
      }
      const { rows, staged: children } = gateBatch(w.children, visible(), now);
      const inserted = rows.filter((r, i) => r.id === w.children[i]!.id).length;
      staged.push(...children);

      // `preview`: a copy of the row for the caller's result, which wakes nothing.
      const grow = (b: StoredBatch, preview = false): void => {
        const ended = hasEnded(b);
        b.expectedSize += inserted;
        b.sealed ||= w.seal;
        if (b.status === 'active' && b.sealed && terminalCount(b) >= b.expectedSize) {
          b.status = 'complete';
          b.completedAt = s.clock.now();
        }
        if (!ended && !preview) this.wakeFinalizerIfEnded(b);
      };
      const store = (b: StoredBatch): void => {
        for (const r of staged) s.jobs.set(r.id, r);
        for (const r of children) this.batchOf.set(r.id, b.id);
        if (staged.length > 0) s.emitWake();
      };
      if (!tx) {
        if (w.create) this.rows.set(batchId, batch);
        grow(batch);
        store(batch);
        return this.result(batch, rows, finalizer);
      }
      // In a caller's transaction: visible to its own later writes now, to everyone at commit.
      this.d.txRows.set(tx, [...(this.d.txRows.get(tx) ?? []), ...staged]);
      if (w.create || own?.has(batchId)) {
        const mine = own ?? new Map<string, StoredBatch>();
        this.txBatches.set(tx, mine);
        mine.set(batchId, batch);
        grow(batch);
        if (w.create)
          tx.defer(() => {
            this.rows.set(batchId, batch);
            mine.delete(batchId);
          });
        tx.defer(() => store(batch));
        return this.result(batch, rows, finalizer);
      }
      // A later chunk of a committed batch: its size grows at commit, counted against the row as
      // it is then (outcomes counted meanwhile included). On Postgres the chunk holds the row lock
      // until then, so an abort that happened meanwhile would have come after the commit and
      // cancelled the new children too: do that here.
      const preview = { ...batch };
      grow(preview, true);
      const abortedBefore = batch.status === 'aborted';
      tx.defer(() => {
        const b = this.rows.get(batchId);
        if (!b) return;
        grow(b);
        store(b);
        if (!abortedBefore && b.status === 'aborted') {
          const ended = hasEnded(b);
          const ids = this.cancelAborted(b, children);
          if (ids.length > 0) s.emitDone(ids);
          if (!ended) this.wakeFinalizerIfEnded(b);
        }
      });
      return this.result(preview, rows, finalizer);
    } finally {
      release?.();
    }
  }

  private result(b: StoredBatch, rows: JobRow[], finalizer: JobRow | null): BatchWriteResult {
    return { batch: toBatchRow(b), rows: rows.map(clone), finalizer: finalizer ? clone(finalizer) : null };
  }

  /** See `Backend.getBatch`. */
  get(batchId: string): BatchRow | null {
    const b = this.rows.get(batchId.toLowerCase());
    return b ? toBatchRow(b) : null;
  }

  /** See `Backend.listBatches`: newest first, keyset on `(createdAt, id)`. */
  list(f: NormalizedBatchFilter): BatchPage {
    const cursor = f.cursor === null ? null : decodeBatchCursor(f.cursor);
    if (f.limit === 0) return { batches: [], nextCursor: null };
    const at = cursor === null ? 0 : new Date(cursor.createdAt).getTime();
    const before = (b: StoredBatch): boolean =>
      cursor === null ||
      b.createdAt.getTime() < at ||
      (b.createdAt.getTime() === at && b.id < cursor.id.toLowerCase());
    const matching = [...this.rows.values()]
      .filter(
        (b) =>
          (f.queue === null || b.queue === f.queue) &&
          (f.active === null || (b.status === 'active') === f.active) &&
          (f.batchId === null || b.id === f.batchId.toLowerCase()) &&
          before(b),
      )
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1));
    const page = matching.slice(0, f.limit);
    const last = page[page.length - 1];
    return {
      batches: page.map(toBatchRow),
      nextCursor:
        matching.length > f.limit && last
          ? encodeBatchCursor({ createdAt: last.createdAt.toISOString(), id: last.id })
          : null,
    };
  }

  /** See `Backend.batchCounts`. */
  counts(batchId: string, excludeJobId: string | null): { batch: BatchRow | null; counts: BatchCounts } {
    const id = batchId.toLowerCase();
    const b = this.rows.get(id);
    if (b) {
      const batch = toBatchRow(b);
      return { batch, counts: batch.counts };
    }
    const exclude = excludeJobId?.toLowerCase() ?? null;
    const byStatus: Partial<Record<JobStatus, number>> = {};
    for (const j of this.d.state.jobs.values())
      if (j.metadata.batch_id === id && j.id !== exclude) byStatus[j.status] = (byStatus[j.status] ?? 0) + 1;
    return { batch: null, counts: countsOfStatuses(byStatus) };
  }

  /** The children of `b` still in the jobs table. */
  private children(b: StoredBatch): JobRow[] {
    const out: JobRow[] = [];
    for (const [jobId, batchId] of this.batchOf) {
      const j = batchId === b.id ? this.d.state.jobs.get(jobId) : undefined;
      if (j) out.push(j);
    }
    return out;
  }

  /** See `Backend.completeStaleBatches`. */
  completeStale(limit: number): string[] {
    const now = this.d.state.clock.now();
    const stale = [...this.rows.values()]
      .filter(
        (b) =>
          b.status === 'active' &&
          b.sealed &&
          !this.children(b).some((j) => !TERMINAL_STATUSES.has(j.status)),
      )
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .slice(0, limit);
    for (const b of stale) {
      const ended = hasEnded(b);
      b.status = 'complete';
      b.completedAt = now;
      if (!ended) this.wakeFinalizerIfEnded(b);
    }
    return stale.map((b) => b.id);
  }

  /** See `Backend.pruneBatches`. */
  prune(olderThanMs: number, limit: number): number {
    const cutoff = this.d.state.clock.now().getTime() - olderThanMs;
    const doomed = [...this.rows.values()]
      .filter(
        (b) =>
          b.status !== 'active' &&
          b.completedAt !== null &&
          b.completedAt.getTime() < cutoff &&
          this.children(b).length === 0,
      )
      .sort((a, b) => a.completedAt!.getTime() - b.completedAt!.getTime())
      .slice(0, limit);
    const ids = new Set(doomed.map((b) => b.id));
    for (const id of ids) this.rows.delete(id);
    for (const [jobId, batchId] of this.batchOf) if (ids.has(batchId)) this.batchOf.delete(jobId);
    return doomed.length;
  }
}

const clone = <T>(v: T): T => structuredClone(v);

/** The {@link BatchRow} of a stored batch, as `toBatchRow` maps a `batches` row. */
function toBatchRow(b: StoredBatch): BatchRow {
  return {
    id: b.id,
    queue: b.queue,
    status: b.status,
    expectedSize: b.expectedSize,
    sealed: b.sealed,
    consecutiveFailures: b.consecutiveFailures,
    failureThreshold: b.failureThreshold,
    finalizerJobId: b.finalizerJobId,
    originatingActor: null,
    counts: countsOfRow(b.expectedSize, b),
    createdAt: new Date(b.createdAt),
    completedAt: b.completedAt === null ? null : new Date(b.completedAt),
    metadata: {},
  };
}
