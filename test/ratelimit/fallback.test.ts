import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  FallbackRateLimitStore,
  PostgresRateLimitStore,
  RateLimitRegistry,
  RateLimitStoreUnavailable,
  RedisRateLimitStore,
  SlidingWindow,
  TokenBucket,
  isRedisConnectionError,
  type TokenBucketSpec,
} from '../../src/ratelimit/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { captureLogger, uniqueName } from './conformance.js';
import {
  deadRedis,
  dropPrefix,
  elapseOnStoreClock,
  postgresClockMs,
  testRedis,
  uniquePrefix,
} from './helpers.js';
import { defineRateLimitStoreConformance } from './store-conformance.js';

let db: TestSchema;
let dead: Redis;
let live: Redis;
const prefix = uniquePrefix();

beforeAll(async () => {
  db = await migratedSchema('rl_fb');
  dead = deadRedis();
  live = testRedis();
});
afterAll(async () => {
  dead.disconnect();
  await dropPrefix(live, prefix);
  live.disconnect();
  await db.drop();
});

const pgStore = (): PostgresRateLimitStore =>
  new PostgresRateLimitStore({ driver: db.driver, schema: db.schema });

// During an outage the composition is the fallback store, operation for operation.
defineRateLimitStoreConformance('Redis down, falling back to Postgres', () => ({
  store: () => new FallbackRateLimitStore(new RedisRateLimitStore({ redis: dead }), pgStore()),
  decidedBy: 'postgres',
  // Redis is down: the Postgres fallback decides, on its clock.
  elapse: elapseOnStoreClock(() => postgresClockMs(db.driver)),
  holdsSlots: false,
  publishes: true,
  sweeps: false,
}));

describe('FallbackRateLimitStore', () => {
  const bucket = (): TokenBucketSpec => ({
    name: uniqueName('fbs'),
    capacity: 2,
    refillPerSecond: 0,
    ttlMs: 60_000,
    keyed: false,
    backend: 'redis',
  });

  it('decides on the primary while it is up; forBackend finds either member', async () => {
    const primary = new RedisRateLimitStore({ redis: live, keyPrefix: prefix });
    const fallback = pgStore();
    const store = new FallbackRateLimitStore(primary, fallback);
    expect(store.backend).toBe('redis');
    expect((await store.acquireTokens(bucket(), 1)).backend).toBe('redis');
    expect(store.forBackend('redis')).toBe(primary);
    expect(store.forBackend('postgres')).toBe(fallback);
    expect(store.forBackend('memory')).toBeNull();
  });

  it('a refund through the composition goes to the primary and never falls back', async () => {
    const store = new FallbackRateLimitStore(new RedisRateLimitStore({ redis: dead }), pgStore());
    const err = await store.refundTokens(bucket(), 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitStoreUnavailable);
    expect((err as RateLimitStoreUnavailable).reason).toMatch(/^refund failed: /);
  });

  it('disabled or without a fallback, the outage surfaces with the reason', async () => {
    const primary = new RedisRateLimitStore({ redis: dead });
    const off = await new FallbackRateLimitStore(primary, pgStore(), { enabled: false })
      .acquireTokens(bucket(), 1)
      .catch((e: unknown) => e);
    expect(off).toBeInstanceOf(RateLimitStoreUnavailable);
    expect((off as Error).message).toMatch(/fallback disabled/);
    expect(isRedisConnectionError((off as Error).cause)).toBe(true);
    const none = await new FallbackRateLimitStore(primary, null)
      .peekTokens(bucket())
      .catch((e: unknown) => e);
    expect(none).toBeInstanceOf(RateLimitStoreUnavailable);
    expect((none as Error).message).toMatch(/no ctx\.driver to fall back to Postgres/);
  });

  it('a reset on the primary clears the fallback state too; a failure there is only logged', async () => {
    const logger = captureLogger();
    const primary = new RedisRateLimitStore({ redis: live, keyPrefix: prefix });
    const b = bucket();
    const fallback = pgStore();
    await fallback.acquireTokens(b, 2); // state left by an earlier outage
    await new FallbackRateLimitStore(primary, fallback, { logger }).resetBucket(b.name, 'token_bucket');
    expect((await fallback.peekTokens(b)).available).toBe(2);
    const broken = new PostgresRateLimitStore({ driver: db.driver, schema: 'no_such_schema_here' });
    await new FallbackRateLimitStore(primary, broken, { logger }).resetBucket(b.name, 'token_bucket');
    expect(logger.entries.some((e) => e.msg === 'ratelimit-reset-fallback-state-failed')).toBe(true);
  });

  it('withKeyPrefix applies to the primary and keeps the fallback', async () => {
    const primary = new RedisRateLimitStore({ redis: live, keyPrefix: prefix });
    const store = new FallbackRateLimitStore(primary, pgStore());
    const other = `${prefix}other:`;
    const view = store.withKeyPrefix(other);
    expect(store.withKeyPrefix(prefix)).toBe(store);
    expect(store.withKeyPrefix(other)).toBe(view);
    const b = bucket();
    await view.acquireTokens(b, 1);
    expect(await live.exists(`${other}tb:${b.name}`)).toBe(1);
    expect(await live.exists(`${prefix}tb:${b.name}`)).toBe(0);
  });
});

