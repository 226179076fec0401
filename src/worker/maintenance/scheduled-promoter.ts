import type { Backend } from '../../backend/backend.js';
import type { PromotionResult } from '../../backend/worker-types.js';
import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';
import type { LeaderElector } from './leader-elector.js';

/** Most jobs promoted per statement. */
export const PROMOTION_BATCH = 10_000;

/**
 * Sweep 3, leader only: every second (or sooner, when the next scheduled job is due earlier) moves
 * due `scheduled` jobs to `pending` and wakes the producers, so retry back-offs and snoozes of a
 * few milliseconds stay a few milliseconds.
 */
export class ScheduledPromoter extends LoopService {
  private nextMs: number;

  constructor(
    private readonly backend: Backend,
    private readonly elector: LeaderElector,
    private readonly periodMs: number,
    logger: Logger,
  ) {
    super('scheduled-promoter', logger);
    this.nextMs = periodMs;
  }

  protected intervalMs(): number {
    return this.nextMs;
  }

  /** One pass (no-op unless leader). */
  async runOnce(): Promise<PromotionResult> {
    const result = await this.elector.fenced((fence) =>
      this.backend.scheduledToPending(PROMOTION_BATCH, fence),
    );
    if (result === null) {
      this.nextMs = this.periodMs;
      return { promoted: 0, nextDueInMs: null };
    }
    if (result.promoted >= PROMOTION_BATCH) this.nextMs = 0;
    else
      this.nextMs =
        result.nextDueInMs === null
          ? this.periodMs
          : Math.min(this.periodMs, Math.max(1, result.nextDueInMs));
    return result;
  }
}
