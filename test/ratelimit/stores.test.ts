// rateLimitStoresFor(): which stores it builds from which connections, and that an owned Redis
// client is built only on first need and closed by close().
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import {
  FallbackRateLimitStore,
  MemoryRateLimitStore,
  PostgresRateLimitStore,
  RateLimitBackendMissing,
  RateLimitRegistry,
  RedisRateLimitStore,
  TokenBucket,
  rateLimitStoresFor,
  type TokenBucketSpec,
} from '../../src/ratelimit/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { TEST_DSN, migratedSchema, type TestSchema } from '../helpers/db.js';
import { uniqueName } from './conformance.js';
import { TEST_REDIS_URL, dropPrefix, testRedis, uniquePrefix } from './helpers.js';

let db: TestSchema;
let redis: Redis;
const prefix = uniquePrefix();

beforeAll(async () => {
  db = await migratedSchema('rl_st');
  redis = testRedis();
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
  await db.drop();
});

const bucket = (): TokenBucketSpec => ({
  name: uniqueName('bld'),
  capacity: 2,
  refillPerSecond: 0,
  ttlMs: 60_000,
  keyed: false,
  backend: 'redis',
});

describe('rateLimitStoresFor', () => {
  it('without a driver: a memory shared store on the given clock, no Redis', async () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const stores = rateLimitStoresFor({ clock });
    expect(stores.shared).toBeInstanceOf(MemoryRateLimitStore);
    expect((stores.shared as MemoryRateLimitStore).clock).toBe(clock);
    expect(stores.leases).toBeUndefined();
    expect(stores.redis).toBeNull();
    await stores.close();
  });

  it('with a driver: Postgres on the schema; leases only on a distinct lease driver', async () => {
    const same = rateLimitStoresFor({ driver: db.driver, leaseDriver: db.driver, schema: db.schema });
    expect(same.shared).toBeInstanceOf(PostgresRateLimitStore);
    expect((same.shared as PostgresRateLimitStore).schema).toBe(db.schema);
    expect(same.leases).toBeUndefined();
    const other = new PgDriver({ connection: TEST_DSN, maxPoolSize: 1 });
    try {
      const split = rateLimitStoresFor({ driver: db.driver, leaseDriver: other, schema: db.schema });
      expect((split.leases as PostgresRateLimitStore).driver).toBe(other);
    } finally {
      await other.close();
    }
  });

  it('with a Redis client: a Redis store falling back to the Postgres one (a memory one never stands in)', async () => {
    const stores = rateLimitStoresFor({
      driver: db.driver,
      schema: db.schema,
      redis,
      redisKeyPrefix: prefix,
    });
    const composed = stores.redis as FallbackRateLimitStore;
    expect(composed).toBeInstanceOf(FallbackRateLimitStore);
    expect(composed.primary).toBeInstanceOf(RedisRateLimitStore);
    expect((composed.primary as RedisRateLimitStore).keyPrefix).toBe(prefix);
    expect(composed.fallback).toBe(stores.shared);
    expect(composed.enabled).toBe(true);
    expect(rateLimitStoresFor({ redis, pgFallback: false, driver: db.driver }).redis).toMatchObject({
      enabled: false,
    });
    expect((rateLimitStoresFor({ redis }).redis as FallbackRateLimitStore).fallback).toBeNull();
    await stores.close();
    expect(await redis.ping()).toBe('PONG'); // a given client is never closed
  });

  it('with a Redis URL: the client is built on first need (open() or a first operation) and closed by close()', async () => {
    for (const first of ['open', 'use'] as const) {
      const stores = rateLimitStoresFor({ redisUrl: TEST_REDIS_URL, redisKeyPrefix: prefix });
      if (first === 'open') await stores.redis!.open?.();
      const d = await stores.redis!.acquireTokens(bucket(), 1);
      expect(d).toMatchObject({ status: 'allowed', backend: 'redis' });
      await stores.close();
      await expect(stores.redis!.acquireTokens(bucket(), 1)).rejects.toThrow(/unavailable/);
    }
  });

  it('a bad Redis URL is refused when the store is first opened, not before', async () => {
    const stores = rateLimitStoresFor({ redisUrl: 'http://not-redis' });
    await expect(stores.redis!.open!()).rejects.toBeInstanceOf(InvalidArgumentError);
    await stores.close();
  });

  it('a context with stores uses them: connections are ignored, a missing Redis store is a configuration error', async () => {
    const stores = rateLimitStoresFor({ driver: db.driver, schema: db.schema });
    const pgBucket = new TokenBucket(uniqueName('ctx'), {
      capacity: 1,
      refillPerSecond: 0,
      backend: 'postgres',
    });
    expect((await pgBucket.acquire({ stores })).backend).toBe('postgres');
    const redisBucket = new TokenBucket(uniqueName('ctx'), { capacity: 1, refillPerSecond: 0 });
    const err = await redisBucket.acquire({ stores, redis }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitBackendMissing);
    expect((err as RateLimitBackendMissing).missing).toBe('redis');
  });

  it("a registry's key prefix applies to the Redis store of the context", async () => {
    const stores = rateLimitStoresFor({ redis });
    const registry = new RateLimitRegistry({ redisKeyPrefix: prefix });
    const name = uniqueName('reg');
    registry.register(new TokenBucket(name, { capacity: 2, refillPerSecond: 1 }));
    await registry.acquire(name, { stores });
    expect(await redis.exists(`${prefix}tb:${name}`)).toBe(1);
    expect(await redis.exists(`taskq:rl:tb:${name}`)).toBe(0);
  });

  it('on a memory shared store, a postgres-backed primitive and a reservation live in that store', async () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const stores = rateLimitStoresFor({ clock });
    const tb = new TokenBucket(uniqueName('mem'), { capacity: 1, refillPerSecond: 0, backend: 'postgres' });
    const d = await tb.acquire({ stores });
    expect(d.backend).toBe('memory');
    expect((await tb.acquire({ stores })).allowed).toBe(false);
    await tb.refund(d, { stores }); // to the shared store that decided
    expect((await tb.peek({ stores })).tokensRemaining).toBe(1);
  });
});
