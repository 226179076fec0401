import { createHash } from 'node:crypto';

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import * as LUA from '../../src/ratelimit/stores/redis/lua.generated.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import {
  RateLimitRegistry,
  RateLimitBackendMissing,
  RateLimitStoreCorrupt,
  RedisRateLimitStore,
  SlidingWindow,
  TokenBucket,
} from '../../src/ratelimit/index.js';
import {
  captureLogger,
  defineSlidingWindowConformance,
  defineTokenBucketConformance,
  uniqueName,
  type ConformanceHarness,
} from './conformance.js';
import { waitFor } from '../helpers/wait.js';
import { defineRateLimitStoreConformance } from './store-conformance.js';
import { dropPrefix, elapseOnStoreClock, redisClockMs, testRedis, uniquePrefix } from './helpers.js';

let redis: Redis;
const prefixes: string[] = [];

beforeAll(() => {
  redis = testRedis();
});
afterAll(async () => {
  for (const p of prefixes) await dropPrefix(redis, p);
  redis.disconnect();
});

function redisHarness(): ConformanceHarness {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  return {
    backend: 'redis',
    ctx: () => ({ redis, redisKeyPrefix: prefix, logger: captureLogger() }),
    elapse: elapseOnStoreClock(() => redisClockMs(redis)),
    reservationOptions: () => ({}),
  };
}

defineTokenBucketConformance(redisHarness);
defineSlidingWindowConformance(redisHarness, 'log');
defineSlidingWindowConformance(redisHarness, 'gcra');

defineRateLimitStoreConformance('redis', () => {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  return {
    store: () => new RedisRateLimitStore({ redis, keyPrefix: prefix }),
    elapse: elapseOnStoreClock(() => redisClockMs(redis)),
    holdsSlots: false,
    publishes: false,
    sweeps: false,
  };
});

describe('redis backend specifics', () => {
  it('keys are {prefix}{tb|gcra|swlog}:{name} and carry the documented TTLs', async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const ctx = { redis, redisKeyPrefix: prefix };
    const tb = new TokenBucket('api:tenant-1', { capacity: 100, refillPerSecond: 10 });
    const quota = new TokenBucket('daily', { capacity: 5, refillPerSecond: 0 });
    const log = new SlidingWindow('per-min', { limit: 60, window: '1m' });
    const gcra = new SlidingWindow('per-hour', { limit: 3600, window: '1h', style: 'gcra' });
    const custom = new TokenBucket('custom', { capacity: 1, refillPerSecond: 1, ttl: '5m' });
    for (const p of [tb, quota, log, gcra, custom]) await p.acquire(ctx);
    const ttl = async (key: string): Promise<number> => Math.round((await redis.pttl(key)) / 1000);
    // ceil(100 / 10 * 2) + 60 = 80 s; refill 0 → 24 h; log 2 × window + 60; gcra window + 60.
    expect(await ttl(`${prefix}tb:api:tenant-1`)).toBe(80);
    expect(await ttl(`${prefix}tb:daily`)).toBe(86_400);
    expect(await ttl(`${prefix}swlog:per-min`)).toBe(180);
    expect(await ttl(`${prefix}gcra:per-hour`)).toBe(3660);
    expect(await ttl(`${prefix}tb:custom`)).toBe(300);
    expect(tb.ttlMs).toBe(80_000);
    expect(await redis.zcard(`${prefix}swlog:per-min`)).toBe(1);
  });

  it("a registry's key prefix applies to every call made through it", async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const registry = new RateLimitRegistry({ redisKeyPrefix: prefix });
    registry.register(new TokenBucket('via-registry', { capacity: 2, refillPerSecond: 1 }));
    await registry.acquire('via-registry', { redis });
    expect(await redis.exists(`${prefix}tb:via-registry`)).toBe(1);
    expect(await redis.exists('taskq:rl:tb:via-registry')).toBe(0);
    expect((await registry.peek('via-registry', { redis })).tokensRemaining).toBeLessThan(2);
  });

  it('runs the scripts by SHA (defineCommand / EVALSHA)', async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    await new TokenBucket(uniqueName('sha'), { capacity: 1, refillPerSecond: 1 }).acquire({
      redis,
      redisKeyPrefix: prefix,
    });
    const sha = createHash('sha1').update(LUA.tokenBucket).digest('hex');
    expect(await redis.script('EXISTS', sha)).toEqual([1]);
  });

  it('decides on the Redis clock: an injected clock is ignored', async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const clock = new FakeClock(Date.UTC(1990, 0, 1));
    const tb = new TokenBucket(uniqueName('clk'), { capacity: 1, refillPerSecond: 20 });
    const ctx = { redis, redisKeyPrefix: prefix, clock };
    expect((await tb.acquire(ctx)).allowed).toBe(true);
    clock.advance('1d'); // would refill a memory bucket; Redis has not seen time pass
    expect((await tb.acquire(ctx)).allowed).toBe(false);
  });

  it('impossible stored state raises RateLimitStoreCorrupt, and reset repairs it', async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const ctx = { redis, redisKeyPrefix: prefix };
    const tb = new TokenBucket('corrupt', { capacity: 5, refillPerSecond: 1 });
    await redis.hset(`${prefix}tb:corrupt`, 'tokens', 'banana', 'ts', '1');
    await expect(tb.acquire(ctx)).rejects.toBeInstanceOf(RateLimitStoreCorrupt);
    await redis.hset(`${prefix}tb:corrupt`, 'tokens', '-3', 'ts', '1');
    await expect(tb.acquire(ctx)).rejects.toBeInstanceOf(RateLimitStoreCorrupt);
    const gcra = new SlidingWindow('corrupt-g', { limit: 2, window: 1000, style: 'gcra' });
    await redis.set(`${prefix}gcra:corrupt-g`, 'x');
    await expect(gcra.acquire(ctx)).rejects.toBeInstanceOf(RateLimitStoreCorrupt);
    const log = new SlidingWindow('corrupt-l', { limit: 2, window: 1000 });
    await redis.set(`${prefix}swlog:corrupt-l`, 'not a zset');
    const err = await log.acquire(ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitStoreCorrupt);
    expect((err as RateLimitStoreCorrupt).code).toBe('TASKQ_RATE_LIMIT_STORE_CORRUPT');
    await tb.reset(ctx);
    expect((await tb.acquire(ctx)).allowed).toBe(true);
  });

  it("a denial writes nothing: a fixed quota's TTL keeps counting from its last admission", async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const ctx = { redis, redisKeyPrefix: prefix };
    const quota = new TokenBucket('q', { capacity: 1, refillPerSecond: 0, ttl: 2000 });
    await quota.acquire(ctx);
    // Redis counts the TTL down on its own clock: wait until it has, then be denied.
    const key = `${prefix}tb:q`;
    await waitFor(async () => (await redis.pttl(key)) < 1800, 10_000, 'the TTL to count down');
    expect((await quota.acquire(ctx)).allowed).toBe(false);
    expect(await redis.pttl(key)).toBeLessThan(1800); // not set back to 2000 by the denial
  });

  it("backend 'redis' without ctx.redis is a configuration error (never a fallback)", async () => {
    const tb = new TokenBucket(uniqueName('none'), { capacity: 1, refillPerSecond: 1 });
    const err = await tb.acquire({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitBackendMissing);
    expect((err as RateLimitBackendMissing).missing).toBe('redis');
  });
});
