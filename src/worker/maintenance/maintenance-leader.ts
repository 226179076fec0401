import { CronFirer, type CronFirerOptions } from './cron-firer.js';
import type { Backend } from '../../backend/backend.js';
import type { Logger } from '../../obs/logger.js';
import type { WorkerSettings } from '../../settings/worker-settings.js';
import { LeaderElector } from './leader-elector.js';
import { MaintenanceSweeps, StrandedJobsDetector } from './maintenance-sweeps.js';
import { ArchiveExpiryScheduler, PruneScheduler } from './retention-scheduler.js';
import { ScheduledPromoter } from './scheduled-promoter.js';

/**
 * The maintenance side of a worker: it competes for leadership on every heartbeat tick and, while
 * leading, runs the sweeps — each a small loop with its own cadence, each `runOnce()`-testable:
 *
 * | loop | cadence | does |
 * | --- | --- | --- |
 * | election | heartbeat interval | renew the lease (`lockLease` long) or take a free one; advisory lock alongside |
 * | scheduled-promoter (Sweep 3) | 1 s, or sooner when a job is due | scheduled → pending, wake |
 * | maintenance-sweeps (Sweeps 1, 2) | `sweepInterval` | reclaim expired leases, deadlines, expired results, stale workers, stale batches |
 * | stranded-jobs | `strandedJobsInterval` | warn about jobs of unregistered actors |
 * | prune (Sweep 5) | daily `pruneScheduleUtc` / `pruneCronExpr` | terminal jobs → archive, then childless finished batch rows |
 * | archive-expiry (Sweep 6) | daily `archiveExpiryScheduleUtc` / cron | delete expired archive rows |
 * | cron | 1 s, or at once on taking the lead | fire due cron schedules (docs/cron.md) |
 *
 * Every sweep carries the leader's term (its fence): the backend refuses a sweep of a term that is
 * no longer the current lease, and the worker steps down. Every loop logs and retries transient
 * Postgres errors, and stops the worker after five unexpected errors in a row.
 */
export class MaintenanceLeader {
  readonly elector: LeaderElector;
  readonly promoter: ScheduledPromoter;
  readonly sweeps: MaintenanceSweeps;
  readonly stranded: StrandedJobsDetector;
  readonly prune: PruneScheduler;
  readonly archiveExpiry: ArchiveExpiryScheduler;
  readonly cron: CronFirer;

  constructor(
    backend: Backend,
    settings: WorkerSettings,
    identity: { workerId: string; hostname: string },
    logger: Logger,
    onFatal: (reason: string) => void,
    cron: Pick<CronFirerOptions, 'actors' | 'factories'> = { actors: new Map(), factories: new Map() },
  ) {
    this.elector = new LeaderElector(
      backend,
      identity,
      settings.heartbeatIntervalMs,
      settings.lockLeaseMs,
      logger,
    ).guardWith(onFatal);
    this.promoter = new ScheduledPromoter(backend, this.elector, 1000, logger).guardWith(onFatal);
    this.sweeps = new MaintenanceSweeps(
      backend,
      this.elector,
      {
        sweepIntervalMs: settings.sweepIntervalMs,
        cancellationGracePeriodMs: settings.cancellationGracePeriodMs,
        cleanupGracePeriodMs: settings.cleanupGracePeriodMs,
        staleWorkerAfterMs: Math.max(settings.lockLeaseMs * 2, settings.heartbeatIntervalMs * 10),
      },
      logger,
    ).guardWith(onFatal);
    this.stranded = new StrandedJobsDetector(
      backend,
      this.elector,
      settings.strandedJobsIntervalMs,
      logger,
    ).guardWith(onFatal);
    this.prune = new PruneScheduler(
      backend,
      this.elector,
      { cronExpr: settings.pruneCronExpr, dailyUtc: settings.pruneScheduleUtc },
      {
        succeededMs: settings.pruneRetentionSucceededMs,
        failedMs: settings.pruneRetentionFailedMs,
        cancelledMs: settings.pruneRetentionCancelledMs,
        abandonedMs: settings.pruneRetentionAbandonedMs,
        archiveMs: settings.archiveRetentionPeriodMs,
      },
      settings.pruneBatchSize,
      logger,
    ).guardWith(onFatal);
    this.archiveExpiry = new ArchiveExpiryScheduler(
      backend,
      this.elector,
      { cronExpr: settings.archiveExpiryCronExpr, dailyUtc: settings.archiveExpiryScheduleUtc },
      settings.pruneBatchSize,
      logger,
    ).guardWith(onFatal);
    this.cron = new CronFirer(
      backend,
      this.elector,
      {
        ...cron,
        catchUpWindowMs: settings.cronCatchUpWindowMs,
        autoDisableThreshold: settings.cronAutoDisableThreshold,
        payloadMaxBytes: settings.payloadMaxBytes,
        idempotencyMaxBytes: settings.idempotencyKeyMaxBytes,
      },
      logger,
    ).guardWith(onFatal);
    this.elector.onChange((leading) => {
      if (!leading) return;
      // A new leader looks at once instead of waiting out each loop's period.
      this.promoter.notify();
      this.sweeps.notify();
      this.cron.notify();
    });
  }

  /** True while this worker leads. */
  get isLeader(): boolean {
    return this.elector.isLeader;
  }

  /** Unexpected errors each loop tolerated since start, by loop name (metrics). */
  unexpectedErrors(): Map<string, number> {
    const loops = [
      this.elector,
      this.promoter,
      this.sweeps,
      this.stranded,
      this.prune,
      this.archiveExpiry,
      this.cron,
    ];
    return new Map(loops.map((l) => [l.name, l.unexpectedErrors]));
  }

  start(): void {
    this.elector.start();
    this.promoter.start();
    this.sweeps.start();
    this.stranded.start();
    this.prune.start();
    this.archiveExpiry.start();
    this.cron.start();
  }

  async stop(): Promise<void> {
    await Promise.all([
      this.promoter.stop(),
      this.sweeps.stop(),
      this.stranded.stop(),
      this.prune.stop(),
      this.archiveExpiry.stop(),
      this.cron.stop(),
    ]);
    await this.elector.stop();
  }
}
