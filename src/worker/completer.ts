import type { Backend } from '../backend/backend.js';
import type { Settlement, SettleResult } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';
import { interruptibleSleep } from './sleep.js';

interface Pending {
  item: Settlement;
  resolve: (r: SettleResult) => void;
  reject: (err: unknown) => void;
}

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

  /** Waits until every queued outcome is written (or, once closing, given up after a few tries). */
  async drain(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0 || this.writes.size > 0 || this.scheduled) {
      if (this.writes.size > 0) await Promise.race(this.writes);
      else await new Promise((r) => setImmediate(r));
    }
  }
}
