import type { Redis } from 'ioredis';

import { TaskQStateError } from '../errors/client-errors.js';
import type { Logger } from '../obs/logger.js';
import { RateLimitedWarning } from './rate-limited-warning.js';

/** What a listener of one channel is told. */
export interface ChannelListener {
  /** A message arrived on the channel. */
  onMessage(message: string): void;
  /**
   * The channel is subscribed — for the first time, or again after a reconnect. Messages published
   * before this were not seen: re-read the durable state.
   */
  onUp(): void;
  /** The connection dropped: messages are missed until the next `onUp()`. */
  onDown(): void;
}

/** One listener's hold on a channel. */
export interface ChannelLease {
  /** Stops listening; the channel is unsubscribed when its last listener leaves. */
  close(): Promise<void>;
}

/**
 * One Redis subscriber connection shared by every progress stream of a client: channels are
 * reference-counted (subscribed with their first listener, unsubscribed with their last). The
 * connection is a `duplicate()` of the client's Redis, made on first use and owned here.
 *
 * Reconnects are handled here rather than by ioredis' auto-resubscribe, so listeners learn exactly
 * when their channel is live again (`onUp`) and can re-read what they missed.
 */
export class RedisProgressSubscriber {
  private conn: Redis | null = null;
  private ready = false;
  private closed = false;
  private readonly listeners = new Map<string, Set<ChannelListener>>();
  /** Channels confirmed subscribed on the current connection. */
  private readonly live = new Set<string>();
  private readonly subscribing = new Map<string, Promise<void>>();
  private readonly unavailable: RateLimitedWarning;

  constructor(
    private readonly base: Redis,
    private readonly logger: Logger,
  ) {
    this.unavailable = new RateLimitedWarning(logger, 'progress-subscriber-redis-unavailable', 10_000);
  }

  /** Channels with at least one listener (for tests and health checks). */
  get channelCount(): number {
    return this.listeners.size;
  }

  /** Starts listening to `channel`. `onUp` follows once the subscription is confirmed. */
  listen(channel: string, listener: ChannelListener): ChannelLease {
    if (this.closed) throw new TaskQStateError('the progress subscriber is closed');
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    this.connection();
    if (this.live.has(channel)) queueMicrotask(() => safely(() => listener.onUp(), this.logger));
    else void this.subscribe(channel);
    let released = false;
    return {
      close: async () => {
        if (released) return;
        released = true;
        set.delete(listener);
        if (set.size > 0 || this.listeners.get(channel) !== set) return;
        this.listeners.delete(channel);
        if (!this.live.delete(channel) || !this.ready || !this.conn) return;
        await this.conn.unsubscribe(channel).catch(() => undefined);
      },
    };
  }

  /** Closes the subscriber connection; listeners get `onDown()`. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const conn = this.conn;
    this.conn = null;
    this.ready = false;
    this.live.clear();
    if (conn) conn.disconnect();
  }

  private connection(): Redis {
    if (this.conn) return this.conn;
    const conn = this.base.duplicate({
      lazyConnect: false,
      enableOfflineQueue: false,
      autoResubscribe: false,
      connectionName: 'taskq-progress-subscriber',
    });
    conn.on('message', (channel: string, message: string) => {
      for (const l of [...(this.listeners.get(channel) ?? [])])
        safely(() => l.onMessage(message), this.logger);
    });
    conn.on('ready', () => {
      if (this.conn !== conn) return;
      this.ready = true;
      this.logger.debug({ channels: this.listeners.size }, 'progress-subscriber-ready');
      for (const channel of this.listeners.keys()) void this.subscribe(channel);
    });
    conn.on('close', () => {
      if (this.conn !== conn) return;
      const wasReady = this.ready;
      this.ready = false;
      this.live.clear();
      this.subscribing.clear();
      if (!wasReady) return;
      this.logger.debug({ channels: this.listeners.size }, 'progress-subscriber-disconnected');
      for (const set of this.listeners.values())
        for (const l of [...set]) safely(() => l.onDown(), this.logger);
    });
    conn.on('error', (err: Error) => this.unavailable.warn({ err: err.message }));
    this.conn = conn;
    return conn;
  }

  private subscribe(channel: string): Promise<void> {
    const conn = this.conn;
    if (!conn || !this.ready || this.live.has(channel)) return Promise.resolve();
    let op = this.subscribing.get(channel);
    if (op) return op;
    op = conn
      .subscribe(channel)
      .then(
        async () => {
          if (this.conn !== conn || !this.ready) return;
          if (!this.listeners.has(channel)) {
            // Everyone left while the SUBSCRIBE was in flight.
            await conn.unsubscribe(channel).catch(() => undefined);
            return;
          }
          this.live.add(channel);
          for (const l of [...(this.listeners.get(channel) ?? [])]) safely(() => l.onUp(), this.logger);
        },
        (err: unknown) => {
          // The connection dropped mid-command: the next 'ready' subscribes again.
          this.logger.debug({ err, channel }, 'progress-subscribe-failed');
        },
      )
      .finally(() => {
        if (this.subscribing.get(channel) === op) this.subscribing.delete(channel);
      });
    this.subscribing.set(channel, op);
    return op;
  }
}

function safely(fn: () => void, logger: Logger): void {
  try {
    fn();
  } catch (err) {
    logger.warn({ err }, 'progress-listener-failed');
  }
}
