import type { Logger } from '../../obs/logger.js';
import type { WatchdogTrip } from './watchdog-trip.js';

/** What {@link ShutdownWatchdog} needs. */
export interface ShutdownWatchdogOptions {
  /** `terminationGracePeriodMs`: the whole shutdown's budget, from the first stop request. */
  deadlineMs: number;
  /** `watchdogDumpIntervalMs`: time between straggler records. */
  dumpIntervalMs: number;
  /** `watchdogDumpAfterFraction`: the share of the budget spent before straggler records begin. */
  dumpAfterFraction: number;
  /** What is still running, for the straggler records (phase, jobs in flight, loops). */
  stragglers: () => Record<string, unknown>;
  /** Monotonic milliseconds. */
  now?: () => number;
}

/** What one check of the shutdown watchdog did. */
export type ShutdownCheck = 'idle' | 'waiting' | 'stragglers-logged' | 'tripped';

/**
 * Detector 1, the shutdown deadline: `terminationGracePeriod` is a hard wall. Armed by the first
 * stop request (not by a later phase, so the cancellation and cleanup graces count against it),
 * it logs `shutdown-watchdog-armed` once, logs what is still running every `watchdogDumpInterval`
 * once `watchdogDumpAfterFraction` of the budget is spent (a drain in its front half is normal and
 * stays quiet), and trips (exit 2) when the budget runs out. Its timer is not unref'd: a shutdown
 * wedged on a promise that never settles must end in a trip, not in a silent exit 0.
 */
export class ShutdownWatchdog {
  private armedAt: number | null = null;
  private lastDumpAt: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private tripped = false;
  private readonly now: () => number;

  constructor(
    private readonly options: ShutdownWatchdogOptions,
    private readonly trip: WatchdogTrip,
    private readonly logger: Logger,
  ) {
    this.now = options.now ?? (() => performance.now());
  }

  /** True between {@link arm} and {@link disarm}. */
  get armed(): boolean {
    return this.armedAt !== null;
  }

  /** Starts the countdown (the first stop request); later calls change nothing. */
  arm(): void {
    if (this.armedAt !== null) return;
    this.armedAt = this.now();
    const { deadlineMs, dumpAfterFraction } = this.options;
    this.logger.info(
      { deadlineMs, dumpAfterMs: Math.round(deadlineMs * dumpAfterFraction) },
      'shutdown-watchdog-armed',
    );
    this.schedule();
  }

  /** The shutdown finished: stop the countdown. */
  disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.armedAt === null) return;
    this.logger.debug({ shutdownMs: Math.round(this.now() - this.armedAt) }, 'shutdown-watchdog-disarmed');
    this.armedAt = null;
  }

  /** One check: trips past the deadline, logs stragglers in the back part of the budget. */
  runOnce(): ShutdownCheck {
    if (this.armedAt === null || this.tripped) return 'idle';
    const now = this.now();
    const elapsedMs = Math.round(now - this.armedAt);
    const { deadlineMs, dumpIntervalMs, dumpAfterFraction } = this.options;
    if (now - this.armedAt >= deadlineMs) {
      this.tripped = true;
      this.trip.trip(
        'shutdown-deadline',
        `shutdown still running after ${elapsedMs} ms (terminationGracePeriod ${deadlineMs} ms)`,
        { elapsedMs, deadlineMs },
      );
      return 'tripped';
    }
    const dumpDue =
      now - this.armedAt >= deadlineMs * dumpAfterFraction &&
      (this.lastDumpAt === null || now - this.lastDumpAt >= dumpIntervalMs);
    if (!dumpDue) return 'waiting';
    this.lastDumpAt = now;
    this.logger.warn(
      { elapsedMs, deadlineMs, leftMs: deadlineMs - elapsedMs, ...this.options.stragglers() },
      'shutdown-stragglers',
    );
    return 'stragglers-logged';
  }

  /** The next moment worth a check: the next straggler record or the deadline. */
  private nextCheckInMs(): number {
    const elapsed = this.now() - (this.armedAt ?? this.now());
    const { deadlineMs, dumpIntervalMs, dumpAfterFraction } = this.options;
    const dumpFrom = deadlineMs * dumpAfterFraction;
    const nextDump =
      elapsed < dumpFrom
        ? dumpFrom
        : this.lastDumpAt === null
          ? elapsed
          : this.lastDumpAt - this.armedAt! + dumpIntervalMs;
    return Math.max(1, Math.min(deadlineMs, nextDump) - elapsed);
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      const check = this.runOnce();
      if (check !== 'idle' && check !== 'tripped') this.schedule();
    }, this.nextCheckInMs());
  }
}
