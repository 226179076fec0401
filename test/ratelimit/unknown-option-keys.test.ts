/**
 * A misspelt option key of the rate-limit API is an error that names it, never a default left
 * silently in force: the primitives, keyed refs, the registry, the stores, the admin view and the
 * context every call takes. Where a call reads or writes state, the rejected call leaves it as it was.
 */
import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

import { silentLogger } from '../../src/obs/logger.js';
import {
  ConcurrencyReservation,
  FallbackRateLimitStore,
  MemoryRateLimitStore,
  PostgresRateLimitStore,
  RateLimitAdmin,
  RateLimitRegistry,
  RedisRateLimitStore,
  SlidingWindow,
  TokenBucket,
  collectActorPrimitives,
  keyedRateLimit,
  keyedReservation,
  publishBucket,
  rateLimitStoresFor,
  syncSlots,
  type RateLimitContext,
} from '../../src/ratelimit/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { uniqueName } from './conformance.js';
import { testRedis } from './helpers.js';
import { expectRejected } from '../helpers/rejections.js';

const clock = new FakeClock(Date.UTC(2025, 0, 1));
const Tenant = z.object({ tenantId: z.string() });

let db: TestSchema;
let redis: Redis;

beforeAll(async () => {
  db = await migratedSchema('rl_uk');
  redis = testRedis();
});
afterAll(async () => {
  redis.disconnect();
  await db.drop();
});

const bucketRows = async (name: string): Promise<number> =>
  (await db.pool.query(`SELECT 1 FROM "${db.schema}".rate_limit_buckets WHERE bucket_name = $1`, [name]))
    .rowCount ?? 0;
const slotRows = async (name: string): Promise<number> =>
  (await db.pool.query(`SELECT 1 FROM "${db.schema}".reservation_slots WHERE bucket_name = $1`, [name]))
    .rowCount ?? 0;

describe('primitives and keyed refs', () => {
  it('new TokenBucket: a misspelt ttl is refused, not replaced by the default TTL', async () => {
    await expectRejected(
      () => new TokenBucket('tb', { capacity: 5, refillPerSecond: 1, tll: '1h' } as never),
      'TokenBucket.tll',
      'ttl',
    );
  });

  it('new SlidingWindow: a misspelt style is refused, not replaced by log', async () => {
    await expectRejected(
      () => new SlidingWindow('sw', { limit: 5, window: '1s', styl: 'gcra' } as never),
      'SlidingWindow.styl',
      'style',
    );
  });

  it('new ConcurrencyReservation: a misspelt lockLease is refused, not skipped', async () => {
    await expectRejected(
      () => new ConcurrencyReservation('cr', { slots: 2, lease: '1m', lockLeas: '30s' } as never),
      'ConcurrencyReservation.lockLeas',
      'lockLease',
    );
  });

  it('keyedRateLimit / keyedReservation: a misspelt backend or clock is refused', async () => {
    const base = { baseName: 'k', keyFn: (p: { tenantId: string }) => p.tenantId };
    await expectRejected(
      () => keyedRateLimit(Tenant, { ...base, capacity: 1, refillPerSecond: 1, backnd: 'memory' } as never),
      'keyedRateLimit.backnd',
      'backend',
    );
    await expectRejected(
      () => keyedReservation(Tenant, { ...base, slots: 1, lease: '1m', clok: clock } as never),
      'keyedReservation.clok',
      'clock',
    );
    await expectRejected(() => keyedRateLimit(Tenant, null as never), 'keyedRateLimit.options');
  });

  it('the correct keys still take effect', () => {
    expect(new TokenBucket('tb', { capacity: 5, refillPerSecond: 1, ttl: '1h', keyed: true }).ttlMs).toBe(
      3_600_000,
    );
    const sw = new SlidingWindow('sw', {
      limit: 5,
      window: '1s',
      style: 'gcra',
      ttl: 5000,
      backend: 'memory',
    });
    expect([sw.style, sw.ttlMs, sw.backend]).toEqual(['gcra', 5000, 'memory']);
    const cr = new ConcurrencyReservation('cr', {
      slots: 2,
      lease: '1m',
      lockLease: '30s',
      clock,
      logger: silentLogger,
    });
    expect([cr.lockLeaseMs, cr.backend]).toEqual([30_000, 'memory']);
    const keyFn = (p: { tenantId: string }): string => p.tenantId;
    expect(
      keyedRateLimit(Tenant, { baseName: 'k', keyFn, capacity: 1, refillPerSecond: 1, backend: 'memory' })
        .backend,
    ).toBe('memory');
    expect(keyedReservation(Tenant, { baseName: 'k', keyFn, slots: 1, lease: '1m', clock }).clock).toBe(
      clock,
    );
  });

  it('collectActorPrimitives: an object entry that is no primitive or keyed ref stops the start', async () => {
    const registry = new RateLimitRegistry();
    const tb = new TokenBucket(uniqueName('tb'), { capacity: 1, refillPerSecond: 1, backend: 'memory' });
    await expectRejected(
      () => collectActorPrimitives([{ name: 'a', rateLimits: [{ name: 'x' }] }], registry),
      'actor "a": rateLimits[0]',
    );
    await expectRejected(
      () =>
        collectActorPrimitives(
          [{ name: 'a', rateLimits: [tb], reservations: [{ baseName: 'y' }] }],
          registry,
        ),
      'actor "a": reservations[0]',
    );
  });
});

