import type { Logger } from '../obs/logger.js';
import { interruptibleSleep, jitter } from './sleep.js';

/**
 * A worker service with one loop that only sleeps and calls {@link runOnce}. Tests call `runOnce()`
 * directly instead of waiting for the loop. `notify()` cuts the current sleep short.
 */
export abstract class LoopService {
  private stopController: AbortController | null = null;
  private loopPromise: Promise<void> | null = null;
  private wakeCurrent: (() => void) | null = null;
  private woken = false;

  protected constructor(
    /** Name used in logs. */
    readonly name: string,
    protected readonly logger: Logger,
  ) {}

  /** One pass of the service's work. */
  abstract runOnce(): Promise<unknown>;

  /** Milliseconds to sleep before the next pass (jittered by default). */
  protected abstract intervalMs(): number;

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
    this.loopPromise = this.loop(this.stopController.signal);
  }

  /** Ends the current sleep early. */
  notify(): void {
    this.woken = true;
    this.wakeCurrent?.();
  }

  private async loop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.runOnce();
      } catch (err) {
        try {
          this.onError(err);
        } catch (fatal) {
          this.logger.error({ err: fatal, service: this.name }, 'service-stopped-by-error');
          return;
        }
      }
      if (signal.aborted) break;
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
    this.stopController?.abort();
    this.wakeCurrent?.();
    await this.loopPromise;
    this.loopPromise = null;
  }
}
