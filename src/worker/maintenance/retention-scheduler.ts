import { Cron } from 'croner';

import type { Backend } from '../../backend/backend.js';
import type { RetentionPolicy } from '../../backend/worker-types.js';
import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';
import type { LeaderElector } from './leader-elector.js';

/** When a daily job runs: a 5-field cron expression (UTC) or a daily `HH:MM` (UTC). */
export interface DailySchedule {
  cronExpr: string | null;
  dailyUtc: string;
}

/** The next time after `from` that `schedule` fires. */
export function nextRunAfter(schedule: DailySchedule, from: Date): Date {
  if (schedule.cronExpr) {
    const next = new Cron(schedule.cronExpr, { timezone: 'UTC' }).nextRun(from);
    if (!next) throw new Error(`cron expression ${JSON.stringify(schedule.cronExpr)} never fires`);
    return next;
  }
  const [hh, mm] = schedule.dailyUtc.split(':').map(Number) as [number, number];
  const next = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate(), hh, mm));
  if (next <= from) next.setUTCDate(next.getUTCDate() + 1);
  return next;
}

/** Longest single sleep of the schedulers (they re-check leadership and the clock at least this often). */
const MAX_SLEEP_MS = 60_000;

/**
 * A leader-only job that runs on a daily schedule. The schedule decides when to *start*; which rows
 * qualify is always decided by the database clock inside the statements.
 */
abstract class ScheduledMaintenance extends LoopService {
  private due: Date;

  protected constructor(
    name: string,
    protected readonly elector: LeaderElector,
    private readonly schedule: DailySchedule,
    logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {
    super(name, logger);
    this.due = nextRunAfter(schedule, this.now());
  }

  /** When the next run is due. */
  get nextRunAt(): Date {
    return this.due;
  }

  protected intervalMs(): number {
    return Math.max(0, Math.min(MAX_SLEEP_MS, this.due.getTime() - this.now().getTime()));
  }

  /** Untracked by the watchdog's stale-tick detector: a run goes on batch after batch until done. */
  protected override livenessPeriodMs(): null {
    return null;
  }

  /** Runs when due (and leader); returns what the run did, or null when nothing was due. */
  async runOnce(): Promise<unknown> {
    const now = this.now();
    if (now < this.due) return null;
    this.due = nextRunAfter(this.schedule, now);
    if (!this.elector.isLeader) return null;
    return this.runNow();
  }

  /**
   * Runs the job immediately (tests, operators), behind the leader's term: null when this worker
   * does not lead, or stopped leading half-way (the batches done so far stay done).
   */
  abstract runNow(): Promise<unknown>;
}

/** What one run of {@link PruneScheduler} did. */
export interface PruneReport {
  /** Jobs moved to the archive. */
  archived: number;
  /** Their attempts moved along. */
  attempts: number;
  /** Statements run (each moves at most `pruneBatchSize` jobs). */
  batches: number;
  /** Batch rows deleted: finished past the retention, with no child left in the jobs table. */
  batchRowsDeleted: number;
}

/**
 * How long a finished batch row stays: the longest job retention, so a row outlives every child
 * the job prune could still keep (the row also waits until no child is left in the jobs table).
 */
export function batchRetentionMs(retention: RetentionPolicy): number {
  return Math.max(retention.succeededMs, retention.failedMs, retention.cancelledMs, retention.abandonedMs);
}

/**
 * Sweep 5: moves terminal jobs past their retention to the archive, batch by batch, then deletes
 * the batch rows left without children.
 */
export class PruneScheduler extends ScheduledMaintenance {
  constructor(
    private readonly backend: Backend,
    elector: LeaderElector,
    schedule: DailySchedule,
    private readonly retention: RetentionPolicy,
    private readonly batchSize: number,
    logger: Logger,
    now?: () => Date,
  ) {
    super('prune', elector, schedule, logger, now);
  }

  async runNow(): Promise<PruneReport | null> {
    const total: PruneReport = { archived: 0, attempts: 0, batches: 0, batchRowsDeleted: 0 };
    const done = await this.elector.fenced(async (fence) => {
      for (;;) {
        const r = await this.backend.pruneJobs(this.retention, this.batchSize, fence);
        total.archived += r.archived;
        total.attempts += r.attempts;
        total.batches++;
        if (r.archived < this.batchSize) break;
      }
      // After the jobs: a batch row goes only once its children have left the jobs table.
      const retentionMs = batchRetentionMs(this.retention);
      for (;;) {
        const n = await this.backend.pruneBatches(retentionMs, this.batchSize, fence);
        total.batchRowsDeleted += n;
        if (n < this.batchSize) return fence;
      }
    });
    if (done === null) return null;
    this.logger.info({ ...total, term: done.term }, 'prune-finished');
    return total;
  }
}

/** Sweep 6: deletes archived jobs past their expiry, batch by batch. */
export class ArchiveExpiryScheduler extends ScheduledMaintenance {
  constructor(
    private readonly backend: Backend,
    elector: LeaderElector,
    schedule: DailySchedule,
    private readonly batchSize: number,
    logger: Logger,
    now?: () => Date,
  ) {
    super('archive-expiry', elector, schedule, logger, now);
  }

  async runNow(): Promise<{ deleted: number; batches: number } | null> {
    const total = { deleted: 0, batches: 0 };
    const done = await this.elector.fenced(async (fence) => {
      for (;;) {
        const n = await this.backend.expireArchive(this.batchSize, fence);
        total.deleted += n;
        total.batches++;
        if (n < this.batchSize) return fence;
      }
    });
    if (done === null) return null;
    this.logger.info({ ...total, term: done.term }, 'archive-expiry-finished');
    return total;
  }
}