describe('the registry', () => {
  it('new RateLimitRegistry: a misspelt cap is refused, not replaced by 10 000', async () => {
    await expectRejected(
      () => new RateLimitRegistry({ maxKeyedRateLimit: 5 } as never),
      'RateLimitRegistry.options.maxKeyedRateLimit',
      'maxKeyedRateLimits',
    );
    await expectRejected(() => new RateLimitRegistry(null as never), 'RateLimitRegistry.options');
    expect(
      new RateLimitRegistry({ maxKeyedRateLimits: 5, clock, logger: silentLogger }).maxKeyedRateLimits,
    ).toBe(5);
  });

  it('reset / peekAll: a misspelt or bad timeout is refused before the bucket is touched', async () => {
    const r = new RateLimitRegistry();
    const name = uniqueName('tb');
    r.register(new TokenBucket(name, { capacity: 5, refillPerSecond: 0, backend: 'memory' }));
    await r.acquire(name, { clock }, 3);
    await expectRejected(
      () => r.reset(name, { clock }, { timout: 10 } as never),
      'RateLimitRegistry.reset.options.timout',
      'timeout',
    );
    await expectRejected(
      () => r.reset(name, { clock }, { timeout: -1 }),
      'RateLimitRegistry.reset.options.timeout',
    );
    expect((await r.peek(name, { clock })).tokensRemaining).toBe(2);
    await expectRejected(
      () => r.peekAll({ clock }, { timout: 10 } as never),
      'RateLimitRegistry.peekAll.options.timout',
    );
    await r.reset(name, { clock }, { timeout: '1s' });
    expect((await r.peek(name, { clock })).tokensRemaining).toBe(5);
  });
});

