// The registry against real Postgres (and Redis): keyed reservations and their rows, the leader
// sweep, heartbeat lease renewal, publication to rate_limit_buckets.
import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import {
  ConcurrencyReservation,
  RateLimitRegistry,
  ReservationUnavailable,
  SlidingWindow,
  TokenBucket,
  keyedRateLimit,
  keyedReservation,
  syncRateLimitBuckets,
  type RateLimitContext,
} from '../../src/ratelimit/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { captureLogger, uniqueName } from './conformance.js';
import { dropPrefix, testRedis, uniquePrefix } from './helpers.js';

let db: TestSchema;
let redis: Redis;
const prefix = uniquePrefix();
const Session = z.object({ sessionId: z.string() });

beforeAll(async () => {
  db = await migratedSchema('rl_reg');
  redis = testRedis();
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
  await db.drop();
});

const ctx = (): RateLimitContext => ({ driver: db.driver, schema: db.schema, redis, redisKeyPrefix: prefix });
const q = (): string => `"${db.schema}"`;

async function slotRows(name: string): Promise<{ slot_index: number; keyed: boolean; held: boolean }[]> {
  const { rows } = await db.pool.query(
    `SELECT slot_index, keyed, job_id IS NOT NULL AS held FROM ${q()}.reservation_slots WHERE bucket_name = $1 ORDER BY slot_index`,
    [name],
  );
  return rows;
}

async function ageRows(
  table: 'rate_limit_buckets' | 'reservation_slots',
  name: string,
  by: string,
): Promise<void> {
  await db.pool.query(
    `UPDATE ${q()}.${table} SET last_used_at = clock_timestamp() - $2::interval WHERE bucket_name = $1`,
    [name, by],
  );
}

describe('keyed reservations on Postgres', () => {
  it('materialise keyed slot rows on first use and cap each key', async () => {
    const r = new RateLimitRegistry();
    const base = uniqueName('sess');
    const ref = keyedReservation(Session, {
      baseName: base,
      keyFn: (p) => p.sessionId,
      slots: 2,
      lease: '1m',
    });
    const worker = randomUUID();
    const acquire = (sessionId: string) =>
      r.acquireForActor(
        { reservations: [ref], payload: { sessionId }, jobId: randomUUID(), workerId: worker },
        ctx(),
      );
    const h1 = await acquire('s1');
    await acquire('s1');
    await expect(acquire('s1')).rejects.toBeInstanceOf(ReservationUnavailable);
    await acquire('s2'); // another key, its own slots
    expect(await slotRows(`${base}:s1`)).toEqual([
      { slot_index: 0, keyed: true, held: true },
      { slot_index: 1, keyed: true, held: true },
    ]);
    await r.releaseForActor(h1);
    await acquire('s1');
  });

  it('re-creates the rows of a key the leader sweep reclaimed (heal on denial)', async () => {
    const r = new RateLimitRegistry();
    const base = uniqueName('heal');
    const ref = keyedReservation(Session, {
      baseName: base,
      keyFn: (p) => p.sessionId,
      slots: 1,
      lease: '1m',
    });
    const acquire = () =>
      r.acquireForActor(
        { reservations: [ref], payload: { sessionId: 'k' }, jobId: randomUUID(), workerId: randomUUID() },
        ctx(),
      );
    await r.releaseForActor(await acquire());
    await ageRows('reservation_slots', `${base}:k`, '2 hours');
    const swept = await r.sweepIdleKeyedRows(3_600_000, ctx());
    expect(swept.reservationBuckets).toBeGreaterThanOrEqual(1);
    expect(await slotRows(`${base}:k`)).toEqual([]);
    const again = await acquire(); // still registered in this process: heals instead of denying forever
    expect(again).toHaveLength(1);
    expect(await slotRows(`${base}:k`)).toEqual([{ slot_index: 0, keyed: true, held: true }]);
  });

  it('extendReservationLeases renews every slot the worker holds, in one statement', async () => {
    const r = new RateLimitRegistry();
    const a = new ConcurrencyReservation(uniqueName('ext'), { slots: 1, lease: 200 });
    const b = new ConcurrencyReservation(uniqueName('ext'), { slots: 1, lease: 200 });
    r.register(a);
    r.register(b);
    for (const res of [a, b]) await res.ensureSlots(ctx());
    const worker = randomUUID();
    await r.acquireForActor({ reservations: [a.name, b.name], jobId: randomUUID(), workerId: worker }, ctx());
    expect(await r.extendReservationLeases(worker, 60_000, ctx())).toBe(2);
    expect(await r.extendReservationLeases(randomUUID(), 60_000, ctx())).toBe(0);
    // Until the database clock is past the original 200 ms leases: only the renewal still holds them.
    await waitFor(
      async () =>
        (
          await db.pool.query<{ past: boolean }>(
            `SELECT bool_and(clock_timestamp() > acquired_at + interval '200 milliseconds') AS past
               FROM ${q()}.reservation_slots WHERE bucket_name = ANY ($1::text[])`,
            [[a.name, b.name]],
          )
        ).rows[0]!.past,
      10_000,
      'the original leases to pass',
    );
    await expect(a.acquire(randomUUID(), randomUUID(), ctx())).rejects.toBeInstanceOf(ReservationUnavailable);
    await expect(b.acquire(randomUUID(), randomUUID(), ctx())).rejects.toBeInstanceOf(ReservationUnavailable);
  });
});

