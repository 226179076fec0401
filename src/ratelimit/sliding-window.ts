import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { toMs, type Duration } from '../duration.js';
import { ClampedTime, decision, requireClock, retryMs, state } from './decision.js';
import { RateLimitStoreCorrupt, RateLimitStoreUnavailable } from './errors.js';
import { checkName, checkNumber, optionalDuration } from './names.js';
import {
  CREATE_RACE_ATTEMPTS,
  isLockTimeout,
  lockTimeoutMs,
  lockTimeoutSetting,
  requireDriver,
  schemaOf,
  sql,
  toNumber,
} from './pg-store.js';
import {
  mapRedisDataError,
  mapRedisRefundError,
  redisKey,
  replyNumber,
  requireRedis,
  runScript,
  withPgFallback,
} from './redis-store.js';
import { resetStores } from './reset-stores.js';
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

const BACKENDS: readonly RateLimitBackend[] = ['redis', 'postgres', 'memory'];
const EPS = 1e-9;

/**
 * Sliding-window rate limiter: at most `limit` admissions in any `window`. Always one admission per
 * `acquire()`. Redis runs an atomic Lua script on `TIME`; Postgres runs on `clock_timestamp()`
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

  private readonly time = new ClampedTime();
  private memLog: { t: number; id: string }[] = [];
  private memTat: number | null = null;

  constructor(name: string, options: SlidingWindowOptions) {
    this.name = checkName(name, 'SlidingWindow.name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('SlidingWindow.options', options, 'must be an object');
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
    const requestId = this.style === 'log' ? randomUUID() : null;
    switch (this.backend) {
      case 'memory':
        return this.acquireMemory(ctx, requestId);
      case 'postgres':
        return this.acquirePostgres(ctx, requestId);
      case 'redis':
        return withPgFallback(
          ctx,
          this.name,
          'acquire',
          (redis) => this.acquireRedis(ctx, redis, requestId),
          () => this.acquirePostgres(ctx, requestId),
        );
    }
  }

  /**
   * Rolls back an admission in the store that paid for it (`decision.backend`): a log-style refund
   * removes exactly the logged request; a GCRA refund moves the arrival time back by one emission
   * interval, never below now. Rollback path only.
   */
  async refund(decisionToRefund: RateLimitDecision, ctx: RateLimitContext): Promise<void> {
    if (!decisionToRefund.allowed) return;
    const requestId = decisionToRefund.requestId;
    if (this.style === 'log' && requestId === null) {
      throw new InvalidArgumentError(
        'decision.requestId',
        requestId,
        'a log-style refund needs the request id',
      );
    }
    switch (decisionToRefund.backend) {
      case 'memory': {
        if (this.style === 'log') {
          this.memLog = this.memLog.filter((e) => e.id !== requestId);
        } else {
          const now = this.time.now(requireClock(ctx, this.name));
          if (this.memTat !== null) {
            const back = Math.max(this.memTat, now) - this.intervalMs;
            this.memTat = back <= now ? null : back;
          }
        }
        return;
      }
      case 'redis': {
        const redis = requireRedis(ctx, this.name);
        const key = this.key(ctx);
        const args =
          this.style === 'log'
            ? ['refund', this.limit, this.windowMs, Math.ceil(this.ttlMs), requestId as string]
            : ['refund', this.limit, this.windowMs, Math.ceil(this.ttlMs)];
        const reply = await runScript(redis, this.command(), key, args).catch((err: unknown) => {
          throw mapRedisRefundError(err, this.name, key);
        });
        if (reply[0] === 'corrupt')
          throw new RateLimitStoreCorrupt(this.name, 'redis', `key ${key} holds ${reply[1]}`);
        return;
      }
      case 'postgres': {
        const driver = requireDriver(ctx, this.name);
        const schema = schemaOf(ctx);
        if (this.style === 'log') {
          await driver.query(sql('slidingLogRefund', schema), [this.name, requestId]);
          return;
        }
        try {
          await driver.query(sql('gcraRefund', schema), [
            this.name,
            this.limit,
            this.windowMs,
            lockTimeoutSetting(ctx),
          ]);
        } catch (err) {
          if (!isLockTimeout(err)) throw err;
          throw new RateLimitStoreUnavailable(
            this.name,
            'postgres',
            `refund could not lock the window row within ${lockTimeoutMs(ctx)} ms`,
            { cause: err },
          );
        }
        return;
      }
    }
  }

  /** Current state without consuming anything. */
  async peek(ctx: RateLimitContext): Promise<RateLimitState> {
    switch (this.backend) {
      case 'memory':
        return this.peekMemory(ctx);
      case 'postgres':
        return this.peekPostgres(ctx);
      case 'redis':
        return withPgFallback(
          ctx,
          this.name,
          'peek',
          (redis) => this.peekRedis(ctx, redis),
          () => this.peekPostgres(ctx),
        );
    }
  }

  /** Empties the window at once (Redis `DEL`, Postgres clears state and log, memory clears). Logs `ratelimit-reset`. */
  async reset(ctx: RateLimitContext): Promise<void> {
    await resetStores(this, ctx, this.style === 'log' ? 'swlog' : 'gcra', () => {
      this.memLog = [];
      this.memTat = null;
      this.time.clear();
    });
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

  private key(ctx: RateLimitContext): string {
    return redisKey(ctx, this.style === 'log' ? 'swlog' : 'gcra', this.name);
  }

  private command(): 'taskqRlSlidingLog' | 'taskqRlGcra' {
    return this.style === 'log' ? 'taskqRlSlidingLog' : 'taskqRlGcra';
  }

  // ---- memory ----

  private acquireMemory(ctx: RateLimitContext, requestId: string | null): RateLimitDecision {
    const now = this.time.now(requireClock(ctx, this.name));
    if (this.style === 'log') {
      this.pruneLog(now);
      const live = this.memLog.length;
      if (live < this.limit) {
        this.memLog.push({ t: now, id: requestId as string });
        return this.decide(true, this.limit - live - 1, 0, 'memory', requestId, { live });
      }
      const nth = this.memLog[live - this.limit] as { t: number };
      return this.decide(false, 0, nth.t + this.windowMs - now, 'memory', null, { live });
    }
    const prevTat = this.memTat;
    const tat = Math.max(this.memTat ?? now, now);
    const newTat = tat + this.intervalMs;
    const allowAt = newTat - this.windowMs;
    if (now < allowAt - EPS) return this.decide(false, 0, allowAt - now, 'memory', null, { tat: prevTat });
    this.memTat = newTat;
    return this.decide(true, this.gcraRemaining(newTat - now), 0, 'memory', null, { tat: prevTat });
  }

  private peekMemory(ctx: RateLimitContext): RateLimitState {
    const now = this.time.now(requireClock(ctx, this.name));
    if (this.style === 'log') {
      this.pruneLog(now);
      const live = this.memLog.length;
      const nth = live >= this.limit ? this.memLog[live - this.limit] : undefined;
      return this.toState(this.limit - live, nth ? nth.t + this.windowMs - now : 0, 'memory');
    }
    const debt = Math.max(0, (this.memTat ?? now) - now);
    return this.gcraState(debt, 'memory');
  }

  private pruneLog(now: number): void {
    const boundary = now - this.windowMs;
    let drop = 0;
    while (drop < this.memLog.length && (this.memLog[drop] as { t: number }).t <= boundary) drop++;
    if (drop > 0) this.memLog.splice(0, drop);
  }

  // ---- redis ----

  private async acquireRedis(
    ctx: RateLimitContext,
    redis: Redis,
    requestId: string | null,
  ): Promise<RateLimitDecision> {
    const key = this.key(ctx);
    const args =
      this.style === 'log'
        ? ['acquire', this.limit, this.windowMs, Math.ceil(this.ttlMs), requestId as string]
        : ['acquire', this.limit, this.windowMs, Math.ceil(this.ttlMs)];
    let reply: string[];
    try {
      reply = await runScript(redis, this.command(), key, args);
    } catch (err) {
      throw mapRedisDataError(err, this.name, key);
    }
    if (reply[0] === 'corrupt')
      throw new RateLimitStoreCorrupt(this.name, 'redis', `key ${key} holds ${reply[1]}`);
    const allowed = reply[0] === 'allowed';
    const remaining = replyNumber(reply[1], this.name, 'remaining');
    const retryUs = replyNumber(reply[2], this.name, 'retry');
    const previous: Record<string, number | null> =
      this.style === 'log'
        ? { live: replyNumber(reply[3], this.name, 'live count') }
        : { tat: reply[3] ? replyNumber(reply[3], this.name, 'tat') / 1000 : null };
    return this.decide(allowed, remaining, retryUs / 1000, 'redis', allowed ? requestId : null, previous);
  }

  private async peekRedis(ctx: RateLimitContext, redis: Redis): Promise<RateLimitState> {
    const key = this.key(ctx);
    const args =
      this.style === 'log'
        ? ['peek', this.limit, this.windowMs, Math.ceil(this.ttlMs), '']
        : ['peek', this.limit, this.windowMs, Math.ceil(this.ttlMs)];
    let reply: string[];
    try {
      reply = await runScript(redis, this.command(), key, args);
    } catch (err) {
      throw mapRedisDataError(err, this.name, key);
    }
    if (reply[0] === 'corrupt')
      throw new RateLimitStoreCorrupt(this.name, 'redis', `key ${key} holds ${reply[1]}`);
    return this.toState(
      replyNumber(reply[1], this.name, 'remaining'),
      replyNumber(reply[2], this.name, 'retry') / 1000,
      'redis',
    );
  }

  // ---- postgres ----

  private async acquirePostgres(ctx: RateLimitContext, requestId: string | null): Promise<RateLimitDecision> {
    const driver = requireDriver(ctx, this.name);
    const schema = schemaOf(ctx);
    const configured = this.backend === 'memory' ? 'postgres' : this.backend;
    try {
      if (this.style === 'log') {
        const row = await driver.transaction(async (tx) => {
          await tx.query(sql('slidingLogLock', schema), [
            this.name,
            this.limit,
            this.windowMs,
            this.keyed,
            configured,
            lockTimeoutSetting(ctx),
          ]);
          const { rows } = await tx.query(sql('slidingLogAdmit', schema), [
            this.name,
            this.limit,
            this.windowMs,
            requestId,
          ]);
          return rows[0];
        });
        const live = toNumber(row?.live);
        if (row === undefined || live === null) throw new Error('sliding window admission returned no row');
        const allowed = row.admitted === 1;
        const retry = toNumber(row.retry_ms) ?? this.windowMs;
        return this.decide(
          allowed,
          allowed ? this.limit - live - 1 : 0,
          retry,
          'postgres',
          allowed ? requestId : null,
          { live },
        );
      }
      const text = sql('gcraAcquire', schema);
      const params = [this.name, this.limit, this.windowMs, lockTimeoutSetting(ctx), this.keyed, configured];
      for (let attempt = 1; ; attempt++) {
        const { rows } = await driver.query(text, params);
        const row = rows[0];
        if (row === undefined) {
          if (attempt < CREATE_RACE_ATTEMPTS) continue;
          throw new Error(`sliding window ${this.name}: its row kept appearing concurrently; try again`);
        }
        const debt = toNumber(row.debt_ms);
        if (debt === null)
          throw new RateLimitStoreCorrupt(this.name, 'postgres', `tat gives debt ${String(row.debt_ms)}`);
        const allowed = row.allowed === true;
        return this.decide(
          allowed,
          allowed ? this.gcraRemaining(debt) : 0,
          debt - this.windowMs,
          'postgres',
          null,
          { tat: toNumber(row.prev_tat_ms) },
        );
      }
    } catch (err) {
      if (!isLockTimeout(err)) throw err;
      ctx.logger?.debug(
        { bucketName: this.name, lockTimeoutMs: lockTimeoutMs(ctx) },
        'ratelimit-lock-timeout',
      );
      // Fail closed: a window whose row lock cannot be won in time admits nobody.
      return this.decide(false, 0, Math.ceil(lockTimeoutMs(ctx)), 'postgres', null, null);
    }
  }

  private async peekPostgres(ctx: RateLimitContext): Promise<RateLimitState> {
    const driver = requireDriver(ctx, this.name);
    const schema = schemaOf(ctx);
    if (this.style === 'log') {
      const { rows } = await driver.query(sql('slidingLogPeek', schema), [
        this.name,
        this.limit,
        this.windowMs,
      ]);
      const row = rows[0];
      const live = toNumber(row?.live) ?? 0;
      return this.toState(this.limit - live, toNumber(row?.retry_ms) ?? 0, 'postgres');
    }
    const { rows } = await driver.query(sql('gcraPeek', schema), [this.name]);
    return this.gcraState(toNumber(rows[0]?.debt_ms) ?? 0, 'postgres');
  }

  // ---- shared ----

  private gcraRemaining(debtMs: number): number {
    return Math.max(0, Math.floor((this.windowMs - debtMs) / this.intervalMs + EPS));
  }

  private gcraState(debtMs: number, backend: RateLimitBackend): RateLimitState {
    const remaining = this.gcraRemaining(debtMs);
    return this.toState(remaining, remaining < 1 ? debtMs + this.intervalMs - this.windowMs : 0, backend);
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