describe('the context of a call', () => {
  it('a misspelt key of the context is refused and nothing is spent', async () => {
    const tb = new TokenBucket(uniqueName('tb'), { capacity: 5, refillPerSecond: 0, backend: 'memory' });
    await expectRejected(
      () => tb.acquire({ clock, clok: clock } as never),
      'TokenBucket.acquire.ctx.clok',
      'clock',
    );
    await expectRejected(() => tb.acquire(null as never), 'TokenBucket.acquire.ctx');
    expect((await tb.peek({ clock })).tokensRemaining).toBe(5);
    const sw = new SlidingWindow(uniqueName('sw'), { limit: 2, window: '1m', backend: 'memory' });
    await expectRejected(
      () => sw.acquire({ clock, logr: silentLogger } as never),
      'SlidingWindow.acquire.ctx.logr',
      'logger',
    );
    expect((await sw.peek({ clock })).remaining).toBe(2);
  });

  it('a misspelt schema is refused, not replaced by taskq: no row is written anywhere', async () => {
    const name = uniqueName('tb');
    const tb = new TokenBucket(name, { capacity: 5, refillPerSecond: 0, backend: 'postgres' });
    await expectRejected(
      () => tb.acquire({ driver: db.driver, shema: db.schema } as never),
      'TokenBucket.acquire.ctx.shema',
      'schema',
    );
    await expectRejected(
      () => publishBucket(tb, false, { driver: db.driver, schema: db.schema, lockTimeout: 5 } as never),
      'publishBucket.ctx.lockTimeout',
      'lockTimeoutMs',
    );
    expect(await bucketRows(name)).toBe(0);
    const res = new ConcurrencyReservation(uniqueName('cr'), { slots: 1, lease: '1m' });
    await expectRejected(
      () => res.acquire(randomUUID(), randomUUID(), { driver: db.driver, schemaa: db.schema } as never),
      'ConcurrencyReservation.acquire.ctx.schemaa',
      'schema',
    );
    expect(await slotRows(res.name)).toBe(0);
    // The correct keys: the bucket's state lives in this schema.
    expect((await tb.acquire({ driver: db.driver, schema: db.schema })).allowed).toBe(true);
    expect(await bucketRows(name)).toBe(1);
  });

  it('registry calls: a misspelt context or request key is refused before anything is acquired', async () => {
    const r = new RateLimitRegistry();
    const tb = uniqueName('tb');
    const cr = uniqueName('cr');
    r.register(new TokenBucket(tb, { capacity: 5, refillPerSecond: 0, backend: 'memory' }));
    r.register(new ConcurrencyReservation(cr, { slots: 1, lease: '1m', clock }));
    await expectRejected(
      () => r.acquire(tb, { clok: clock } as never),
      'RateLimitRegistry.acquire.ctx.clok',
      'clock',
    );
    await expectRejected(() => r.peek(tb, { clok: clock } as never), 'RateLimitRegistry.peek.ctx.clok');
    await expectRejected(() => r.reset(tb, { clok: clock } as never), 'RateLimitRegistry.reset.ctx.clok');
    const request = { rateLimits: [tb], reservations: [cr], jobId: randomUUID(), workerId: randomUUID() };
    await expectRejected(
      () => r.acquireForActor(request, { clock, clok: clock } as never),
      'RateLimitRegistry.acquireForActor.ctx.clok',
      'clock',
    );
    await expectRejected(
      () => r.acquireForActor({ ...request, denialLogLevl: 'debug' } as never, { clock }),
      'RateLimitRegistry.acquireForActor.request.denialLogLevl',
      'denialLogLevel',
    );
    expect((await r.peek(tb, { clock })).tokensRemaining).toBe(5);
    expect((await r.getReservation(cr).peek()).freeCount).toBe(1);
    // The correct keys: one token spent, the slot held.
    const held = await r.acquireForActor({ ...request, denialLogLevel: 'debug' }, { clock });
    expect(held).toHaveLength(2);
    expect((await r.getReservation(cr).peek()).heldCount).toBe(1);
    await r.releaseForActor(held);
  });
});

