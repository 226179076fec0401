/**
 * The registry's keyed refs: concrete names derived from validated payloads, their configuration
 * checks, the caps on materialised keyed primitives and idle eviction. (The rest of the registry:
 * registry.test.ts.)
 */
import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { PayloadValidationError } from '../../src/errors/payload-validation-error.js';
import {
  ConcurrencyReservation,
  RateLimitRegistry,
  ReservationUnavailable,
  TokenBucket,
  keyedRateLimit,
  keyedReservation,
  type RateLimitContext,
} from '../../src/ratelimit/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { captureLogger } from './conformance.js';

const clock = new FakeClock(Date.UTC(2025, 0, 1));
const ctx: RateLimitContext = { clock };
const job = (): { jobId: string; workerId: string } => ({ jobId: randomUUID(), workerId: randomUUID() });

const Tenant = z.object({ tenantId: z.string().min(1), region: z.string().default('eu') });

describe('keyed refs', () => {
  it('validates the payload, derives base:key and materialises once per key', async () => {
    const r = new RateLimitRegistry();
    const ref = keyedRateLimit(Tenant, {
      baseName: 'api-per-tenant',
      keyFn: (p) => `${p.tenantId}@${p.region}`,
      capacity: 2,
      refillPerSecond: 0,
      backend: 'memory',
    });
    const first = await r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 't1' }, ...job() }, ctx);
    expect(first[0]?.name).toBe('api-per-tenant:t1@eu'); // schema default applied before keyFn
    const bucket = r.getRateLimit('api-per-tenant:t1@eu');
    await r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 't1' }, ...job() }, ctx);
    expect(r.getRateLimit('api-per-tenant:t1@eu')).toBe(bucket); // reused, not re-created
    await expect(
      r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 't1' }, ...job() }, ctx),
    ).rejects.toBeInstanceOf(ReservationUnavailable);
    // Another tenant has its own budget.
    await r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 't2' }, ...job() }, ctx);
    expect(r.isKeyedRateLimit('api-per-tenant:t2@eu')).toBe(true);
    expect(r.keyedRateLimitCount).toBe(2);
  });

  it('an invalid payload is a PayloadValidationError and acquires nothing', async () => {
    const r = new RateLimitRegistry();
    r.register(new ConcurrencyReservation('global', { slots: 1, lease: 60_000, clock }));
    const ref = keyedReservation(Tenant, {
      baseName: 'per-tenant',
      keyFn: (p) => p.tenantId,
      slots: 1,
      lease: '1m',
      clock,
    });
    const err = await r
      .acquireForActor(
        { reservations: ['global', ref], payload: { tenantId: 42 }, actor: 'sync', ...job() },
        ctx,
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadValidationError);
    expect((err as PayloadValidationError).actor).toBe('sync');
    expect((await r.getReservation('global').peek()).freeCount).toBe(1);
  });

  it('keyFn must return a non-empty string', async () => {
    const r = new RateLimitRegistry();
    const empty = keyedRateLimit(Tenant, {
      baseName: 'e',
      keyFn: () => '',
      capacity: 1,
      refillPerSecond: 1,
      backend: 'memory',
    });
    const notString = keyedRateLimit(Tenant, {
      baseName: 'n',
      keyFn: () => 7 as unknown as string,
      capacity: 1,
      refillPerSecond: 1,
      backend: 'memory',
    });
    for (const ref of [empty, notString]) {
      await expect(
        r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 'x' }, ...job() }, ctx),
      ).rejects.toBeInstanceOf(PayloadValidationError);
    }
  });

  it('refuses base names that could derive into the reserved namespace', () => {
    for (const baseName of ['taskq', 'taskq:global', 'taskq:global:queue', 'taskq:global:queue:x']) {
      expect(() =>
        keyedReservation(Tenant, { baseName, keyFn: (p) => p.tenantId, slots: 1, lease: 1000 }),
      ).toThrow(InvalidArgumentError);
      expect(() =>
        keyedRateLimit(Tenant, { baseName, keyFn: (p) => p.tenantId, capacity: 1, refillPerSecond: 1 }),
      ).toThrow(InvalidArgumentError);
    }
    expect(
      keyedRateLimit(Tenant, {
        baseName: 'taskq:glo',
        keyFn: (p) => p.tenantId,
        capacity: 1,
        refillPerSecond: 1,
      }).baseName,
    ).toBe('taskq:glo');
    expect(() =>
      keyedRateLimit({} as never, { baseName: 'b', keyFn: () => 'k', capacity: 1, refillPerSecond: 1 }),
    ).toThrow(InvalidArgumentError);
  });

  it('colliding concrete names share when configs match and fail when they differ', async () => {
    const r = new RateLimitRegistry();
    const a = keyedRateLimit(Tenant, {
      baseName: 'a',
      keyFn: (p) => p.tenantId,
      capacity: 3,
      refillPerSecond: 0,
      backend: 'memory',
    });
    const ab = keyedRateLimit(Tenant, {
      baseName: 'a:b',
      keyFn: (p) => p.tenantId,
      capacity: 3,
      refillPerSecond: 0,
      backend: 'memory',
    });
    const abOther = keyedRateLimit(Tenant, {
      baseName: 'a:b',
      keyFn: (p) => p.tenantId,
      capacity: 9,
      refillPerSecond: 0,
      backend: 'memory',
    });
    await r.acquireForActor({ rateLimits: [a], payload: { tenantId: 'b:c' }, ...job() }, ctx);
    await r.acquireForActor({ rateLimits: [ab], payload: { tenantId: 'c' }, ...job() }, ctx);
    expect((await r.peek('a:b:c', ctx)).tokensRemaining).toBe(1); // one shared bucket
    await expect(
      r.acquireForActor({ rateLimits: [abOther], payload: { tenantId: 'c' }, ...job() }, ctx),
    ).rejects.toBeInstanceOf(InvalidArgumentError);

    const ra = keyedReservation(Tenant, {
      baseName: 'r',
      keyFn: (p) => p.tenantId,
      slots: 1,
      lease: 1000,
      clock,
    });
    const rb = keyedReservation(Tenant, {
      baseName: 'r:x',
      keyFn: (p) => p.tenantId,
      slots: 2,
      lease: 1000,
      clock,
    });
    await r.acquireForActor({ reservations: [ra], payload: { tenantId: 'x:y' }, ...job() }, ctx);
    await expect(
      r.acquireForActor({ reservations: [rb], payload: { tenantId: 'y' }, ...job() }, ctx),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('a statically registered concrete name is reused as-is and never evicted', async () => {
    const fake = new FakeClock();
    const r = new RateLimitRegistry({ clock: fake });
    const pinned = new TokenBucket('api:vip', { capacity: 100, refillPerSecond: 0, backend: 'memory' });
    r.register(pinned);
    const ref = keyedRateLimit(Tenant, {
      baseName: 'api',
      keyFn: (p) => p.tenantId,
      capacity: 1,
      refillPerSecond: 0,
      backend: 'memory',
    });
    await r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 'vip' }, ...job() }, ctx);
    await r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 'vip' }, ...job() }, ctx); // capacity 100 applies
    expect(r.getRateLimit('api:vip')).toBe(pinned);
    expect(r.isKeyedRateLimit('api:vip')).toBe(false);
    fake.advance('2h');
    expect(r.evictIdleKeyedRateLimits(60_000)).toBe(0);
    expect(r.hasRateLimit('api:vip')).toBe(true);
  });
});

