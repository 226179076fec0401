/** How stale a loop may get: `max(period × graceFactor, floorMs)`. */
export interface StalenessRule {
  /** `watchdogTickGraceFactor`. */
  graceFactor: number;
  /** `watchdogStaleFloorMs`. */
  floorMs: number;
}

/** One loop's liveness as of a check. */
export interface LoopAge {
  loop: string;
  /** Milliseconds since its last tick. */
  ageMs: number;
  /** The period it last announced. */
  periodMs: number;
  /** How old its tick may get before it is stale. */
  budgetMs: number;
}

/**
 * The per-loop tick registry of the stale-tick detector (the reference's `LoopLiveness`). Interval
 * loops tick once per pass with their period; a loop stopped on purpose is forgotten, and registers
 * again on its next tick. Event-driven code (the notify listener, the runner, the producer, whose
 * claims run beside its loop) never ticks and is not tracked: the event-loop lag detector and the
 * sibling contract cover it. Everything runs on the main thread, so no lock is needed.
 */
export class LoopLiveness {
  private readonly ticks = new Map<string, { at: number; periodMs: number }>();
  private firstTickSeen = false;
  private readonly onFirstTick: Array<() => void> = [];

  constructor(
    private readonly rule: StalenessRule,
    /** Monotonic milliseconds. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Records a pass of `loop`, which should tick again within about `periodMs`. */
  tick(loop: string, periodMs: number): void {
    this.ticks.set(loop, { at: this.now(), periodMs });
    if (this.firstTickSeen) return;
    this.firstTickSeen = true;
    for (const fn of this.onFirstTick.splice(0)) fn();
  }

  /** Stops tracking `loop` (it was stopped on purpose). */
  forget(loop: string): void {
    this.ticks.delete(loop);
  }

  /** Calls `fn` once, on the first tick of any loop (at once if one already ticked). */
  whenFirstTick(fn: () => void): void {
    if (this.firstTickSeen) fn();
    else this.onFirstTick.push(fn);
  }

  /** The staleness budget of a loop with this period. */
  budgetMs(periodMs: number): number {
    return Math.max(periodMs * this.rule.graceFactor, this.rule.floorMs);
  }

  /** Every tracked loop's age and budget, oldest first. */
  ages(): LoopAge[] {
    return this.measure().map((a) => ({ ...a, ageMs: Math.round(a.ageMs) }));
  }

  /** The loops whose last tick is older than their budget. */
  stale(): LoopAge[] {
    return this.measure()
      .filter((a) => a.ageMs > a.budgetMs)
      .map((a) => ({ ...a, ageMs: Math.round(a.ageMs) }));
  }

  private measure(): LoopAge[] {
    const now = this.now();
    return [...this.ticks]
      .map(([loop, t]) => ({
        loop,
        ageMs: now - t.at,
        periodMs: t.periodMs,
        budgetMs: this.budgetMs(t.periodMs),
      }))
      .sort((a, b) => b.ageMs - a.ageMs);
  }
}
