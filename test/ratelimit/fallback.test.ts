import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  RateLimitRegistry,
  RateLimitStoreUnavailable,
  SlidingWindow,
  TokenBucket,
  isRedisConnectionError,
} from '../../src/ratelimit/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { captureLogger, uniqueName } from './conformance.js';
import { deadRedis } from './helpers.js';

let db: TestSchema;
let dead: Redis;

beforeAll(async () => {
  db = await migratedSchema('rl_fb');
  dead = deadRedis();
});
afterAll(async () => {
  dead.disconnect();
  await db.drop();
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
