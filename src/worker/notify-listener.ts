import type { Backend } from '../backend/backend.js';
import type { NotificationHandlers, NotificationSubscription } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';
import { interruptibleSleep, withTimeout } from './sleep.js';

/** Timing of the listener. */
export interface NotifyListenerOptions {
  workerId: string;
  healthCheckIntervalMs: number;
  reconnectBackoffInitialMs: number;
  setupTimeoutMs: number;
}

/** Longest wait between reconnect attempts. */
export const NOTIFY_RECONNECT_BACKOFF_CAP_MS = 30_000;

/**
 * Holds the worker's LISTEN subscription (wake-ups and cancel requests). A health check pings it;
 * when the connection drops it reconnects with doubling backoff (capped at 30 s), and after a
 * reconnect it fires one wake-up so jobs enqueued meanwhile are claimed. While it is down,
 * `connected` is false and the producer polls at the short interval.
 */
export class NotifyListener {
  private sub: NotificationSubscription | null = null;
  private stopController = new AbortController();
  private healthLoop: Promise<void> | null = null;
  private reconnecting: Promise<void> | null = null;
  /** Reconnections since start (observability and tests). */
  reconnects = 0;

  constructor(
    private readonly backend: Backend,
    private readonly handlers: NotificationHandlers,
    private readonly options: NotifyListenerOptions,
    private readonly logger: Logger,
  ) {}

  /** True while a subscription is live. */
  get connected(): boolean {
    return this.sub !== null;
  }

  /**
   * Subscribes. If the first attempt fails the listener keeps trying in the background (with the
   * usual backoff) while the producer polls, and the error is rethrown for the caller to log.
   */
  async start(): Promise<void> {
    this.healthLoop = this.health();
    try {
      await this.connect();
    } catch (err) {
      this.scheduleReconnect();
      throw err;
    }
  }

  private async connect(): Promise<void> {
    const sub = await withTimeout(
      this.backend.subscribe(this.handlers, { workerId: this.options.workerId }),
      this.options.setupTimeoutMs,
      () => new Error(`LISTEN setup did not finish within ${this.options.setupTimeoutMs} ms`),
    );
    if (this.stopController.signal.aborted) {
      await sub.close();
      return;
    }
    this.sub = sub;
    sub.onClose((err) => {
      if (this.sub !== sub) return;
      this.sub = null;
      if (!this.stopController.signal.aborted) {
        this.logger.warn({ err }, 'notify-connection-lost');
        this.scheduleReconnect();
      }
    });
  }

  private scheduleReconnect(): void {
    this.reconnecting ??= this.reconnect().finally(() => {
      this.reconnecting = null;
    });
  }

  private async reconnect(): Promise<void> {
    const signal = this.stopController.signal;
    let delay = this.options.reconnectBackoffInitialMs;
    while (!signal.aborted && this.sub === null) {
      await interruptibleSleep(delay, signal).promise;
      if (signal.aborted) return;
      try {
        await this.connect();
        this.reconnects++;
        this.logger.info({ reconnects: this.reconnects }, 'notify-reconnected');
        // Work may have been enqueued while we were deaf.
        this.handlers.onWake?.();
      } catch (err) {
        this.logger.warn({ err, retryInMs: delay }, 'notify-reconnect-failed');
        delay = Math.min(delay * 2, NOTIFY_RECONNECT_BACKOFF_CAP_MS);
      }
    }
  }

  private async health(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      await interruptibleSleep(this.options.healthCheckIntervalMs, signal).promise;
      const sub = this.sub;
      if (signal.aborted || sub === null) continue;
      try {
        await withTimeout(
          sub.ping(),
          this.options.setupTimeoutMs,
          () => new Error('LISTEN health check timed out'),
        );
      } catch (err) {
        if (this.sub !== sub) continue;
        this.logger.warn({ err }, 'notify-health-check-failed');
        this.sub = null;
        await sub.close().catch(() => undefined);
        this.scheduleReconnect();
      }
    }
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.healthLoop;
    await this.reconnecting;
    const sub = this.sub;
    this.sub = null;
    await sub?.close().catch(() => undefined);
  }
}
