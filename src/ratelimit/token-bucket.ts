import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Duration } from '../duration.js';
import { ClampedTime, decision, requireClock, retryMs, state } from './decision.js';
import { resetStores } from './reset-stores.js';
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
import {
  TTL_SAFETY_MARGIN_MS,
  type RateLimitBackend,
  type RateLimitContext,
  type RateLimitDecision,
  type RateLimitState,
} from './types.js';

/** Options of {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Maximum tokens (the burst). Must be > 0. The bucket starts full. */
  capacity: number;
  /** Tokens added per second, continuously. Must be >= 0; 0 = a fixed quota that never refills. */
  refillPerSecond: number;
  /** Where the state lives. Default `'redis'`. `'memory'` is per process (tests, single process). */
  backend?: RateLimitBackend;
  /**
   * Redis key TTL. Default `ceil(capacity / refillPerSecond * 2) + 60` s; 86 400 s (24 h) when
   * `refillPerSecond` is 0 (an untouched fixed quota expires, i.e. refills, a day after its last
   * admission).
   */
  ttl?: Duration;
  /** Materialised from a keyed ref (set by the registry): its Postgres row may be reclaimed once idle. */
  keyed?: boolean;
}

const BACKENDS: readonly RateLimitBackend[] = ['redis', 'postgres', 'memory'];

/** Default Redis key TTL of a token bucket, in ms. */
export function defaultTokenBucketTtlMs(capacity: number, refillPerSecond: number): number {
  if (refillPerSecond === 0) return 86_400_000;
  return Math.ceil((capacity / refillPerSecond) * 2) * 1000 + TTL_SAFETY_MARGIN_MS;
}

/**
 * Token-bucket rate limiter: starts full, each admission spends tokens, tokens flow back
 * continuously at `refillPerSecond` up to `capacity`. Burst-tolerant throughput control.
 *
 * The Redis backend runs one atomic Lua script on the Redis clock (`TIME`); the Postgres backend
 * one statement on `clock_timestamp()` under a bounded row lock (a lock not won in time is a
 * denial, never an admission); the memory backend runs on `ctx.clock`.
 */
export class TokenBucket {
  /** Discriminator. */
  readonly kind = 'token_bucket' as const;
  /** Unique bucket name: part of the Redis key and the `bucket_name` column. */
  readonly name: string;
  /** Maximum tokens. */
  readonly capacity: number;
  /** Tokens per second (0 = fixed quota). */
  readonly refillPerSecond: number;
  /** Configured store. */
  readonly backend: RateLimitBackend;
  /** Redis key TTL in ms. */
  readonly ttlMs: number;
  /** Materialised from a keyed ref. */
  readonly keyed: boolean;

  private readonly time = new ClampedTime();
  private memTokens: number | null = null;
  private memAt: number | null = null;

