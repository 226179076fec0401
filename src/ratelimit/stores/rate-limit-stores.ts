import type { Redis } from 'ioredis';

import { SystemClock, type Clock } from '../../core/clock.js';
import { checkKnownKeys } from '../../core/closest-name.js';
import type { ReloadableRedisCredentials } from '../../credentials/reloadable-redis-credentials.js';
import type { Driver } from '../../db/driver.js';
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import type { Logger } from '../../obs/logger.js';
import { createOwnedRedis } from '../../progress/redis-progress-publisher.js';
import { FallbackRateLimitStore } from './fallback-rate-limit-store.js';
import { MemoryRateLimitStore } from './memory/memory-rate-limit-store.js';
import { PostgresRateLimitStore } from './postgres/postgres-rate-limit-store.js';
import type { RateLimitStore } from './rate-limit-store.js';
import { RedisRateLimitStore } from './redis/redis-rate-limit-store.js';

/**
 * The stores a process's rate limits use, by role. The worker's gate receives them (never
 * connections); a `RateLimitContext` may carry them (`ctx.stores`) instead of `driver` / `redis`.
 */
export interface RateLimitStores {
  /**
   * Fleet-wide state: `'postgres'` primitives, reservations, queue caps, published bucket metadata
   * and the Redis fallback. A `PostgresRateLimitStore`, or a `MemoryRateLimitStore` on the
   * in-memory backend.
   */
  shared: RateLimitStore;
  /** The shared store on the heartbeat's own connections, for lease renewals. Default: `shared`. */
  leases?: RateLimitStore;
  /**
   * For `'redis'` primitives, with the Postgres fallback composed in (a `FallbackRateLimitStore`);
   * null when no Redis is configured. May connect lazily (`open()`).
   */
  redis: RateLimitStore | null;
  /** Releases what {@link rateLimitStoresFor} opened (an owned Redis client); never a given client or driver. */
  close?(): Promise<void>;
}

/** Options of {@link rateLimitStoresFor}. */
export interface RateLimitStoresOptions {
  /** Postgres driver of the fleet-wide state. Null or absent: the in-memory backend (a memory shared store). */
  driver?: Driver | null;
  /** A second Postgres driver for lease renewals (the heartbeat's pool). Default: `driver`. */
  leaseDriver?: Driver | null;
  /** Schema of the rate-limit tables. Default `'taskq'`. */
  schema?: string;
  /** Your ioredis client for Redis-backed limits (never closed by the stores). Wins over `redisUrl`. */
  redis?: Redis | null;
  /**
   * `redis://` or `rediss://` URL (`TASKQ_REDIS_URL`): the Redis store builds and owns a client on
   * first need — nothing connects unless a Redis-backed limit is used — and `close()` closes it.
   */
  redisUrl?: string | null;
  /**
   * Authenticates the client built from `redisUrl` with a credential provider: fetched at every
   * (re)connect, and `redisCredentials.reload()` re-authenticates it (see docs/credentials.md).
   */
  redisCredentials?: ReloadableRedisCredentials | null;
  /** Prefix of every Redis key. Default `'taskq:rl:'` (a registry applies its own to calls through it). */
  redisKeyPrefix?: string;
  /** Clock of the memory shared store (no driver). Default: the system clock. */
  clock?: Clock;
  /** Fall back to Postgres while Redis is unreachable (`TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED`). Default true. */
  pgFallback?: boolean;
  /** Postgres row-lock budget of an acquire, in ms. Default 200. */
  lockTimeoutMs?: number;
  /** Where the stores' warnings go (fallbacks, Redis connection errors, lock timeouts). Default: silent. */
  logger?: Logger | null;
}

/**
 * The keys of {@link RateLimitStoresOptions}: any other is refused (a misspelt `pgFallback` left
 * the fallback on, a misspelt `schema` pointed the stores at the default schema).
 */
const RATE_LIMIT_STORES_OPTION_KEYS: readonly string[] = [
  'driver',
  'leaseDriver',
  'schema',
  'redis',
  'redisUrl',
  'redisCredentials',
  'redisKeyPrefix',
  'clock',
  'pgFallback',
  'lockTimeoutMs',
  'logger',
];

/**
 * Builds the stores of one process from its connections: a {@link PostgresRateLimitStore} on
 * `driver` (or a {@link MemoryRateLimitStore} on `clock` without one) as the shared store, the same
 * on `leaseDriver` for lease renewals, and — when `redis` or `redisUrl` is given — a
 * {@link RedisRateLimitStore} wrapped in a {@link FallbackRateLimitStore} that falls back to the
 * Postgres store (never to a memory one). `close()` releases only what was built here.
 *
 * ```ts
 * const stores = rateLimitStoresFor({ driver, schema: 'taskq', redisUrl: process.env.TASKQ_REDIS_URL });
 * await registry.acquire('stripe_calls', { stores });
 * await stores.close();
 * ```
 */
export function rateLimitStoresFor(
  options: RateLimitStoresOptions = {},
): RateLimitStores & { close(): Promise<void> } {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('rateLimitStoresFor.options', options, 'must be an object');
  // Before any store or client is built.
  checkKnownKeys(
    options,
    RATE_LIMIT_STORES_OPTION_KEYS,
    'rateLimitStoresFor.options',
    'an option of rateLimitStoresFor',
  );
  const logger = options.logger ?? null;
  const postgres = (driver: Driver): PostgresRateLimitStore =>
    new PostgresRateLimitStore({
      driver,
      ...(options.schema !== undefined ? { schema: options.schema } : {}),
      ...(options.lockTimeoutMs !== undefined ? { lockTimeoutMs: options.lockTimeoutMs } : {}),
      logger,
    });
  const driver = options.driver ?? null;
  const shared: RateLimitStore = driver
    ? postgres(driver)
    : new MemoryRateLimitStore({ clock: options.clock ?? new SystemClock() });
  const leaseDriver = options.leaseDriver ?? null;
  const leases = driver && leaseDriver && leaseDriver !== driver ? postgres(leaseDriver) : undefined;

  let redisStore: RedisRateLimitStore | null = null;
  const keyPrefix = options.redisKeyPrefix !== undefined ? { keyPrefix: options.redisKeyPrefix } : {};
  if (options.redis) {
    redisStore = new RedisRateLimitStore({ redis: options.redis, ...keyPrefix, logger });
  } else if (options.redisUrl) {
    const url = options.redisUrl;
    const credentials = options.redisCredentials ?? null;
    redisStore = new RedisRateLimitStore({
      createClient: () =>
        createOwnedRedis(url, 'redisUrl', {
          connectionName: 'taskq-ratelimit',
          lazyConnect: true,
          credentials,
        }),
      ...keyPrefix,
      logger,
    });
  }
  const redis = redisStore
    ? new FallbackRateLimitStore(redisStore, driver ? shared : null, {
        enabled: options.pgFallback ?? true,
        logger,
      })
    : null;
  return {
    shared,
    ...(leases ? { leases } : {}),
    redis,
    close: async () => {
      await redisStore?.close();
    },
  };
}
