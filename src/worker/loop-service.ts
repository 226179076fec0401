import { AsyncLocalStorage } from 'node:async_hooks';

import type { Logger } from '../obs/logger.js';
import { interruptibleSleep, jitter } from './sleep.js';
import { isTransientError } from '../db/transient-errors.js';

/** Consecutive unexpected (non-transient) errors after which a guarded loop stops the worker. */
export const MAX_CONSECUTIVE_UNEXPECTED_ERRORS = 5;

/**
 * Backstop for a loop's unexpected errors: transient Postgres trouble is logged and retried next
 * tick; anything else is logged loudly and tolerated, but five in a row mean a permanent fault (a
 * bug, not a blip) and `onFatal` stops the worker instead of letting it tick on doing nothing. Only
 * a fully successful pass resets the streak.
 */
export class UnexpectedLoopErrorGuard {
  private streak = 0;
  private count = 0;

  constructor(
    private readonly loop: string,
    private readonly logger: Logger,
    private readonly onFatal: (reason: string) => void,
    private readonly maxConsecutive = MAX_CONSECUTIVE_UNEXPECTED_ERRORS,
  ) {}

  /** Consecutive unexpected errors so far. */
  get consecutive(): number {
    return this.streak;
  }

  /** Unexpected errors tolerated since start (the `leader_loop_unexpected_errors_total` metric). */
  get total(): number {
    return this.count;
  }

  succeeded(): void {
    this.streak = 0;
  }

  failed(err: unknown): void {
    if (isTransientError(err)) {
      this.logger.warn({ err, loop: this.loop }, 'loop-transient-error');
      return;
    }
    this.streak++;
    this.count++;
    this.logger.error(
      { err, loop: this.loop, consecutive: this.streak, max: this.maxConsecutive },
      'loop-unexpected-error',
    );
    if (this.streak >= this.maxConsecutive)
      this.onFatal(`${this.loop}: ${this.streak} unexpected errors in a row`);
  }
}

/**
 * What a loop tells whoever watches it (the watchdog's stale-tick and sibling-contract detectors).
 * Calls must be cheap and must not throw.
 */
export interface LoopObserver {
  /** The loop started or finished a pass; it should tick again within about `periodMs`. */
  tick(loop: string, periodMs: number): void;
  /** The loop is being stopped on purpose: stop expecting ticks from it. */
  forget(loop: string): void;
  /** The loop ended without being stopped: an error escaped its pass and its error handling. */
  ended(loop: string, err: unknown): void;
}

const loopObservers = new AsyncLocalStorage<LoopObserver>();
/** `observeLoops` calls still running (workers starting in this process). */
let observing = 0;

/**
 * Runs `fn` so that every {@link LoopService} started inside it (synchronously or later in the
 * async work it begins) reports to `observer`. The worker wraps the start of its services in this
 * instead of handing the observer to each service, including the leader's loops it never sees.
 *
 * Each loop reads the observer once, when it starts; once no `fn` is running any more the storage
 * is disabled. An enabled AsyncLocalStorage is copied into every promise the process makes from
 * then on — every job's many — for as long as it stays enabled, which cost a worker with the
 * watchdog on several microseconds of CPU per job.
 */
export function observeLoops<T>(observer: LoopObserver, fn: () => T): T {
  observing++;
  let out: T;
  try {
    out = loopObservers.run(observer, fn);
  } catch (err) {
    stopObserving();
    throw err;
  }
  if (out instanceof Promise) return out.finally(stopObserving) as T;
  stopObserving();
  return out;
}

function stopObserving(): void {
  observing--;
  if (observing === 0) loopObservers.disable();
}

/**
 * A worker service with one loop that only sleeps and calls {@link runOnce}. Tests call `runOnce()`
 * directly instead of waiting for the loop. `notify()` cuts the current sleep short.
 */
export abstract class LoopService {
  private stopController: AbortController | null = null;
  private loopPromise: Promise<void> | null = null;
  private wakeCurrent: (() => void) | null = null;
  private woken = false;

  protected guard: UnexpectedLoopErrorGuard | null = null;
  private observer: LoopObserver | null = null;

  protected constructor(
    /** Name used in logs. */
    readonly name: string,
    protected readonly logger: Logger,
  ) {}

  /** Stops the worker (through `onFatal`) after repeated unexpected errors of this loop. */
  guardWith(onFatal: (reason: string) => void): this {
    this.guard = new UnexpectedLoopErrorGuard(this.name, this.logger, onFatal);
    return this;
  }

  /** Unexpected errors this loop tolerated since start (0 when unguarded). */
  get unexpectedErrors(): number {
    return this.guard?.total ?? 0;
  }

  /** One pass of the service's work. */
  abstract runOnce(): Promise<unknown>;

  /** Milliseconds to sleep before the next pass (jittered by default). */
  protected abstract intervalMs(): number;

  /**
   * The period the watchdog expects ticks at (it allows `period × watchdogTickGraceFactor`, at least
   * `watchdogStaleFloor`), or null to leave the loop untracked: a loop whose single pass has no
   * bound (a batch-by-batch purge) would be judged stale while it still makes progress.
   */
  protected livenessPeriodMs(): number | null {
    return this.intervalMs();
  }

  /** Called when a pass throws; the default logs and continues. Throw to stop the loop. */
  protected onError(err: unknown): void {
    this.logger.warn({ err, service: this.name }, 'service-pass-failed');
  }

  /** True between start() and stop(). */
  get running(): boolean {
    return this.stopController !== null && !this.stopController.signal.aborted;
  }

  /** Starts the loop (the first pass runs at once). */
  start(): void {
    if (this.loopPromise) return;
    this.stopController = new AbortController();
    this.observer = loopObservers.getStore() ?? null;
    this.loopPromise = this.loop(this.stopController.signal);
  }

  /** Ends the current sleep early. */
  notify(): void {
    this.woken = true;
    this.wakeCurrent?.();
  }

  private tick(): void {
    const period = this.observer ? this.livenessPeriodMs() : null;
    if (period !== null) this.observer?.tick(this.name, period);
  }

  private async loop(signal: AbortSignal): Promise<void> {
    this.tick();
    while (!signal.aborted) {
      try {
        await this.runOnce();
        this.guard?.succeeded();
      } catch (err) {
        try {
          if (this.guard) this.guard.failed(err);
          else this.onError(err);
        } catch (fatal) {
          this.logger.error({ err: fatal, service: this.name }, 'service-stopped-by-error');
          if (!signal.aborted) this.observer?.ended(this.name, fatal);
          return;
        }
      }
      if (signal.aborted) break;
      this.tick();
      if (this.woken) {
        this.woken = false;
        continue;
      }
      const sleep = interruptibleSleep(jitter(this.intervalMs()), signal);
      this.wakeCurrent = sleep.wake;
      await sleep.promise;
      this.wakeCurrent = null;
      this.woken = false;
    }
  }

  /** Stops the loop and waits for the current pass to finish. */
  async stop(): Promise<void> {
    this.observer?.forget(this.name);
    this.stopController?.abort();
    this.wakeCurrent?.();
    await this.loopPromise;
    this.loopPromise = null;
  }
}
