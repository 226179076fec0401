import type { Logger } from '../../obs/logger.js';
import type { WorkerSettings } from '../../settings/worker-settings.js';
import { observeLoops, type LoopObserver } from '../loop-service.js';
import { LoopLagWatchdog } from './loop-lag-watchdog.js';
import { LoopLiveness, type LoopAge } from './loop-liveness.js';
import { ShutdownWatchdog } from './shutdown-watchdog.js';
import { SiblingContract } from './sibling-contract.js';
import { StaleTickWatchdog } from './stale-tick-watchdog.js';
import { WatchdogTrip, type WatchdogDetector } from './watchdog-trip.js';

/** The settings the watchdog reads. */
export type WatchdogSettings = Pick<
  WorkerSettings,
  | 'terminationGracePeriodMs'
  | 'watchdogLoopLagBudgetMs'
  | 'watchdogLoopLagWarnBudgetMs'
  | 'watchdogLoopLagStartupGraceMs'
  | 'watchdogTickGraceFactor'
  | 'watchdogDumpIntervalMs'
  | 'watchdogDumpAfterFraction'
  | 'watchdogStaleFloorMs'
  | 'watchdogCheckIntervalMs'
>;

/** What {@link Watchdog} needs from the worker. */
export interface WatchdogOptions {
  settings: WatchdogSettings;
  workerId: string;
  logger: Logger;
  /** The worker's state for dumps and straggler records (phase, jobs in flight): facts, no payloads. */
  describeWorker: () => Record<string, unknown>;
  /** True once the worker is shutting down (loops ending then keep the sibling contract). */
  isStopping: () => boolean;
  /** Tears the worker down after a broken sibling contract (a graceful stop that exits 2). */
  onSiblingBroke: (reason: string) => void;
  /** Ends the process; default `process.exit`. */
  exit?: (code: number) => void;
  /** Writes a dump synchronously; default stderr. */
  writeDump?: (text: string) => void;
  /** Monotonic milliseconds for the in-loop detectors; default `performance.now`. */
  now?: () => number;
  /** Start the loop-lag thread (detector 4). Default true. */
  loopLag?: boolean;
}

/**
 * The worker's hang detection (the reference's watchdog): four independent detectors that end a
 * wedged process with exit code 2 so its supervisor restarts it, instead of leaving a worker that
 * looks alive and does nothing.
 *
 * 1. {@link ShutdownWatchdog}: a shutdown that outruns `terminationGracePeriod`.
 * 2. {@link StaleTickWatchdog}: a service loop that stopped ticking (it observes every
 *    `LoopService` the worker starts inside {@link observeLoops}).
 * 3. {@link SiblingContract}: a service loop that ended while the worker was running.
 * 4. {@link LoopLagWatchdog}: an event loop blocked for `watchdogLoopLagBudget`, seen from a thread.
 *
 * Every trip goes through {@link WatchdogTrip}: a counter by detector, one critical `watchdog-trip`
 * record, a dump on stderr, exit 2. The watchdog is not something the services depend on: it only
 * watches them.
 */
export class Watchdog implements LoopObserver {
  readonly trip: WatchdogTrip;
  readonly liveness: LoopLiveness;
  readonly staleTicks: StaleTickWatchdog;
  readonly siblings: SiblingContract;
  readonly shutdown: ShutdownWatchdog;
  readonly loopLag: LoopLagWatchdog | null;

  constructor(private readonly options: WatchdogOptions) {
    const s = options.settings;
    const logger = options.logger.child({ component: 'watchdog' });
    this.liveness = new LoopLiveness(
      { graceFactor: s.watchdogTickGraceFactor, floorMs: s.watchdogStaleFloorMs },
      options.now,
    );
    this.trip = new WatchdogTrip({
      logger,
      describe: () => this.describe(),
      ...(options.exit ? { exit: options.exit } : {}),
      ...(options.writeDump ? { writeDump: options.writeDump } : {}),
    });
    this.staleTicks = new StaleTickWatchdog(this.liveness, this.trip, s.watchdogCheckIntervalMs, logger);
    this.siblings = new SiblingContract(this.trip, options.isStopping, options.onSiblingBroke);
    this.shutdown = new ShutdownWatchdog(
      {
        deadlineMs: s.terminationGracePeriodMs,
        dumpIntervalMs: s.watchdogDumpIntervalMs,
        dumpAfterFraction: s.watchdogDumpAfterFraction,
        stragglers: () => this.describe(),
        ...(options.now ? { now: options.now } : {}),
      },
      this.trip,
      logger,
    );
    this.loopLag =
      options.loopLag === false
        ? null
        : new LoopLagWatchdog({
            budgets: {
              budgetMs: s.watchdogLoopLagBudgetMs,
              warnBudgetMs: s.watchdogLoopLagWarnBudgetMs,
              startupGraceMs: s.watchdogLoopLagStartupGraceMs,
              checkIntervalMs: s.watchdogCheckIntervalMs,
            },
            workerId: options.workerId,
            trip: this.trip,
            logger,
          });
  }

  /** Trips so far, by detector. */
  get trips(): Readonly<Record<WatchdogDetector, number>> {
    return this.trip.trips;
  }

  /** Starts the loop-lag thread and the stale-tick check (the shutdown deadline waits for {@link shutdownStarted}). */
  start(): void {
    this.loopLag?.start();
    this.liveness.whenFirstTick(() => this.loopLag?.armNow());
    this.staleTicks.start();
  }

  /** Runs `fn` so that the service loops it starts report their ticks and their end here. */
  observeLoops<T>(fn: () => T): T {
    return observeLoops(this, fn);
  }

  /** The first stop request: the shutdown deadline starts counting. */
  shutdownStarted(): void {
    this.shutdown.arm();
  }

  /** The worker stopped: every detector stands down. */
  async stop(): Promise<void> {
    this.shutdown.disarm();
    await this.staleTicks.stop();
    await this.loopLag?.stop();
  }

  /** Every tracked service loop's age and staleness budget (for `/tasks`). */
  loopAges(): LoopAge[] {
    return this.liveness.ages();
  }

  /** {@link LoopObserver}: a loop's pass. */
  tick(loop: string, periodMs: number): void {
    this.liveness.tick(loop, periodMs);
  }

  /** {@link LoopObserver}: a loop stopped on purpose. */
  forget(loop: string): void {
    this.liveness.forget(loop);
  }

  /** {@link LoopObserver}: a loop ended without being stopped. */
  ended(loop: string, err: unknown): void {
    this.liveness.forget(loop);
    this.siblings.ended(loop, err);
  }

  private describe(): Record<string, unknown> {
    return {
      workerId: this.options.workerId,
      ...this.options.describeWorker(),
      loops: this.liveness.ages(),
      activeResources: countResources(),
    };
  }
}

/** Handles and requests keeping the event loop alive, counted by kind (`TCPSocketWrap: 4`, …). */
function countResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}