describe('stores', () => {
  it('the store constructors refuse a misspelt option', async () => {
    await expectRejected(
      () => new MemoryRateLimitStore({ clock, clok: clock } as never),
      'MemoryRateLimitStore.clok',
      'clock',
    );
    await expectRejected(
      () => new PostgresRateLimitStore({ driver: db.driver, schemaName: 'audit_x' } as never),
      'PostgresRateLimitStore.schemaName',
    );
    // A bad value is refused too (it used to fall back to 200 ms unnoticed).
    await expectRejected(
      () => new PostgresRateLimitStore({ driver: db.driver, lockTimeoutMs: 0 }),
      'PostgresRateLimitStore.lockTimeoutMs',
    );
    const createClient = vi.fn(() => redis);
    await expectRejected(
      () => new RedisRateLimitStore({ createClient, keyPrefx: 'x:' } as never),
      'RedisRateLimitStore.keyPrefx',
      'keyPrefix',
    );
    expect(createClient).not.toHaveBeenCalled();
    const memory = new MemoryRateLimitStore({ clock });
    await expectRejected(
      () => new FallbackRateLimitStore(memory, memory, { enable: false } as never),
      'FallbackRateLimitStore.enable',
      'enabled',
    );
    // The correct keys.
    expect(
      new PostgresRateLimitStore({ driver: db.driver, schema: db.schema, lockTimeoutMs: 50 }).schema,
    ).toBe(db.schema);
    expect(new RedisRateLimitStore({ redis, keyPrefix: 'x:', logger: null }).keyPrefix).toBe('x:');
    expect(new FallbackRateLimitStore(memory, null, { enabled: false, logger: null }).enabled).toBe(false);
  });

  it('rateLimitStoresFor: a misspelt option is refused before any store is built', async () => {
    await expectRejected(
      () => rateLimitStoresFor({ clock, pgFallbak: false } as never),
      'rateLimitStoresFor.options.pgFallbak',
      'pgFallback',
    );
    await expectRejected(() => rateLimitStoresFor(null as never), 'rateLimitStoresFor.options');
    const stores = rateLimitStoresFor({
      clock,
      redis,
      pgFallback: false,
      redisKeyPrefix: 'x:',
      lockTimeoutMs: 50,
    });
    expect((stores.redis as FallbackRateLimitStore).enabled).toBe(false);
    await stores.close();
  });

  it('RateLimitAdmin.forBackend: a misspelt option is refused before the stores are built', async () => {
    const backend = { rateLimitStores: vi.fn(() => rateLimitStoresFor({ clock })) };
    await expectRejected(
      () => RateLimitAdmin.forBackend(backend, { redsi: redis } as never),
      'RateLimitAdmin.forBackend.options.redsi',
      'redis',
    );
    expect(backend.rateLimitStores).not.toHaveBeenCalled();
    RateLimitAdmin.forBackend(backend, { redis, logger: silentLogger });
    expect(backend.rateLimitStores).toHaveBeenCalledWith(expect.objectContaining({ redis }));
  });

  it('syncSlots: a misspelt option, or a schema next to store, is refused and no slot is created', async () => {
    const res = new ConcurrencyReservation(uniqueName('cr'), { slots: 2, lease: '1m' });
    const store = new PostgresRateLimitStore({ driver: db.driver, schema: db.schema });
    await expectRejected(
      () => syncSlots([res], { driver: db.driver, schem: db.schema } as never),
      'syncSlots.options.schem',
      'schema',
    );
    await expectRejected(
      () => syncSlots([res], { store, schem: 'x' } as never),
      'syncSlots.options.schem',
      'schema',
    );
    await expectRejected(() => syncSlots([res], { store, schema: 'x' } as never), 'syncSlots.options.schema');
    expect(await slotRows(res.name)).toBe(0);
    await syncSlots([res], { driver: db.driver, schema: db.schema });
    expect(await slotRows(res.name)).toBe(2);
    // A whole context is accepted (its shared store is used), as ensureSlots takes one.
    const wider = new ConcurrencyReservation(res.name, { slots: 3, lease: '1m' });
    await syncSlots([wider], { driver: db.driver, schema: db.schema, redis, logger: silentLogger });
    expect(await slotRows(res.name)).toBe(3);
  });
});

describe('a context built by the caller is the one checked', () => {
  it('the worker-style context ({ stores, clock, logger }) is accepted on every call', async () => {
    const stores = rateLimitStoresFor({ driver: db.driver, schema: db.schema });
    const ctx: RateLimitContext = { stores, clock, logger: silentLogger };
    const r = new RateLimitRegistry({ redisKeyPrefix: 'taskq-test:uk:' });
    const tb = uniqueName('tb');
    r.register(new TokenBucket(tb, { capacity: 2, refillPerSecond: 0, backend: 'postgres' }));
    const held = await r.acquireForActor(
      { rateLimits: [tb], jobId: randomUUID(), workerId: randomUUID() },
      ctx,
    );
    expect(held).toHaveLength(1);
    expect((await r.peekAll(ctx, { timeout: '5s' })).get(tb)?.tokensRemaining).toBe(1);
    await r.reset(tb, ctx, { timeout: '5s' });
    await stores.close();
  });
});
