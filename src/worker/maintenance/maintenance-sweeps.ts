import type { Backend } from '../../backend/backend.js';
import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';
import type { LeaderElector } from './leader-elector.js';

/** Most rows one sweep statement touches; a full batch makes the sweep go again at once. */
export const SWEEP_BATCH = 1000;

/** What one pass of the sweep loop did. */
export interface SweepReport {
  reclaimed: number;
  retried: number;
  deadlineFailed: number;
  resultsExpired: number;
  staleWorkers: number;
  /**
   * Ids of active sealed batches the safety net completed: every child was terminal, yet the batch
   * was still active. The jobs trigger completes a batch as its last child ends, so each is logged
   * as a warning.
   */
  staleBatchesCompleted: string[];
}

/** Settings the sweep loop reads. */
export interface SweepSettings {
  sweepIntervalMs: number;
  cancellationGracePeriodMs: number;
  cleanupGracePeriodMs: number;
  /** Workers not seen for this long are removed from the registry. */
  staleWorkerAfterMs: number;
}

/**
 * Leader only, every `sweepInterval`: Sweep 1 (reclaim expired leases), Sweep 2 (deadlines), expired
 * results, stale workers and stale batches (the safety net behind the jobs trigger). Each statement is bounded; a full batch repeats within the same pass.
 * Every statement carries the leader's term: once another worker has taken over, the backend refuses
 * it, the pass ends and this worker steps down.
 */
export class MaintenanceSweeps extends LoopService {
  /** Jobs the deadline sweep failed since start, while this worker led (metrics). */
  deadlineFailedTotal = 0;

  constructor(
    private readonly backend: Backend,
    private readonly elector: LeaderElector,
    private readonly settings: SweepSettings,
    logger: Logger,
  ) {
    super('maintenance-sweeps', logger);
  }

  protected intervalMs(): number {
    return this.settings.sweepIntervalMs;
  }

  /** One pass (no-op unless leader). */
  async runOnce(): Promise<SweepReport> {
    const report: SweepReport = {
      reclaimed: 0,
      retried: 0,
      deadlineFailed: 0,
      resultsExpired: 0,
      staleWorkers: 0,
      staleBatchesCompleted: [],
    };
    let term: string | null = null;
    const swept = await this.elector.fenced(async (fence) => {
      term = fence.term;
      for (;;) {
        const r = await this.backend.reclaimExpiredLocks(
          this.settings.cancellationGracePeriodMs,
          this.settings.cleanupGracePeriodMs,
          SWEEP_BATCH,
          fence,
        );
        report.reclaimed += r.reclaimed;
        report.retried += r.retried;
        if (r.reclaimed < SWEEP_BATCH) break;
      }
      for (;;) {
        const n = await this.backend.deadlineSweep(SWEEP_BATCH, fence);
        report.deadlineFailed += n;
        this.deadlineFailedTotal += n;
        if (n < SWEEP_BATCH) break;
      }
      for (;;) {
        const n = await this.backend.sweepExpiredResults(SWEEP_BATCH, fence);
        report.resultsExpired += n;
        if (n < SWEEP_BATCH) break;
      }
      report.staleWorkers = await this.backend.cleanupStaleWorkers(this.settings.staleWorkerAfterMs, fence);
      for (;;) {
        const ids = await this.backend.completeStaleBatches(SWEEP_BATCH, fence);
        report.staleBatchesCompleted.push(...ids);
        if (ids.length < SWEEP_BATCH) break;
      }
      return fence;
    });
    if (swept !== null) await this.backend.refreshStatistics?.();
    if (report.reclaimed > 0)
      this.logger.warn(
        { reclaimed: report.reclaimed, retried: report.retried, term },
        'expired-leases-reclaimed',
      );
    if (report.deadlineFailed > 0)
      this.logger.info({ failed: report.deadlineFailed, term }, 'deadline-sweep-failed-jobs');
    if (report.staleBatchesCompleted.length > 0)
      this.logger.warn(
        {
          completed: report.staleBatchesCompleted.length,
          batchIds: report.staleBatchesCompleted.slice(0, 20),
          term,
        },
        'stale-batches-completed',
      );
    return report;
  }
}

/**
 * Leader only, every `strandedJobsInterval`: warns about pending/scheduled jobs whose actor has no
 * `actor_config` row — no worker ever registered it (or it was removed), so nothing will run them.
 */
export class StrandedJobsDetector extends LoopService {
  constructor(
    private readonly backend: Backend,
    private readonly elector: LeaderElector,
    private readonly periodMs: number,
    logger: Logger,
  ) {
    super('stranded-jobs', logger);
  }

  protected intervalMs(): number {
    return this.periodMs;
  }

  async runOnce(): Promise<{ actor: string; jobs: number }[]> {
    // A read: it needs no fence, only the (local) leadership, so that one worker warns.
    if (!this.elector.isLeader) return [];
    const stranded = await this.backend.strandedActors();
    for (const s of stranded)
      this.logger.warn({ actor: s.actor, jobs: s.jobs }, 'stranded-jobs-no-actor-config');
    return stranded;
  }
}
