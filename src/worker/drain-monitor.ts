import type { Backend } from '../backend/backend.js';
import type { Logger } from '../obs/logger.js';
import type { WorkerSettings } from '../settings/worker-settings.js';
import type { JobRunner } from './job-runner.js';
import { LoopService } from './loop-service.js';

/**
 * Until-idle mode: stops the worker once its queues have had no pending, scheduled or running job
 * (and nothing in flight locally) for `idleSettleWindow`; gives up after `idleMaxRuntime`.
 */
export class DrainMonitor extends LoopService {
  private readonly startedAt = performance.now();
  private idleSince: number | null = null;
  private done = false;

  constructor(
    private readonly backend: Backend,
    private readonly runner: JobRunner,
    private readonly settings: Pick<
      WorkerSettings,
      'queues' | 'idlePollIntervalMs' | 'idleSettleWindowMs' | 'idleMaxRuntimeMs'
    >,
    logger: Logger,
    private readonly onDone: (reason: 'idle' | 'idle-timeout') => void,
  ) {
    super('drain-monitor', logger);
  }

  protected intervalMs(): number {
    return this.settings.idlePollIntervalMs;
  }

  /** One check; returns the count of active jobs seen. */
  async runOnce(): Promise<number> {
    if (this.done) return 0;
    const now = performance.now();
    if (this.settings.idleMaxRuntimeMs !== null && now - this.startedAt > this.settings.idleMaxRuntimeMs) {
      this.done = true;
      this.logger.warn({ maxRuntimeMs: this.settings.idleMaxRuntimeMs }, 'until-idle-max-runtime-exceeded');
      this.onDone('idle-timeout');
      return -1;
    }
    const active = await this.backend.countActiveJobs(this.settings.queues);
    if (active > 0 || this.runner.inFlight > 0) {
      this.idleSince = null;
      return active;
    }
    this.idleSince ??= now;
    if (now - this.idleSince >= this.settings.idleSettleWindowMs) {
      this.done = true;
      this.logger.info({}, 'until-idle-queues-empty');
      this.onDone('idle');
    }
    return 0;
  }
}
