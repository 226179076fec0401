import type { Backend } from '../backend/backend.js';
import type { EnqueueArgs, JobRow } from '../backend/types.js';
import type { Settlement, SettleResult } from '../backend/worker-types.js';
import { isTransientError } from '../db/transient-errors.js';
import type { Logger } from '../obs/logger.js';
import { interruptibleSleep } from './sleep.js';

interface Pending {
  item: Settlement;
  resolve: (r: SettleResult) => void;
  reject: (err: unknown) => void;
}

/**
 * What {@link Completer.settleWithChildren} did: the success and its children were written (or,
 * with `result.status` `noop`, neither: the job was no longer this worker's), or the children were
 * refused and nothing was written.
 */
export type ChildrenWrite =
  { kind: 'written'; result: SettleResult; children: JobRow[] } | { kind: 'refused'; error: unknown };

/**
 * Most settlements written by one statement. It moves with the adaptive prefetch's cap
 * (`ADAPTIVE_PREFETCH_MAX` in producer.ts), and for the same reason: one outcome write per claim.
 * Raised together, the two made drains faster and cheaper for Postgres; either alone gained nothing,
 * since a claim then waits for several smaller writes while the cores sit idle (bench/NOTES.md).
 */
export const MAX_SETTLE_BATCH = 1000;

/**
 * A worker stops claiming while this many outcomes wait to be written: one full write queued behind
 * the writes in flight. More would not make the next write larger (it takes at most
 * {@link MAX_SETTLE_BATCH}); it would only keep finished jobs in memory longer — long enough, at a
 * few thousand, to outlive the young generation and be promoted, so that the garbage collector
 * copies them and only full collections free them. A larger bound cost the worker more CPU per job
 * and more memory, and drained more slowly (bench/NOTES.md).
 */
export const MAX_SETTLE_BACKLOG = MAX_SETTLE_BATCH;

/**
 * Most outcome writes in flight at once. While one write runs, a second starts once
 * {@link SECOND_WRITE_MIN} outcomes wait for it. A write spends part of its time waiting rather than
 * computing, not least for its commit's WAL flush, so with one write at a time a busy worker leaves
 * the cores idle for part of a drain; a second write fills that time. Starting it at half a batch
 * instead gained less with one worker process and lost with several (bench/NOTES.md).
 */
export const MAX_SETTLE_WRITES_IN_FLIGHT = 2;

/**
 * Outcomes that must wait before a second write starts beside the one in flight. Fewer wait for the
 * write in flight and join the next one: a trickle of outcomes is written one statement at a time,
 * each carrying every outcome that arrived meanwhile, and a worker sharing the database with others
 * (whose outcomes arrive more slowly) rarely opens a second write.
 */
export const SECOND_WRITE_MIN = MAX_SETTLE_BATCH;

/**
 * Writes attempt outcomes in batches. Outcomes that arrive while a write is in flight are written
 * together by the next statement, so a busy worker writes many jobs per round trip and an idle one
 * writes each job at once (no added delay); when a full batch waits behind the write in flight, a
 * second write starts ({@link MAX_SETTLE_WRITES_IN_FLIGHT}). A failed write is retried with backoff;
 * the ownership guard makes a retry after a lost reply harmless (already-written jobs come back
 * `noop`).
 */
export class Completer {
  private queue: Pending[] = [];
  /** Writes in flight (each with its retries). */
  private readonly writes = new Set<Promise<void>>();
  /** Successes written with their sub-jobs, in flight (each alone, apart from the batched writes). */
  private readonly childWrites = new Set<Promise<unknown>>();
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly backend: Backend,
    private readonly logger: Logger,
    private readonly retryBackoffMs = 250,
  ) {}

  /** Number of outcomes waiting to be written (not counting those of the writes in flight). */
  get backlog(): number {
    return this.queue.length;
  }

  /** Queues an outcome; resolves with what the database did once it is written. */
  settle(item: Settlement): Promise<SettleResult> {
    return new Promise<SettleResult>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Starts a write on the next turn if one may start now (see {@link mayStartWrite}). */
  private schedule(): void {
    if (this.scheduled || !this.mayStartWrite()) return;
    this.scheduled = true;
    // Let outcomes produced in the same turn of the event loop join this batch.
    setImmediate(() => {
      this.scheduled = false;
      if (!this.mayStartWrite()) return;
      const write: Promise<void> = this.write(this.queue.splice(0, MAX_SETTLE_BATCH)).finally(() => {
        this.writes.delete(write);
        this.schedule();
      });
      this.writes.add(write);
      this.schedule();
    });
  }

  private mayStartWrite(): boolean {
    if (this.queue.length === 0) return false;
    if (this.writes.size === 0) return true;
    return this.writes.size < MAX_SETTLE_WRITES_IN_FLIGHT && this.queue.length >= SECOND_WRITE_MIN;
  }

  /** One statement for `batch`, retried until it succeeds (or, once closing, after a few tries). */
  private async write(batch: Pending[]): Promise<void> {
    let delay = this.retryBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const results = await this.backend.settle(batch.map((p) => p.item));
        results.forEach((r, i) => batch[i]!.resolve(r));
        return;
      } catch (err) {
        if (this.closed && attempt >= 3) {
          for (const p of batch) p.reject(err);
          return;
        }
        this.logger.warn({ err, jobs: batch.length, attempt }, 'settle-write-failed');
        await interruptibleSleep(delay).promise;
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /**
   * Writes a success together with the sub-jobs its handler buffered (`ctx.jobs`), alone, in one
   * transaction (`Backend.settleWithChildren`). A transient database error is retried like a batched
   * write (the ownership guard makes a retry after a lost reply a no-op that writes no child twice).
   * Any other error means the children cannot be written — a gate refused one — and nothing was:
   * it comes back as `refused`, for the caller to fail the attempt with it.
   */
  settleWithChildren(item: Settlement, children: readonly EnqueueArgs[]): Promise<ChildrenWrite> {
    const write = this.writeWithChildren(item, children).finally(() => this.childWrites.delete(write));
    this.childWrites.add(write);
    return write;
  }

  private async writeWithChildren(
    item: Settlement,
    children: readonly EnqueueArgs[],
  ): Promise<ChildrenWrite> {
    let delay = this.retryBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await this.backend.settleWithChildren(item, children);
        return { kind: 'written', result: out.result, children: out.children };
      } catch (err) {
        if (!isTransientError(err)) return { kind: 'refused', error: err };
        if (this.closed && attempt >= 3) throw err;
        this.logger.warn({ err, jobs: 1, children: children.length, attempt }, 'settle-write-failed');
        await interruptibleSleep(delay).promise;
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /** Waits until every queued outcome is written (or, once closing, given up after a few tries). */
  async drain(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0 || this.writes.size > 0 || this.scheduled || this.childWrites.size > 0) {
      if (this.writes.size > 0 || this.childWrites.size > 0)
        await Promise.race([...this.writes, ...this.childWrites]).catch(() => undefined);
      else await new Promise((r) => setImmediate(r));
    }
  }
}