describe('keyed caps and idle eviction', () => {
  const keyedTb = keyedRateLimit(Tenant, {
    baseName: 'k',
    keyFn: (p) => p.tenantId,
    capacity: 5,
    refillPerSecond: 1,
    backend: 'memory',
  });
  const keyedRes = keyedReservation(Tenant, {
    baseName: 'kr',
    keyFn: (p) => p.tenantId,
    slots: 1,
    lease: 1000,
    clock,
  });

  it('evicts idle keyed entries; a re-used key is re-materialised', async () => {
    const fake = new FakeClock();
    const r = new RateLimitRegistry({ clock: fake });
    await r.acquireForActor({ rateLimits: [keyedTb], payload: { tenantId: 'old' }, ...job() }, ctx);
    const held = await r.acquireForActor(
      { reservations: [keyedRes], payload: { tenantId: 'old' }, ...job() },
      ctx,
    );
    await r.releaseForActor(held);
    fake.advance('10m');
    await r.acquireForActor({ rateLimits: [keyedTb], payload: { tenantId: 'fresh' }, ...job() }, ctx);
    expect(r.evictIdleKeyedRateLimits(5 * 60_000)).toBe(1);
    expect(r.evictIdleKeyedReservations(5 * 60_000)).toBe(1);
    expect(r.hasRateLimit('k:old')).toBe(false);
    expect(r.hasRateLimit('k:fresh')).toBe(true);
    expect(r.hasReservation('kr:old')).toBe(false);
    await r.acquireForActor({ rateLimits: [keyedTb], payload: { tenantId: 'old' }, ...job() }, ctx);
    expect(r.isKeyedRateLimit('k:old')).toBe(true);
  });

  it('keeps a memory fixed quota that has spent tokens (eviction would refill it)', async () => {
    const fake = new FakeClock();
    const r = new RateLimitRegistry({ clock: fake });
    const quota = keyedRateLimit(Tenant, {
      baseName: 'q',
      keyFn: (p) => p.tenantId,
      capacity: 3,
      refillPerSecond: 0,
      backend: 'memory',
    });
    const pgQuota = keyedRateLimit(Tenant, {
      baseName: 'pq',
      keyFn: (p) => p.tenantId,
      capacity: 3,
      refillPerSecond: 0,
      backend: 'postgres',
    });
    await r.acquireForActor({ rateLimits: [quota], payload: { tenantId: 'spent' }, ...job() }, ctx);
    // Materialised but never acquired (its acquire needs a driver): a full Postgres quota.
    await r
      .acquireForActor({ rateLimits: [pgQuota], payload: { tenantId: 't' }, ...job() }, ctx)
      .catch(() => undefined);
    fake.advance('2h');
    expect(r.evictIdleKeyedRateLimits(60_000)).toBe(1); // only the Postgres one
    expect(r.hasRateLimit('q:spent')).toBe(true);
    expect(r.hasRateLimit('pq:t')).toBe(false);
    await r.reset('q:spent', ctx);
    expect(r.evictIdleKeyedRateLimits(60_000)).toBe(1);
  });

  it('keeps an in-memory keyed reservation with a live holder', async () => {
    const fake = new FakeClock();
    const r = new RateLimitRegistry({ clock: fake });
    const held = await r.acquireForActor(
      { reservations: [keyedRes], payload: { tenantId: 'busy' }, ...job() },
      { clock },
    );
    fake.advance('2h');
    expect(r.evictIdleKeyedReservations(60_000)).toBe(0);
    await r.releaseForActor(held);
    expect(r.evictIdleKeyedReservations(60_000)).toBe(1);
  });

  it('independent caps: a full cap evicts idle keys at most every 30 s, then denies', async () => {
    const fake = new FakeClock();
    const logger = captureLogger();
    const r = new RateLimitRegistry({
      clock: fake,
      logger,
      maxKeyedRateLimits: 2,
      maxKeyedReservations: 1,
      keyedIdleThreshold: '10s',
    });
    const acquireKey = (tenantId: string): Promise<unknown> =>
      r.acquireForActor({ rateLimits: [keyedTb], payload: { tenantId }, ...job() }, ctx);
    await acquireKey('a');
    await acquireKey('b');
    // The reservation cap is separate: rate-limit keys do not count against it.
    await r.acquireForActor({ reservations: [keyedRes], payload: { tenantId: 'a' }, ...job() }, ctx);

    const denied = await acquireKey('c').catch((e: unknown) => e); // scans (nothing idle), denies
    expect(denied).toBeInstanceOf(ReservationUnavailable);
    expect((denied as ReservationUnavailable).source).toBe('rate_limit');
    expect((denied as ReservationUnavailable).bucketName).toBe('k:c');
    expect((denied as ReservationUnavailable).retryAfterMs).toBe(5000);
    expect(logger.entries.some((e) => e.msg === 'registry-keyed-rate-limit-limit-exceeded')).toBe(true);

    fake.advance('20s'); // a and b are idle now, but the last scan was 20 s ago: no new scan
    await expect(acquireKey('c')).rejects.toBeInstanceOf(ReservationUnavailable);
    expect(r.hasRateLimit('k:a')).toBe(true);

    fake.advance('10s'); // 30 s since the scan: scans again, evicts a and b
    await acquireKey('c');
    expect(r.hasRateLimit('k:a')).toBe(false);
    expect(r.hasRateLimit('k:b')).toBe(false);
    await acquireKey('b');

    fake.advance('25s');
    await acquireKey('c'); // c in use
    fake.advance('5s'); // 30 s since the last scan: b is idle (30 s), c is not (5 s)
    await acquireKey('d');
    expect(r.hasRateLimit('k:b')).toBe(false);
    expect(r.hasRateLimit('k:c')).toBe(true);
    expect(r.hasRateLimit('k:d')).toBe(true);

    const resDenied = await r
      .acquireForActor({ reservations: [keyedRes], payload: { tenantId: 'other' }, ...job() }, ctx)
      .catch((e: unknown) => e);
    expect((resDenied as ReservationUnavailable).source).toBe('reservation');
    expect(logger.entries.some((e) => e.msg === 'registry-keyed-reservation-limit-exceeded')).toBe(true);
  });
});
