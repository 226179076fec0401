import type { Redis } from 'ioredis';

import type { Clock } from '../core/clock.js';
import type { Driver } from '../db/driver.js';
import type { Logger } from '../obs/logger.js';
import type { RateLimitStores } from './stores/rate-limit-stores.js';

/** Where a rate limit keeps its state. `'memory'` is per process (tests, single-process dev). */
export type RateLimitBackend = 'redis' | 'postgres' | 'memory';

/** Algorithm of a `SlidingWindow`: a timestamp per request, or one GCRA arrival-time cell. */
export type SlidingWindowStyle = 'log' | 'gcra';

/**
 * The stores (or connections) and settings a primitive needs for one call. The worker builds one
 * per process and passes it to every `acquire` / `release` / `peek`; non-job code does the same.
 * Give either `stores` (see `rateLimitStoresFor`) or the connections (`redis`, `driver`, `schema`,
 * `pgFallback`, `lockTimeoutMs`) from which the stores are built per call.
 */
export interface RateLimitContext {
  /**
   * The stores to use; when set, `redis`, `driver`, `schema`, `pgFallback` and `lockTimeoutMs` are
   * ignored (the stores were built with them). `'memory'` primitives keep their own store on `clock`.
   */
  stores?: RateLimitStores | null;
  /** ioredis client, for `backend: 'redis'` primitives. */
  redis?: Redis | null;
  /** Postgres driver, for `'postgres'` primitives, reservations and the Redis fallback. */
  driver?: Driver | null;
  /** Postgres schema holding the rate-limit tables. Default `'taskq'`. */
  schema?: string;
  /** Clock of the `'memory'` backend (ignored by Redis and Postgres, which use their own clocks). */
  clock?: Clock;
  /**
   * Fall back to Postgres when Redis raises a connection or timeout error
   * (`TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED`). Default true.
   */
  pgFallback?: boolean;
  /** Where warnings go (fallbacks, resets, rollback failures). Default: silent. */
  logger?: Logger;
  /** Prefix of every Redis key. Default `'taskq:rl:'` (or the Redis store's own); a registry passes its own. */
  redisKeyPrefix?: string;
  /**
   * How long a Postgres acquire waits for a contended bucket row lock before it gives up and
   * denies (fail closed), in ms. Default 200.
   */
  lockTimeoutMs?: number;
}

/**
 * The keys of {@link RateLimitContext}: any other key of a context is refused (a misspelt `clock`
 * would otherwise leave the primitive without one, or a misspelt `schema` on the default schema).
 */
export const RATE_LIMIT_CONTEXT_KEYS: readonly string[] = [
  'stores',
  'redis',
  'driver',
  'schema',
  'clock',
  'pgFallback',
  'logger',
  'redisKeyPrefix',
  'lockTimeoutMs',
];

/** The outcome of one `acquire()` on a rate limit. Immutable. */
export interface RateLimitDecision {
  /** The request was admitted (its token or window slot is spent). */
  readonly allowed: boolean;
  /** Tokens (or window slots) left after this call; an estimate for GCRA. */
  readonly remaining: number;
  /**
   * Milliseconds to wait before trying again: 0 when allowed; null when a fixed quota
   * (`refillPerSecond: 0`) is exhausted and will never recover on its own.
   */
  readonly retryAfterMs: number | null;
  /** Name of the primitive. */
  readonly bucketName: string;
  /** The store that actually decided (and holds the spent token): differs from the configured one after a Redis fallback. */
  readonly backend: RateLimitBackend;
  /** Id of the logged request (log-style sliding windows only); `refund()` removes exactly it. */
  readonly requestId: string | null;
  /** Store state before this call (tokens or GCRA arrival time), for diagnostics. */
  readonly previousState: Readonly<Record<string, number | null>> | null;
}

/** A read-only snapshot of a rate limit (`peek()`); nothing is consumed. */
export interface RateLimitState {
  /** Name of the primitive. */
  readonly bucketName: string;
  /** The store that answered. */
  readonly backend: RateLimitBackend;
  /** Which primitive this is. */
  readonly kind: 'token_bucket' | 'sliding_window';
  /** No request would be admitted right now. */
  readonly isExhausted: boolean;
  /** Token bucket: tokens available now (0 for sliding windows). */
  readonly tokensRemaining: number;
  /** Sliding window: requests that would still fit now (0 for token buckets). */
  readonly remaining: number;
  /** When exhausted, ms until the next admission is possible (null: never, for an exhausted fixed quota); 0 otherwise. */
  readonly retryAfterMs: number | null;
  /** Token bucket capacity (null for sliding windows). */
  readonly capacity: number | null;
  /** Token bucket refill per second (null for sliding windows). */
  readonly refillPerSecond: number | null;
  /** Sliding window limit (null for token buckets). */
  readonly limit: number | null;
  /** Sliding window length in ms (null for token buckets). */
  readonly windowMs: number | null;
  /** Sliding window style (null for token buckets). */
  readonly style: SlidingWindowStyle | null;
}

/** Backoff used when a denial carries no retry hint (an exhausted fixed quota). */
export const DEFAULT_RESERVATION_BACKOFF_MS = 5000;
/** Added to the earliest live lease's remaining time in a reservation denial's retry hint. */
export const RESERVATION_RETRY_HINT_MARGIN_MS = 50;
/** Default cap on materialised keyed reservations per registry (`TASKQ_MAX_KEYED_RESERVATIONS`). */
export const DEFAULT_MAX_KEYED_RESERVATIONS = 10_000;
/** Default cap on materialised keyed rate limits per registry (`TASKQ_MAX_KEYED_RATE_LIMITS`). */
export const DEFAULT_MAX_KEYED_RATE_LIMITS = 10_000;
/** Idle time after which a keyed entry may be evicted from a registry (the worker's sweep default). */
export const KEYED_IDLE_THRESHOLD_MS = 3_600_000;
/** Opportunistic eviction on a full keyed cap scans at most this often. */
export const OPPORTUNISTIC_EVICT_MIN_INTERVAL_MS = 30_000;
/** Default Redis key prefix. */
export const DEFAULT_REDIS_KEY_PREFIX = 'taskq:rl:';
/** Default Postgres row-lock budget of an acquire, in ms. */
export const DEFAULT_PG_LOCK_TIMEOUT_MS = 200;
/** Safety margin added to every default Redis key TTL. */
export const TTL_SAFETY_MARGIN_MS = 60_000;
