import { writeSync } from 'node:fs';

import type { Logger } from '../../obs/logger.js';

/** Exit code of a process the watchdog ended (the reference's `EXIT_WATCHDOG`). */
export const EXIT_WATCHDOG = 2;

/**
 * The four detectors: `shutdown-deadline` (a shutdown outran `terminationGracePeriod`),
 * `stale-tick` (a service loop stopped ticking), `sibling-contract` (a service loop ended while the
 * worker was not stopping) and `loop-lag` (the event loop ran no beat for `watchdogLoopLagBudget`).
 */
export type WatchdogDetector = 'shutdown-deadline' | 'stale-tick' | 'sibling-contract' | 'loop-lag';

/** The detectors, in the reference's order. */
export const WATCHDOG_DETECTORS: readonly WatchdogDetector[] = [
  'shutdown-deadline',
  'stale-tick',
  'sibling-contract',
  'loop-lag',
];

/** What {@link WatchdogTrip} needs. */
export interface WatchdogTripOptions {
  logger: Logger;
  /** Ends the process. Default `process.exit`; tests pass a recorder. */
  exit?: (code: number) => void;
  /** Writes the dump, synchronously. Default: `fs.writeSync` to stderr, which no logger can lose. */
  writeDump?: (text: string) => void;
  /** The worker's state for the dump (phase, jobs in flight, loop ages, …): facts only, no payloads. */
  describe?: () => Record<string, unknown>;
}

/** Writes `text` to stderr at once, bypassing streams (which a wedged process may never flush). */
export function writeToStderr(text: string): void {
  try {
    writeSync(2, text.endsWith('\n') ? text : `${text}\n`);
  } catch {
    // stderr closed: the log record is all there is.
  }
}

/**
 * The trip sequence, the same for every detector: count the trip, log one critical record naming
 * the detector and its figures, write a dump to stderr, and end the process with exit code 2 with
 * no further awaits. A wedged process cannot be trusted to unwind, so nothing is cleaned up: the
 * supervisor restarts the worker and the leader reclaims its jobs when their leases expire.
 */
export class WatchdogTrip {
  private readonly counts: Record<WatchdogDetector, number> = {
    'shutdown-deadline': 0,
    'stale-tick': 0,
    'sibling-contract': 0,
    'loop-lag': 0,
  };
  private readonly exit: (code: number) => void;
  private readonly writeDump: (text: string) => void;

  constructor(private readonly options: WatchdogTripOptions) {
    this.exit = options.exit ?? ((code) => process.exit(code));
    this.writeDump = options.writeDump ?? writeToStderr;
  }

  /** Trips so far, by detector (the `taskq.worker.watchdog_trips_total` counter). */
  get trips(): Readonly<Record<WatchdogDetector, number>> {
    return { ...this.counts };
  }

  /**
   * Counts, logs and dumps (unless `dump: false`: the loop-lag thread wrote its own), then ends the
   * process with {@link EXIT_WATCHDOG}.
   */
  trip(
    detector: WatchdogDetector,
    reason: string,
    figures: Record<string, unknown>,
    options: { dump?: boolean } = {},
  ): void {
    this.report(detector, reason, figures, options);
    this.exit(EXIT_WATCHDOG);
  }

  /**
   * Counts, logs and dumps without ending the process: for the sibling contract, whose worker shuts
   * down (and exits 2) under the shutdown deadline.
   */
  report(
    detector: WatchdogDetector,
    reason: string,
    figures: Record<string, unknown>,
    options: { dump?: boolean } = {},
  ): void {
    this.counts[detector]++;
    const state = this.describe();
    logCritical(this.options.logger, { detector, reason, ...figures, ...state }, 'watchdog-trip');
    if (options.dump ?? true) this.writeDump(formatDump(detector, reason, figures, state));
  }

  private describe(): Record<string, unknown> {
    try {
      return this.options.describe?.() ?? {};
    } catch (err) {
      return { describeFailed: String(err) };
    }
  }
}

/** pino's `fatal` (the reference's CRITICAL) when the logger has one, else `error`. */
export function logCritical(logger: Logger, obj: object, msg: string): void {
  const fatal = (logger as Logger & { fatal?: Logger['error'] }).fatal;
  if (typeof fatal === 'function') fatal.call(logger, obj, msg);
  else logger.error(obj, msg);
}

/** The dump as text: what tripped, its figures, then the worker's state, one fact a line. */
export function formatDump(
  detector: WatchdogDetector,
  reason: string,
  figures: Record<string, unknown>,
  state: Record<string, unknown>,
): string {
  const lines = [`taskq watchdog trip (${detector}): ${reason}`, `  pid: ${process.pid}`];
  for (const [key, value] of Object.entries({ ...figures, ...state }))
    lines.push(`  ${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return `${lines.join('\n')}\n`;
}
