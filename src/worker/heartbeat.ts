import type { Backend } from '../backend/backend.js';
import type { Logger } from '../obs/logger.js';
import type { CancelController } from './cancel-controller.js';
import type { JobRunner } from './job-runner.js';
import { LoopService } from './loop-service.js';
import type { ProgressTracker } from './progress-tracker.js';

/** What the heartbeat needs. */
export interface HeartbeatOptions {
  workerId: string;
  intervalMs: number;
  leaseMs: number;
  maxFailures: number;
  /** Called once when renewals failed `maxFailures` times in a row: the worker must stop. */
  onFatal: (reason: string) => void;
  /** Extra renewal on each tick (reservation slot leases); must not throw. */
  renewExtra?: () => Promise<void>;
}

/**
 * Renews the leases of the jobs this worker holds, and marks the worker alive. A job that is no
 * longer owned (it was reclaimed after a lost lease) is reported to the runner, which stops it.
 * After `maxFailures` consecutive failed renewals the worker stops itself: its leases will expire
 * and the fleet will reclaim the jobs, which is safer than running on without a lease.
 */
export class Heartbeat extends LoopService {
  private failures = 0;
  private fatal = false;

  constructor(
    private readonly backend: Backend,
    private readonly runner: JobRunner,
    private readonly options: HeartbeatOptions,
    logger: Logger,
    private readonly cancels: CancelController | null = null,
    private readonly tracker: ProgressTracker | null = null,
  ) {
    super('heartbeat', logger);
  }

  protected intervalMs(): number {
    return this.options.intervalMs;
  }

  /**
   * One tick: renew leases (with handlers' heartbeat details), mark the worker alive, stop jobs
   * reclaimed elsewhere, poll cancel flags (the fallback of cancel NOTIFY) and advance the cancel
   * protocol; abandonments are written last, after the tick's own statements. Returns leases renewed.
   */
  async runOnce(): Promise<number> {
    const ids = this.runner.ownedJobIds();
    const renewed = new Set(
      ids.length > 0
        ? await this.backend.heartbeatJobs(
            this.options.workerId,
            ids,
            this.options.leaseMs,
            this.tracker?.heartbeatDetails(),
          )
        : [],
    );
    await this.backend.touchWorker(this.options.workerId);
    await this.options.renewExtra?.();
    const lost = ids.filter((id) => !renewed.has(id));
    if (lost.length > 0) this.runner.leaseLost(lost);
    let toAbandon: string[] = [];
    if (this.cancels) {
      if (renewed.size > 0)
        this.cancels.observeAll(await this.backend.pollCancelFlags(this.options.workerId));
      toAbandon = await this.cancels.advance();
    }
    this.failures = 0;
    if (toAbandon.length > 0) await this.cancels!.abandon(toAbandon);
    return renewed.size;
  }

  protected override onError(err: unknown): void {
    this.failures++;
    this.logger.warn({ err, failures: this.failures, max: this.options.maxFailures }, 'heartbeat-failed');
    if (this.failures >= this.options.maxFailures && !this.fatal) {
      this.fatal = true;
      this.options.onFatal(`${this.failures} consecutive heartbeats failed`);
    }
  }
}
