// How a primitive finds its store under a RateLimitContext: the explicit `ctx.stores`, else stores
// built from the context's connections. The one place that maps a backend kind to a store.
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import { RateLimitBackendMissing } from '../errors.js';
import { checkKnownKeys } from '../../core/closest-name.js';
import { RATE_LIMIT_CONTEXT_KEYS, type RateLimitBackend, type RateLimitContext } from '../types.js';
import { FallbackRateLimitStore } from './fallback-rate-limit-store.js';
import { MemoryRateLimitStore } from './memory/memory-rate-limit-store.js';
import { PostgresRateLimitStore } from './postgres/postgres-rate-limit-store.js';
import type { RateLimitStore } from './rate-limit-store.js';
import { RedisRateLimitStore } from './redis/redis-rate-limit-store.js';

/**
 * @internal Refuses a context that is not an object or has a key {@link RateLimitContext} does not
 * know (`<field>.<key>`, with a "did you mean"). Runs on every public call that takes a context —
 * the worker's per-job acquire and release included — hence the allocation-free check.
 */
export function checkRateLimitContext(ctx: unknown, field: string): void {
  if (ctx === null || typeof ctx !== 'object')
    throw new InvalidArgumentError(field, ctx, 'must be a RateLimitContext object');
  checkKnownKeys(ctx, RATE_LIMIT_CONTEXT_KEYS, field, 'a key of a RateLimitContext');
}

/** @internal The shared (fleet-wide) store of a context, or null when it has none. */
export function sharedStoreOrNull(ctx: RateLimitContext): RateLimitStore | null {
  if (ctx.stores) return ctx.stores.shared;
  if (!ctx.driver) return null;
  return new PostgresRateLimitStore({
    driver: ctx.driver,
    ...(ctx.schema !== undefined ? { schema: ctx.schema } : {}),
    ...(ctx.lockTimeoutMs !== undefined ? { lockTimeoutMs: ctx.lockTimeoutMs } : {}),
    logger: ctx.logger ?? null,
  });
}

/** @internal Whether a context has a shared store (without building one). */
export function hasSharedStore(ctx: RateLimitContext): boolean {
  return ctx.stores ? true : Boolean(ctx.driver);
}

/** @internal The shared store of a context, or a configuration error naming what is missing. */
export function sharedStoreOf(ctx: RateLimitContext, bucketName: string): RateLimitStore {
  const store = sharedStoreOrNull(ctx);
  if (store) return store;
  throw new RateLimitBackendMissing(
    bucketName,
    'driver',
    'pass the Postgres driver as ctx.driver (and ctx.schema when not "taskq"), or the stores as ctx.stores',
  );
}

/** @internal The store of `'redis'` primitives (the fallback composed in), under the context's key prefix. */
export function redisStoreOf(ctx: RateLimitContext, bucketName: string): RateLimitStore {
  if (!ctx.stores) {
    if (!ctx.redis) {
      throw new RateLimitBackendMissing(
        bucketName,
        'redis',
        "pass an ioredis client as ctx.redis, or declare the primitive with backend: 'postgres' or 'memory'",
      );
    }
    return new FallbackRateLimitStore(
      new RedisRateLimitStore({
        redis: ctx.redis,
        ...(ctx.redisKeyPrefix !== undefined ? { keyPrefix: ctx.redisKeyPrefix } : {}),
      }),
      sharedStoreOrNull(ctx),
      { enabled: ctx.pgFallback !== false, logger: ctx.logger ?? null },
    );
  }
  const store = ctx.stores.redis;
  if (!store) {
    throw new RateLimitBackendMissing(
      bucketName,
      'redis',
      "no Redis store is configured: set TASKQ_REDIS_URL (or pass a redis client), or declare the primitive with backend: 'postgres' or 'memory'",
    );
  }
  return ctx.redisKeyPrefix !== undefined && store.withKeyPrefix
    ? store.withKeyPrefix(ctx.redisKeyPrefix)
    : store;
}

/**
 * @internal The store a `'memory'` primitive owns: per instance, as memory state has always been,
 * on whatever clock the call's context carries (the state is kept across clocks).
 */
export class OwnMemoryStore {
  private store: MemoryRateLimitStore | null = null;

  /** The store on `ctx.clock`. @throws RateLimitBackendMissing without a clock */
  on(ctx: RateLimitContext, bucketName: string): MemoryRateLimitStore {
    if (!ctx.clock) {
      throw new RateLimitBackendMissing(
        bucketName,
        'clock',
        "backend 'memory' runs on an injected clock: pass ctx.clock (a SystemClock, or a FakeClock in tests)",
      );
    }
    this.store = this.store
      ? this.store.withClock(ctx.clock)
      : new MemoryRateLimitStore({ clock: ctx.clock });
    return this.store;
  }

  /** The store as last used; null before the first call. */
  get current(): MemoryRateLimitStore | null {
    return this.store;
  }
}

/** @internal The store a primitive configured with `backend` uses under `ctx`. */
export function storeFor(
  ctx: RateLimitContext,
  backend: RateLimitBackend,
  bucketName: string,
  own: OwnMemoryStore,
): RateLimitStore {
  if (backend === 'memory') return own.on(ctx, bucketName);
  if (backend === 'postgres') return sharedStoreOf(ctx, bucketName);
  return redisStoreOf(ctx, bucketName);
}

/**
 * @internal The store that decided as `decided` for a primitive configured with `configured`: the
 * member of its store that answers as `decided` (after a fallback, the fallback), else the store
 * the context has for that kind. Refunds go there and never fall back.
 */
export function storeThatDecided(
  ctx: RateLimitContext,
  configured: RateLimitBackend,
  decided: RateLimitBackend,
  bucketName: string,
  own: OwnMemoryStore,
): RateLimitStore {
  let store: RateLimitStore | null = null;
  try {
    store = storeFor(ctx, configured, bucketName, own).forBackend(decided);
  } catch (err) {
    if (!(err instanceof RateLimitBackendMissing)) throw err;
  }
  return store ?? storeFor(ctx, decided, bucketName, own);
}