describe('leader sweep of idle keyed rows', () => {
  it('deletes idle keyed rows only: static rows, busy keys and spent fixed quotas stay', async () => {
    const c = ctx();
    // Rate limits: a keyed refilling bucket, a keyed fixed quota partly spent, one fully unspent,
    // a static bucket — all idle for two hours.
    const refilling = new TokenBucket(uniqueName('kr'), {
      capacity: 5,
      refillPerSecond: 1,
      backend: 'postgres',
      keyed: true,
    });
    const spent = new TokenBucket(uniqueName('kq'), {
      capacity: 5,
      refillPerSecond: 0,
      backend: 'postgres',
      keyed: true,
    });
    const unspent = new TokenBucket(uniqueName('ku'), {
      capacity: 5,
      refillPerSecond: 0,
      backend: 'postgres',
      keyed: true,
    });
    const staticTb = new TokenBucket(uniqueName('st'), {
      capacity: 5,
      refillPerSecond: 1,
      backend: 'postgres',
    });
    const keyedLog = new SlidingWindow(uniqueName('kl'), {
      limit: 5,
      window: '1m',
      backend: 'postgres',
      keyed: true,
    });
    for (const p of [refilling, spent, staticTb, keyedLog]) await p.acquire(c);
    await unspent.acquire(c);
    await db.pool.query(`UPDATE ${q()}.rate_limit_buckets SET tokens = NULL WHERE bucket_name = $1`, [
      unspent.name,
    ]);
    const fresh = new TokenBucket(uniqueName('kf'), {
      capacity: 5,
      refillPerSecond: 1,
      backend: 'postgres',
      keyed: true,
    });
    await fresh.acquire(c);
    for (const p of [refilling, spent, unspent, staticTb, keyedLog])
      await ageRows('rate_limit_buckets', p.name, '2 hours');

    // Reservations: an idle free keyed key, a keyed key with a held slot, a static reservation.
    const idleKey = new ConcurrencyReservation(uniqueName('rk'), { slots: 2, lease: '1h', keyed: true });
    const busyKey = new ConcurrencyReservation(uniqueName('rb'), { slots: 2, lease: '1h', keyed: true });
    const staticRes = new ConcurrencyReservation(uniqueName('rs'), { slots: 2, lease: '1h' });
    for (const res of [idleKey, busyKey, staticRes]) await res.ensureSlots(c);
    await busyKey.acquire(randomUUID(), randomUUID(), c);
    for (const res of [idleKey, busyKey, staticRes]) await ageRows('reservation_slots', res.name, '2 hours');

    const result = await new RateLimitRegistry().sweepIdleKeyedRows(3_600_000, c);
    expect(result.rateLimitRows).toBeGreaterThanOrEqual(3);
    const remaining = await db.pool.query(
      `SELECT bucket_name FROM ${q()}.rate_limit_buckets WHERE bucket_name = ANY($1::text[])`,
      [[refilling, spent, unspent, staticTb, keyedLog, fresh].map((p) => p.name)],
    );
    expect(remaining.rows.map((r) => r.bucket_name).sort()).toEqual(
      [spent.name, staticTb.name, fresh.name].sort(),
    );
    const entries = await db.pool.query(
      `SELECT count(*)::int AS n FROM ${q()}.rate_limit_window_entries WHERE bucket_name = $1`,
      [keyedLog.name],
    );
    expect(entries.rows[0].n).toBe(0);
    expect(await slotRows(idleKey.name)).toEqual([]);
    expect(await slotRows(busyKey.name)).toHaveLength(2);
    expect(await slotRows(staticRes.name)).toHaveLength(2);
  });

  it('a static declaration retires the keyed mark (never swept); keyed over static stays static', async () => {
    const c = ctx();
    const name = uniqueName('mark');
    await new ConcurrencyReservation(name, { slots: 1, lease: 1000, keyed: true }).ensureSlots(c);
    expect((await slotRows(name))[0]?.keyed).toBe(true);
    await new ConcurrencyReservation(name, { slots: 1, lease: 1000 }).ensureSlots(c);
    expect((await slotRows(name))[0]?.keyed).toBe(false);
    await new ConcurrencyReservation(name, { slots: 1, lease: 1000, keyed: true }).ensureSlots(c);
    expect((await slotRows(name))[0]?.keyed).toBe(false);
  });
});