  constructor(name: string, options: TokenBucketOptions) {
    this.name = checkName(name, 'TokenBucket.name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('TokenBucket.options', options, 'must be an object');
    this.capacity = checkNumber(options.capacity, 'TokenBucket.capacity');
    this.refillPerSecond = checkNumber(options.refillPerSecond, 'TokenBucket.refillPerSecond', {
      allowZero: true,
    });
    const backend = options.backend ?? 'redis';
    if (!BACKENDS.includes(backend))
      throw new InvalidArgumentError(
        'TokenBucket.backend',
        backend,
        "must be 'redis', 'postgres' or 'memory'",
      );
    this.backend = backend;
    this.ttlMs =
      optionalDuration(options.ttl, 'TokenBucket.ttl') ??
      defaultTokenBucketTtlMs(this.capacity, this.refillPerSecond);
    this.keyed = options.keyed ?? false;
  }

  /**
   * Spends `count` tokens (default 1) or reports when to retry. `decision.backend` names the store
   * that actually decided: `'postgres'` after a Redis outage fell back.
   * @throws RateLimitBackendMissing when the context lacks the backend's connection
   * @throws RateLimitStoreUnavailable when Redis is down and the fallback is disabled
   * @throws RateLimitStoreCorrupt when the stored state is impossible
   */
  async acquire(ctx: RateLimitContext, count = 1): Promise<RateLimitDecision> {
    checkNumber(count, 'TokenBucket.acquire.count');
    if (count > this.capacity) {
      throw new InvalidArgumentError(
        'TokenBucket.acquire.count',
        count,
        `must not exceed the capacity (${this.capacity}): such a request could never be admitted`,
      );
    }
    switch (this.backend) {
      case 'memory':
        return this.acquireMemory(ctx, count);
      case 'postgres':
        return this.acquirePostgres(ctx, count);
      case 'redis':
        return withPgFallback(
          ctx,
          this.name,
          'acquire',
          (redis) => this.acquireRedis(ctx, redis, count),
          () => this.acquirePostgres(ctx, count),
        );
    }
  }

  /**
   * Gives `count` tokens back (capped at capacity) to the store that paid for `decision`
   * (`decision.backend`). For the rollback path only — never after the guarded work ran.
   */
  async refund(decisionToRefund: RateLimitDecision, ctx: RateLimitContext, count = 1): Promise<void> {
    checkNumber(count, 'TokenBucket.refund.count');
    if (!decisionToRefund.allowed) return;
    switch (decisionToRefund.backend) {
      case 'memory': {
        const now = this.time.now(requireClock(ctx, this.name));
        const avail = this.memAvailable(now);
        this.memTokens = Math.min(this.capacity, avail + count);
        this.memAt = now;
        return;
      }
      case 'redis': {
        const key = redisKey(ctx, 'tb', this.name);
        const redis = requireRedis(ctx, this.name);
        const reply = await runScript(redis, 'taskqRlTokenBucket', key, [
          'refund',
          this.capacity,
          this.refillPerSecond,
          count,
          Math.ceil(this.ttlMs),
        ]).catch((err: unknown) => {
          throw mapRedisRefundError(err, this.name, key);
        });
        if (reply[0] === 'corrupt') throw this.corrupt(reply);
        return;
      }
      case 'postgres': {
        const driver = requireDriver(ctx, this.name);
        try {
          await driver.query(sql('tokenBucketRefund', schemaOf(ctx)), [
            this.name,
            this.capacity,
            this.refillPerSecond,
            count,
            lockTimeoutSetting(ctx),
          ]);
        } catch (err) {
          if (isLockTimeout(err)) {
            throw new RateLimitStoreUnavailable(
              this.name,
              'postgres',
              `refund could not lock the bucket row within ${lockTimeoutMs(ctx)} ms`,
              { cause: err },
            );
          }
          throw err;
        }
        return;
      }
    }
  }

  /** Current state without consuming anything. */
  async peek(ctx: RateLimitContext): Promise<RateLimitState> {
    switch (this.backend) {
      case 'memory': {
        const now = this.time.now(requireClock(ctx, this.name));
        return this.toState(this.memAvailable(now), 'memory');
      }
      case 'postgres':
        return this.toState(await this.peekPostgres(ctx), 'postgres');
      case 'redis':
        return withPgFallback(
          ctx,
          this.name,
          'peek',
          async (redis) => {
            const key = redisKey(ctx, 'tb', this.name);
            const reply = await runScript(redis, 'taskqRlTokenBucket', key, [
              'peek',
              this.capacity,
              this.refillPerSecond,
              1,
              Math.ceil(this.ttlMs),
            ]).catch((err: unknown) => {
              throw mapRedisDataError(err, this.name, key);
            });
            if (reply[0] === 'corrupt') throw this.corrupt(reply);
            return this.toState(replyNumber(reply[1], this.name, 'tokens'), 'redis');
          },
          async () => this.toState(await this.peekPostgres(ctx), 'postgres'),
        );
    }
  }

  /**
   * Refills the bucket to capacity at once (Redis `DEL`; Postgres clears the row's state, keeping
   * the row; memory restores capacity). Idempotent. Logs warning `ratelimit-reset`.
   */
  async reset(ctx: RateLimitContext): Promise<void> {
    await resetStores(this, ctx, 'tb', () => {
      this.memTokens = null;
      this.memAt = null;
      this.time.clear();
    });
  }

  /**
   * True when evicting this bucket from a registry would silently hand back quota already spent:
   * only a memory-backed fixed quota (refill 0) with tokens below capacity. Postgres and Redis keep
   * that state outside the process.
   */
  holdsConsumedQuota(): boolean {
    if (this.refillPerSecond !== 0 || this.backend !== 'memory') return false;
    return this.memTokens !== null && this.memTokens < this.capacity;
  }

  /** Same configuration (name, capacity, refill, backend, TTL) as `other`. */
  sameConfig(other: unknown): boolean {
    return (
      other instanceof TokenBucket &&
      other.name === this.name &&
      other.capacity === this.capacity &&
      other.refillPerSecond === this.refillPerSecond &&
      other.backend === this.backend &&
      other.ttlMs === this.ttlMs
    );
  }

  /** Admin metadata published to `rate_limit_buckets`. */
  describe(): { kind: 'token_bucket'; capacity: number; refillPerSecond: number; windowMs: null } {
    return {
      kind: 'token_bucket',
      capacity: this.capacity,
      refillPerSecond: this.refillPerSecond,
      windowMs: null,
    };
  }

  private memAvailable(now: number): number {
    if (this.memTokens === null || this.memAt === null) return this.capacity;
    const elapsed = Math.max(0, now - this.memAt);
    return Math.min(this.capacity, this.memTokens + (elapsed / 1000) * this.refillPerSecond);
  }

  private acquireMemory(ctx: RateLimitContext, count: number): RateLimitDecision {
    const now = this.time.now(requireClock(ctx, this.name));
    const prev = this.memTokens;
    const avail = this.memAvailable(now);
    const allowed = avail >= count;
    this.memTokens = allowed ? avail - count : avail;
    this.memAt = now;
    return this.toDecision(allowed, this.memTokens, avail, count, 'memory', prev);
  }

  private async acquireRedis(
    ctx: RateLimitContext,
    redis: NonNullable<RateLimitContext['redis']>,
    count: number,
  ): Promise<RateLimitDecision> {
    const key = redisKey(ctx, 'tb', this.name);
    let reply: string[];
    try {
      reply = await runScript(redis, 'taskqRlTokenBucket', key, [
        'acquire',
        this.capacity,
        this.refillPerSecond,
        count,
        Math.ceil(this.ttlMs),
      ]);
    } catch (err) {
      throw mapRedisDataError(err, this.name, key);
    }
    if (reply[0] === 'corrupt') throw this.corrupt(reply);
    const after = replyNumber(reply[1], this.name, 'tokens');
    const avail = replyNumber(reply[2], this.name, 'available tokens');
    return this.toDecision(reply[0] === 'allowed', after, avail, count, 'redis', null);
  }

  private async acquirePostgres(ctx: RateLimitContext, count: number): Promise<RateLimitDecision> {
    const driver = requireDriver(ctx, this.name);
    const text = sql('tokenBucketAcquire', schemaOf(ctx));
    const params = [
      this.name,
      this.capacity,
      this.refillPerSecond,
      count,
      lockTimeoutSetting(ctx),
      this.keyed,
      this.backend === 'memory' ? 'postgres' : this.backend,
    ];
    for (let attempt = 1; ; attempt++) {
      let rows: Record<string, unknown>[];
      try {
        ({ rows } = await driver.query(text, params));
      } catch (err) {
        if (!isLockTimeout(err)) throw err;
        ctx.logger?.debug(
          { bucketName: this.name, lockTimeoutMs: lockTimeoutMs(ctx) },
          'ratelimit-lock-timeout',
        );
        // Fail closed: a bucket whose row lock cannot be won in time admits nobody.
        return decision({
          allowed: false,
          remaining: 0,
          retryAfterMs: Math.ceil(lockTimeoutMs(ctx)),
          bucketName: this.name,
          backend: 'postgres',
        });
      }
      const row = rows[0];
      if (row === undefined) {
        if (attempt < CREATE_RACE_ATTEMPTS) continue;
        throw new Error(`token bucket ${this.name}: its row kept appearing concurrently; try again`);
      }
      const tokens = toNumber(row.tokens);
      const avail = toNumber(row.avail);
      if (tokens === null || avail === null || tokens < 0) {
        throw new RateLimitStoreCorrupt(this.name, 'postgres', `tokens is ${String(row.tokens)}`);
      }
      return this.toDecision(
        row.allowed === true,
        tokens,
        avail,
        count,
        'postgres',
        toNumber(row.prev_tokens),
      );
    }
  }

  private async peekPostgres(ctx: RateLimitContext): Promise<number> {
    const driver = requireDriver(ctx, this.name);
    const { rows } = await driver.query(sql('tokenBucketPeek', schemaOf(ctx)), [
      this.name,
      this.capacity,
      this.refillPerSecond,
    ]);
    const row = rows[0];
    if (row === undefined) return this.capacity;
    const avail = toNumber(row.avail);
    if (avail === null || avail < 0)
      throw new RateLimitStoreCorrupt(this.name, 'postgres', `tokens is ${String(row.avail)}`);
    return avail;
  }

  private toDecision(
    allowed: boolean,
    after: number,
    avail: number,
    count: number,
    backend: RateLimitBackend,
    prev: number | null,
  ): RateLimitDecision {
    const retry = allowed
      ? 0
      : this.refillPerSecond > 0
        ? retryMs(((count - avail) / this.refillPerSecond) * 1000)
        : null;
    return decision({
      allowed,
      remaining: after,
      retryAfterMs: retry,
      bucketName: this.name,
      backend,
      previousState: { tokens: prev },
    });
  }

  private toState(avail: number, backend: RateLimitBackend): RateLimitState {
    const exhausted = avail < 1;
    return state({
      bucketName: this.name,
      backend,
      kind: 'token_bucket',
      isExhausted: exhausted,
      tokensRemaining: avail,
      remaining: 0,
      retryAfterMs: exhausted
        ? this.refillPerSecond > 0
          ? retryMs(((1 - avail) / this.refillPerSecond) * 1000)
          : null
        : 0,
      capacity: this.capacity,
      refillPerSecond: this.refillPerSecond,
      limit: null,
      windowMs: null,
      style: null,
    });
  }

  private corrupt(reply: string[]): RateLimitStoreCorrupt {
    return new RateLimitStoreCorrupt(this.name, 'redis', `hash holds tokens=${reply[1]} ts=${reply[2]}`);
  }
}
