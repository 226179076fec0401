/** The loop-lag detector's settings, in milliseconds. */
export interface LoopLagBudgets {
  /** `watchdogLoopLagBudget`: a stall this long ends the process. */
  budgetMs: number;
  /** `watchdogLoopLagWarnBudget`: a stall this long is reported once (at or above `budgetMs`: never). */
  warnBudgetMs: number;
  /** `watchdogLoopLagStartupGrace`: the detector arms this long after it starts, or at the first loop tick. */
  startupGraceMs: number;
  /** `watchdogCheckInterval`: the longest time between two looks at the beat. */
  checkIntervalMs: number;
}

/** What one look at the beat found. */
export interface LoopLagVerdict {
  /** `unarmed`: still in the startup grace; `warn`: the warn budget was just passed; `trip`: the budget was. */
  kind: 'unarmed' | 'ok' | 'warn' | 'trip';
  /** Milliseconds since the last beat (or since arming, when that is later). */
  lagMs: number;
  /** When to look next, in milliseconds: at the latest after `checkIntervalMs`, sooner when a budget falls due. */
  nextCheckInMs: number;
}

/**
 * The decisions of the event-loop lag detector, apart from its thread so they can be tested on
 * plain numbers. The main thread writes a beat (a monotonic timestamp) every half check interval;
 * the lag is the time since the last one. Before arming nothing counts, and the lag is measured
 * from the arming at most, so a startup that blocked the loop is not held against it. A stall is
 * warned about once, and trips when it reaches the budget. The next look is timed for the moment a
 * budget falls due, so a trip lands at the budget, not up to a check interval after it.
 */
export class LoopLagMonitor {
  private armedAt: number | null = null;
  private warnedBeat: number | null = null;
  private tripped = false;

  constructor(
    private readonly budgets: LoopLagBudgets,
    /** When the detector started (same clock as the calls below). */
    private readonly startedAt: number,
  ) {}

  /** True once armed (after the startup grace or the first loop tick). */
  get armed(): boolean {
    return this.armedAt !== null;
  }

  /**
   * One look: `now` and `lastBeat` are monotonic milliseconds; `ticked` says whether any service
   * loop has ticked yet (which arms the detector before the grace ends).
   */
  check(now: number, lastBeat: number, ticked: boolean): LoopLagVerdict {
    const { budgetMs, warnBudgetMs, startupGraceMs, checkIntervalMs } = this.budgets;
    if (this.armedAt === null) {
      const graceLeft = this.startedAt + startupGraceMs - now;
      if (!ticked && graceLeft > 0)
        return { kind: 'unarmed', lagMs: 0, nextCheckInMs: Math.min(checkIntervalMs, graceLeft) };
      this.armedAt = now;
    }
    const since = Math.max(lastBeat, this.armedAt);
    const lagMs = now - since;
    const next = (dueAt: number): number => Math.max(1, Math.min(checkIntervalMs, dueAt - now));
    if (lagMs >= budgetMs && !this.tripped) {
      this.tripped = true;
      return { kind: 'trip', lagMs, nextCheckInMs: checkIntervalMs };
    }
    const warnDue = warnBudgetMs < budgetMs && this.warnedBeat !== since;
    if (warnDue && lagMs >= warnBudgetMs) {
      this.warnedBeat = since;
      return { kind: 'warn', lagMs, nextCheckInMs: next(since + budgetMs) };
    }
    const dueAt = warnDue ? since + warnBudgetMs : since + budgetMs;
    return { kind: 'ok', lagMs, nextCheckInMs: next(dueAt) };
  }
}
