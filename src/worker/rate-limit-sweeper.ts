import type { Logger } from '../obs/logger.js';
import { LoopService } from './loop-service.js';
import type { RateLimitGate } from './rate-limit-gate.js';

/** Cadence of the keyed-limit sweep (seed: every worker's 30-second sweep). */
export const RATE_LIMIT_SWEEP_INTERVAL_MS = 30_000;

/**
 * Every 30 s: every worker forgets keyed limits idle for an hour (they re-materialise on next use,
 * so a worker that saw many tenants does not grow without bound); the maintenance leader also
 * deletes keyed state idle for an hour from the shared store, fleet-wide (rows of a process that
 * died).
 */
export class RateLimitSweeper extends LoopService {
  constructor(
    private readonly gate: RateLimitGate,
    private readonly isLeader: () => boolean,
    logger: Logger,
    private readonly periodMs = RATE_LIMIT_SWEEP_INTERVAL_MS,
  ) {
    super('ratelimit-sweeper', logger);
  }

  protected intervalMs(): number {
    return this.periodMs;
  }

  /** One pass; returns how many keyed entries this process forgot. */
  async runOnce(): Promise<number> {
    const evicted = this.gate.evictIdle();
    if (this.isLeader()) await this.gate.sweepFleet();
    return evicted;
  }
}
