import { randomUUID } from 'node:crypto';

import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { toMs, type Duration } from '../core/duration.js';
import { decision, retryMs, state } from './decision.js';
import { checkName, checkNumber, optionalDuration } from './names.js';
import {
  OwnMemoryStore,
  checkRateLimitContext,
  storeFor,
  storeThatDecided,
} from './stores/context-stores.js';
import type { GcraOutcome, RateLimitStore, SlidingLogOutcome } from './stores/rate-limit-store.js';
import {
  TTL_SAFETY_MARGIN_MS,
  type RateLimitBackend,
  type RateLimitContext,
  type RateLimitDecision,
  type RateLimitState,
  type SlidingWindowStyle,
} from './types.js';

/** Options of {@link SlidingWindow}. */
export interface SlidingWindowOptions {
  /** Maximum admissions within `window`. Integer >= 1. */
  limit: number;
  /** The rolling window (ms or a duration string such as `'1m'`). Must be > 0. */
  window: Duration;
  /** Where the state lives. Default `'redis'`. `'memory'` is per process. */
  backend?: RateLimitBackend;
  /**
   * `'log'` (default): a timestamp per admitted request — exact, memory grows with volume, refunds
   * remove the request. `'gcra'`: one theoretical-arrival-time cell — constant memory, `remaining`
   * is an estimate.
   */
  style?: SlidingWindowStyle;
  /** Redis key TTL. Default `2 × window + 60 s` for `'log'`, `window + 60 s` for `'gcra'`. */
  ttl?: Duration;
  /** Materialised from a keyed ref (set by the registry). */
  keyed?: boolean;
}

/** The keys of {@link SlidingWindowOptions}: any other is refused (a misspelt `style` kept `'log'`). */
const SLIDING_WINDOW_OPTION_KEYS: readonly string[] = ['limit', 'window', 'backend', 'style', 'ttl', 'keyed'];

const BACKENDS: readonly RateLimitBackend[] = ['redis', 'postgres', 'memory'];
const EPS = 1e-9;

/**
 * Sliding-window rate limiter: at most `limit` admissions in any `window`. Always one admission per
 * `acquire()`. The state lives in the {@link RateLimitStore} chosen by `backend` (as for
 * `TokenBucket`): Redis runs an atomic Lua script on `TIME`; Postgres runs on `clock_timestamp()`
 * under a bounded row lock (fail closed); memory runs on `ctx.clock`.
 */
export class SlidingWindow {
  /** Discriminator. */
  readonly kind = 'sliding_window' as const;
  /** Unique name. */
  readonly name: string;
  /** Admissions per window. */
  readonly limit: number;
  /** Window length in ms. */
  readonly windowMs: number;
  /** Configured store. */
  readonly backend: RateLimitBackend;
  /** Algorithm. */
  readonly style: SlidingWindowStyle;
  /** Redis key TTL in ms. */
  readonly ttlMs: number;
  /** Materialised from a keyed ref. */
  readonly keyed: boolean;

  private readonly memory = new OwnMemoryStore();

