import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Duration } from '../core/duration.js';
import { decision, retryMs, state } from './decision.js';
import { checkName, checkNumber, optionalDuration } from './names.js';
import {
  OwnMemoryStore,
  checkRateLimitContext,
  storeFor,
  storeThatDecided,
} from './stores/context-stores.js';
import type { RateLimitStore, TokenBucketOutcome } from './stores/rate-limit-store.js';
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

/** The keys of {@link TokenBucketOptions}: any other is refused (a misspelt `ttl` kept the default). */
const TOKEN_BUCKET_OPTION_KEYS: readonly string[] = [
  'capacity',
  'refillPerSecond',
  'backend',
  'ttl',
  'keyed',
];

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
 * The state lives in a {@link RateLimitStore} chosen by `backend`: the context's Redis store (one
 * atomic Lua script on the Redis clock, with the Postgres fallback), its shared store (Postgres:
 * one statement on `clock_timestamp()` under a bounded row lock — a lock not won in time is a
 * denial, never an admission), or a memory store of this instance's own on `ctx.clock`.
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

  private readonly memory = new OwnMemoryStore();

  constructor(name: string, options: TokenBucketOptions) {
    this.name = checkName(name, 'TokenBucket.name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('TokenBucket.options', options, 'must be an object');
    checkKnownKeys(options, TOKEN_BUCKET_OPTION_KEYS, 'TokenBucket', 'an option of TokenBucket');
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
    checkRateLimitContext(ctx, 'TokenBucket.acquire.ctx');
    checkNumber(count, 'TokenBucket.acquire.count');
    if (count > this.capacity) {
      throw new InvalidArgumentError(
        'TokenBucket.acquire.count',
        count,
        `must not exceed the capacity (${this.capacity}): such a request could never be admitted`,
      );
    }
    return this.toDecision(await this.store(ctx).acquireTokens(this, count), count);
  }

  /**
   * Gives `count` tokens back (capped at capacity) to the store that paid for `decision`
   * (`decision.backend`). For the rollback path only — never after the guarded work ran.
   */
  async refund(decisionToRefund: RateLimitDecision, ctx: RateLimitContext, count = 1): Promise<void> {
    checkRateLimitContext(ctx, 'TokenBucket.refund.ctx');
    checkNumber(count, 'TokenBucket.refund.count');
    if (!decisionToRefund.allowed) return;
    await storeThatDecided(ctx, this.backend, decisionToRefund.backend, this.name, this.memory).refundTokens(
      this,
      count,
    );
  }

  /** Current state without consuming anything. */
  async peek(ctx: RateLimitContext): Promise<RateLimitState> {
    checkRateLimitContext(ctx, 'TokenBucket.peek.ctx');
    const reading = await this.store(ctx).peekTokens(this);
    return this.toState(reading.available, reading.backend);
  }

  /**
   * Refills the bucket to capacity at once (Redis `DEL`, also clearing the Postgres fallback state;
   * Postgres clears the row's state, keeping the row; memory restores capacity). Idempotent. Logs
   * warning `ratelimit-reset`.
   */
  async reset(ctx: RateLimitContext): Promise<void> {
    checkRateLimitContext(ctx, 'TokenBucket.reset.ctx');
    await this.store(ctx).resetBucket(this.name, 'token_bucket');
    ctx.logger?.warn({ bucketName: this.name, backend: this.backend }, 'ratelimit-reset');
  }

  /**
   * True when evicting this bucket from a registry would silently hand back quota already spent:
   * only a memory-backed fixed quota (refill 0) with tokens below capacity. Postgres and Redis keep
   * that state outside the process.
   */
  holdsConsumedQuota(): boolean {
    if (this.refillPerSecond !== 0 || this.backend !== 'memory') return false;
    const tokens = this.memory.current?.storedTokens(this.name) ?? null;
    return tokens !== null && tokens < this.capacity;
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

  private store(ctx: RateLimitContext): RateLimitStore {
    return storeFor(ctx, this.backend, this.name, this.memory);
  }

  /** The decision of a store's outcome; the retry hint is the time until `count` tokens are back. */
  private toDecision(outcome: TokenBucketOutcome, count: number): RateLimitDecision {
    if (outcome.status === 'busy') {
      // Fail closed: a bucket whose state the store could not lock in time admits nobody.
      return decision({
        allowed: false,
        remaining: 0,
        retryAfterMs: outcome.retryAfterMs,
        bucketName: this.name,
        backend: outcome.backend,
      });
    }
    const allowed = outcome.status === 'allowed';
    const retry = allowed
      ? 0
      : this.refillPerSecond > 0
        ? retryMs(((count - outcome.available) / this.refillPerSecond) * 1000)
        : null;
    return decision({
      allowed,
      remaining: outcome.tokens,
      retryAfterMs: retry,
      bucketName: this.name,
      backend: outcome.backend,
      previousState: { tokens: outcome.previousTokens },
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
}