describe('Redis unreachable', () => {
  it('falls back to Postgres, says so in decision.backend and logs a warning', async () => {
    const prims = [
      new TokenBucket(uniqueName('fb'), { capacity: 2, refillPerSecond: 1 }),
      new SlidingWindow(uniqueName('fb'), { limit: 2, window: '1m' }),
      new SlidingWindow(uniqueName('fb'), { limit: 2, window: '1m', style: 'gcra' }),
    ];
    for (const p of prims) {
      const logger = captureLogger();
      const d = await p.acquire({ redis: dead, driver: db.driver, schema: db.schema, logger });
      expect(d.allowed).toBe(true);
      expect(d.backend).toBe('postgres');
      const warn = logger.entries.find((e) => e.msg === 'ratelimit-redis-fallback');
      expect(warn?.level).toBe('warn');
      expect(warn?.fields).toMatchObject({ backend: 'redis', fallback: 'postgres', bucketName: p.name });
      // The Postgres row now holds the spent token.
      const { rows } = await db.pool.query(
        `SELECT backend FROM "${db.schema}".rate_limit_buckets WHERE bucket_name = $1`,
        [p.name],
      );
      expect(rows).toEqual([{ backend: 'redis' }]);
      const state = await p.peek({ redis: dead, driver: db.driver, schema: db.schema });
      expect(state.backend).toBe('postgres');
    }
  });

  it('a refund goes to the store that paid (decision.backend), not the configured one', async () => {
    const tb = new TokenBucket(uniqueName('fb-refund'), { capacity: 1, refillPerSecond: 0 });
    const ctx = { redis: dead, driver: db.driver, schema: db.schema };
    const d = await tb.acquire(ctx);
    expect(d.backend).toBe('postgres');
    expect((await tb.acquire(ctx)).allowed).toBe(false);
    await tb.refund(d, ctx); // Redis is still down: this must not touch it
    expect((await tb.acquire(ctx)).allowed).toBe(true);
  });

  it('with the fallback disabled the error surfaces as RateLimitStoreUnavailable (cause: the ioredis error)', async () => {
    const tb = new TokenBucket(uniqueName('fb-off'), { capacity: 1, refillPerSecond: 1 });
    const err = await tb
      .acquire({ redis: dead, driver: db.driver, schema: db.schema, pgFallback: false })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitStoreUnavailable);
    expect((err as RateLimitStoreUnavailable).code).toBe('TASKQ_RATE_LIMIT_STORE_UNAVAILABLE');
    expect((err as RateLimitStoreUnavailable).backend).toBe('redis');
    expect(isRedisConnectionError((err as Error).cause)).toBe(true);
    const { rows } = await db.pool.query(
      `SELECT 1 FROM "${db.schema}".rate_limit_buckets WHERE bucket_name = $1`,
      [tb.name],
    );
    expect(rows).toEqual([]);
  });

  it('without a driver there is nothing to fall back to: RateLimitStoreUnavailable', async () => {
    const tb = new TokenBucket(uniqueName('fb-nodriver'), { capacity: 1, refillPerSecond: 1 });
    await expect(tb.acquire({ redis: dead })).rejects.toBeInstanceOf(RateLimitStoreUnavailable);
  });

  it('acquireForActor pays in Postgres and releases through it', async () => {
    const registry = new RateLimitRegistry();
    const tb = new TokenBucket(uniqueName('fb-actor'), { capacity: 1, refillPerSecond: 0 });
    registry.register(tb);
    const ctx = { redis: dead, driver: db.driver, schema: db.schema };
    const held = await registry.acquireForActor(
      { rateLimits: [tb.name], jobId: randomUUID(), workerId: randomUUID() },
      ctx,
    );
    expect(held).toHaveLength(1);
    const handle = held[0]!;
    expect(handle.kind === 'rate_limit' && handle.decision.backend).toBe('postgres');
  });

  it('classifies only connection and timeout errors as outages', () => {
    expect(
      isRedisConnectionError(new Error("Stream isn't writeable and enableOfflineQueue options is false")),
    ).toBe(true);
    expect(isRedisConnectionError(new Error('Connection is closed.'))).toBe(true);
    expect(isRedisConnectionError(new Error('Command timed out'))).toBe(true);
    expect(
      isRedisConnectionError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
    const reply = (message: string): Error => {
      const e = new Error(message);
      Object.defineProperty(e, 'name', { value: 'ReplyError' });
      return e;
    };
    expect(isRedisConnectionError(reply('LOADING Redis is loading the dataset in memory'))).toBe(true);
    expect(
      isRedisConnectionError(reply('WRONGTYPE Operation against a key holding the wrong kind of value')),
    ).toBe(false);
    expect(isRedisConnectionError(reply('ERR Error running script'))).toBe(false);
    expect(isRedisConnectionError(new TypeError('x is not a function'))).toBe(false);
    expect(isRedisConnectionError('ECONNREFUSED')).toBe(false);
  });
});