  constructor(name: string, options: SlidingWindowOptions) {
    this.name = checkName(name, 'SlidingWindow.name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('SlidingWindow.options', options, 'must be an object');
    checkKnownKeys(options, SLIDING_WINDOW_OPTION_KEYS, 'SlidingWindow', 'an option of SlidingWindow');
    this.limit = checkNumber(options.limit, 'SlidingWindow.limit', { min: 1, integer: true });
    this.windowMs = toMs(options.window, 'SlidingWindow.window');
    const backend = options.backend ?? 'redis';
    if (!BACKENDS.includes(backend))
      throw new InvalidArgumentError(
        'SlidingWindow.backend',
        backend,
        "must be 'redis', 'postgres' or 'memory'",
      );
    this.backend = backend;
    const style = options.style ?? 'log';
    if (style !== 'log' && style !== 'gcra')
      throw new InvalidArgumentError('SlidingWindow.style', style, "must be 'log' or 'gcra'");
    this.style = style;
    this.ttlMs =
      optionalDuration(options.ttl, 'SlidingWindow.ttl') ??
      (style === 'gcra' ? this.windowMs : 2 * this.windowMs) + TTL_SAFETY_MARGIN_MS;
    this.keyed = options.keyed ?? false;
  }

  /** Emission interval of the GCRA style, in ms (`window / limit`). */
  get intervalMs(): number {
    return this.windowMs / this.limit;
  }

  /**
   * One admission, or when to retry. Log-style decisions carry the `requestId` a refund removes.
   * @throws RateLimitBackendMissing, RateLimitStoreUnavailable, RateLimitStoreCorrupt (as TokenBucket)
   */
  async acquire(ctx: RateLimitContext): Promise<RateLimitDecision> {
    checkRateLimitContext(ctx, 'SlidingWindow.acquire.ctx');
    const store = this.store(ctx);
    if (this.style === 'gcra') return this.gcraDecision(await store.acquireGcra(this));
    const requestId = randomUUID();
    return this.logDecision(await store.acquireLog(this, requestId), requestId);
  }

  /**
   * Rolls back an admission in the store that paid for it (`decision.backend`): a log-style refund
   * removes exactly the logged request; a GCRA refund moves the arrival time back by one emission
   * interval, never below now. Rollback path only.
   */
  async refund(decisionToRefund: RateLimitDecision, ctx: RateLimitContext): Promise<void> {
    checkRateLimitContext(ctx, 'SlidingWindow.refund.ctx');
    if (!decisionToRefund.allowed) return;
    const requestId = decisionToRefund.requestId;
    if (this.style === 'log' && requestId === null) {
      throw new InvalidArgumentError(
        'decision.requestId',
        requestId,
        'a log-style refund needs the request id',
      );
    }
    const store = storeThatDecided(ctx, this.backend, decisionToRefund.backend, this.name, this.memory);
    if (requestId !== null && this.style === 'log') await store.refundLog(this, requestId);
    else await store.refundGcra(this);
  }

  /** Current state without consuming anything. */
  async peek(ctx: RateLimitContext): Promise<RateLimitState> {
    checkRateLimitContext(ctx, 'SlidingWindow.peek.ctx');
    const store = this.store(ctx);
    if (this.style === 'gcra') {
      const reading = await store.peekGcra(this);
      const remaining = this.gcraRemaining(reading.debtMs);
      const retry = remaining < 1 ? reading.debtMs + this.intervalMs - this.windowMs : 0;
      return this.toState(remaining, retry, reading.backend);
    }
    const reading = await store.peekLog(this);
    return this.toState(this.limit - reading.live, reading.retryMs, reading.backend);
  }

  /** Empties the window at once (Redis `DEL`, Postgres clears state and log, memory clears). Logs `ratelimit-reset`. */
  async reset(ctx: RateLimitContext): Promise<void> {
    checkRateLimitContext(ctx, 'SlidingWindow.reset.ctx');
    await this.store(ctx).resetBucket(this.name, this.style === 'gcra' ? 'gcra' : 'sliding_log');
    ctx.logger?.warn({ bucketName: this.name, backend: this.backend }, 'ratelimit-reset');
  }

  /** A sliding window never holds a quota that eviction could hand back (it recovers within `window`). */
  holdsConsumedQuota(): boolean {
    return false;
  }

  /** Same configuration (name, limit, window, backend, style, TTL) as `other`. */
  sameConfig(other: unknown): boolean {
    return (
      other instanceof SlidingWindow &&
      other.name === this.name &&
      other.limit === this.limit &&
      other.windowMs === this.windowMs &&
      other.backend === this.backend &&
      other.style === this.style &&
      other.ttlMs === this.ttlMs
    );
  }

  /** Admin metadata published to `rate_limit_buckets`. */
  describe(): { kind: 'gcra' | 'sliding_log'; capacity: number; refillPerSecond: null; windowMs: number } {
    return {
      kind: this.style === 'gcra' ? 'gcra' : 'sliding_log',
      capacity: this.limit,
      refillPerSecond: null,
      windowMs: this.windowMs,
    };
  }

  private store(ctx: RateLimitContext): RateLimitStore {
    return storeFor(ctx, this.backend, this.name, this.memory);
  }

  /** A GCRA outcome: admitted while the arrival time stays within the window; retry when it would. */
  private gcraDecision(outcome: GcraOutcome): RateLimitDecision {
    if (outcome.status === 'busy') return this.busyDecision(outcome.retryAfterMs, outcome.backend);
    const allowed = outcome.status === 'allowed';
    return this.decide(
      allowed,
      allowed ? this.gcraRemaining(outcome.debtMs) : 0,
      outcome.debtMs - this.windowMs,
      outcome.backend,
      null,
      { tat: outcome.previousTatMs },
    );
  }

  /** A log-style outcome: `live` entries were in the window before this request. */
  private logDecision(outcome: SlidingLogOutcome, requestId: string): RateLimitDecision {
    if (outcome.status === 'busy') return this.busyDecision(outcome.retryAfterMs, outcome.backend);
    const allowed = outcome.status === 'allowed';
    return this.decide(
      allowed,
      allowed ? this.limit - outcome.live - 1 : 0,
      outcome.retryMs,
      outcome.backend,
      allowed ? requestId : null,
      { live: outcome.live },
    );
  }

  /** Fail closed: a window whose state the store could not lock in time admits nobody. */
  private busyDecision(retryAfterMs: number, backend: RateLimitBackend): RateLimitDecision {
    return this.decide(false, 0, retryAfterMs, backend, null, null);
  }

  private gcraRemaining(debtMs: number): number {
    return Math.max(0, Math.floor((this.windowMs - debtMs) / this.intervalMs + EPS));
  }

  private decide(
    allowed: boolean,
    remaining: number,
    retry: number,
    backend: RateLimitBackend,
    requestId: string | null,
    previous: Record<string, number | null> | null,
  ): RateLimitDecision {
    return decision({
      allowed,
      remaining,
      retryAfterMs: allowed ? 0 : retryMs(retry),
      bucketName: this.name,
      backend,
      requestId,
      previousState: previous,
    });
  }

  private toState(remaining: number, retry: number, backend: RateLimitBackend): RateLimitState {
    const left = Math.max(0, remaining);
    return state({
      bucketName: this.name,
      backend,
      kind: 'sliding_window',
      isExhausted: left < 1,
      tokensRemaining: 0,
      remaining: left,
      retryAfterMs: left < 1 ? retryMs(retry) : 0,
      capacity: null,
      refillPerSecond: null,
      limit: this.limit,
      windowMs: this.windowMs,
      style: this.style,
    });
  }
}
