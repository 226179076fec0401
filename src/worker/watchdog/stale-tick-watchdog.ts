import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';
import type { LoopAge, LoopLiveness } from './loop-liveness.js';
import type { WatchdogTrip } from './watchdog-trip.js';

/**
 * Detector 2, stale loop ticks: every `watchdogCheckInterval` it looks at the {@link LoopLiveness}
 * registry and trips when a service loop has not ticked for `max(period × watchdogTickGraceFactor,
 * watchdogStaleFloor)` — the loop is awaiting something that will never come (a query without a
 * timeout on a dead socket, a lost wake-up), so the worker looks alive while it does nothing. The
 * trip ends the process (exit 2); its jobs are reclaimed when their leases expire.
 */
export class StaleTickWatchdog extends LoopService {
  private tripped = false;

  constructor(
    private readonly liveness: LoopLiveness,
    private readonly trip: WatchdogTrip,
    private readonly checkIntervalMs: number,
    logger: Logger,
  ) {
    super('watchdog-stale-ticks', logger);
  }

  protected intervalMs(): number {
    return this.checkIntervalMs;
  }

  /** One check: trips when any loop is stale. Returns the stale loops (empty when all are alive). */
  async runOnce(): Promise<LoopAge[]> {
    const stale = this.liveness.stale();
    if (stale.length === 0 || this.tripped) return stale;
    this.tripped = true;
    const worst = stale[0]!;
    this.trip.trip(
      'stale-tick',
      `loop ${worst.loop} has not ticked for ${worst.ageMs} ms (budget ${worst.budgetMs} ms)`,
      { stale, loops: this.liveness.ages() },
    );
    return stale;
  }
}