describe('publication to rate_limit_buckets (admin UI)', () => {
  it('syncRateLimitBuckets publishes Redis and Postgres rate limits, skips memory ones', async () => {
    const r = new RateLimitRegistry();
    const tb = new TokenBucket(uniqueName('pub'), { capacity: 7, refillPerSecond: 2 });
    const gcra = new SlidingWindow(uniqueName('pub'), {
      limit: 60,
      window: '1m',
      style: 'gcra',
      backend: 'postgres',
    });
    const log = new SlidingWindow(uniqueName('pub'), { limit: 10, window: '1s' });
    const mem = new TokenBucket(uniqueName('pub'), { capacity: 1, refillPerSecond: 1, backend: 'memory' });
    for (const p of [tb, gcra, log, mem]) r.register(p);
    expect(await syncRateLimitBuckets(r, ctx())).toBe(3);
    expect(await syncRateLimitBuckets(r, ctx())).toBe(3); // idempotent
    const { rows } = await db.pool.query(
      `SELECT bucket_name, kind, capacity, refill_per_second, window_ms, backend, keyed, tokens
       FROM ${q()}.rate_limit_buckets WHERE bucket_name = ANY($1::text[]) ORDER BY kind`,
      [[tb, gcra, log, mem].map((p) => p.name)],
    );
    expect(rows).toEqual([
      {
        bucket_name: gcra.name,
        kind: 'gcra',
        capacity: 60,
        refill_per_second: null,
        window_ms: 60_000,
        backend: 'postgres',
        keyed: false,
        tokens: null,
      },
      {
        bucket_name: log.name,
        kind: 'sliding_log',
        capacity: 10,
        refill_per_second: null,
        window_ms: 1000,
        backend: 'redis',
        keyed: false,
        tokens: null,
      },
      {
        bucket_name: tb.name,
        kind: 'token_bucket',
        capacity: 7,
        refill_per_second: 2,
        window_ms: null,
        backend: 'redis',
        keyed: false,
        tokens: null,
      },
    ]);
  });

  it('a keyed Redis bucket is published (keyed) on first use; a publish failure only warns', async () => {
    const r = new RateLimitRegistry();
    const base = uniqueName('kpub');
    const ref = keyedRateLimit(Session, {
      baseName: base,
      keyFn: (p) => p.sessionId,
      capacity: 3,
      refillPerSecond: 1,
    });
    const held = await r.acquireForActor(
      { rateLimits: [ref], payload: { sessionId: 'a' }, jobId: randomUUID(), workerId: randomUUID() },
      ctx(),
    );
    expect(held[0]?.kind === 'rate_limit' && held[0].decision.backend).toBe('redis');
    const { rows } = await db.pool.query(
      `SELECT kind, backend, keyed FROM ${q()}.rate_limit_buckets WHERE bucket_name = $1`,
      [`${base}:a`],
    );
    expect(rows).toEqual([{ kind: 'token_bucket', backend: 'redis', keyed: true }]);

    const logger = captureLogger();
    const broken = { ...ctx(), schema: 'no_such_schema_xyz', logger };
    const ok = await r.acquireForActor(
      { rateLimits: [ref], payload: { sessionId: 'b' }, jobId: randomUUID(), workerId: randomUUID() },
      broken,
    );
    expect(ok).toHaveLength(1);
    expect(logger.entries.some((e) => e.msg === 'ratelimit-publish-failed' && e.level === 'warn')).toBe(true);
  });
});
