// Many concurrent acquirers against one shared limiter: the stores' atomicity, not timing, is what
// is asserted (bounds only, never durations; elapsed time is read on the store's own clock).
import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import {
  ConcurrencyReservation,
  ReservationUnavailable,
  SlidingWindow,
  TokenBucket,
  type RateLimitContext,
} from '../../src/ratelimit/index.js';
import { TEST_DSN, migratedSchema, type TestSchema } from '../helpers/db.js';
import { flushPromises, waitFor } from '../helpers/wait.js';
import { uniqueName } from './conformance.js';
import { dropPrefix, postgresClockMs, redisClockMs, testRedis, uniquePrefix } from './helpers.js';

let db: TestSchema;
let driver: PgDriver;
let redis: Redis;
const prefix = uniquePrefix();

beforeAll(async () => {
  db = await migratedSchema('rl_conc');
  driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 12 });
  redis = testRedis();
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
  await driver.close();
  await db.drop();
});

const ctxFor = (backend: 'redis' | 'postgres'): RateLimitContext =>
  backend === 'redis'
    ? { redis, redisKeyPrefix: prefix }
    : { driver, schema: db.schema, lockTimeoutMs: 1000 };

/** What a {@link hammer} run saw. */
interface Tally {
  admitted: number;
  denied: number;
}

/**
 * `workers` loops calling `attempt` until `enough` holds of what they saw; fails, as `waitFor` does,
 * if that takes longer than `timeoutMs`.
 */
async function hammer(
  workers: number,
  attempt: () => Promise<boolean>,
  enough: (tally: Tally) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<Tally> {
  const tally: Tally = { admitted: 0, denied: 0 };
  const deadline = Date.now() + timeoutMs;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (!enough(tally)) {
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        if (await attempt()) tally.admitted++;
        else tally.denied++;
      }
    }),
  );
  return tally;
}

/** The store's own clock, in epoch ms: the only clock its refills and windows run on. */
const storeClock = (backend: 'redis' | 'postgres'): (() => Promise<number>) =>
  backend === 'redis' ? () => redisClockMs(redis) : () => postgresClockMs(driver);

describe.each(['redis', 'postgres'] as const)('%s: concurrent acquirers', (backend) => {
  it('a token bucket admits at most capacity + refill × elapsed', async () => {
    const capacity = 10;
    const refill = 40;
    const tb = new TokenBucket(uniqueName('conc'), { capacity, refillPerSecond: refill, backend });
    const ctx = ctxFor(backend);
    const clock = storeClock(backend);
    const from = await clock();
    // Under fire until twenty tokens have refilled and been taken (about half a second).
    const { admitted, denied } = await hammer(
      24,
      async () => (await tb.acquire(ctx)).allowed,
      (t) => t.admitted >= capacity + 20 && t.denied > 0,
      'twenty refilled tokens',
    );
    // Every decision was made between the two readings of the store's clock.
    const elapsedMs = (await clock()) - from;
    const bound = capacity + (refill * elapsedMs) / 1000;
    expect(admitted).toBeLessThanOrEqual(Math.floor(bound));
    expect(admitted).toBeGreaterThan(capacity); // it did refill while under fire
    expect(denied).toBeGreaterThan(0);
  });

  it.each(['log', 'gcra'] as const)(
    'a %s sliding window never admits more than its limit per window',
    async (style) => {
      const limit = 15;
      const sw = new SlidingWindow(uniqueName('conc'), { limit, window: '1m', style, backend });
      const ctx = ctxFor(backend);
      const clock = storeClock(backend);
      const from = await clock();
      const { admitted, denied } = await hammer(
        24,
        async () => (await sw.acquire(ctx)).allowed,
        (t) => t.denied >= 3 * 24,
        'three rounds of denials',
      );
      // A log admits nothing more within the minute; GCRA, after its burst, one per 4 s interval
      // (none unless the run was that slow).
      const intervals = style === 'gcra' ? Math.floor(((await clock()) - from) / (60_000 / limit)) : 0;
      expect(admitted).toBeLessThanOrEqual(limit + intervals);
      expect(admitted).toBeGreaterThan(0);
      expect(denied).toBeGreaterThan(0);
    },
  );
});

describe('postgres: a reservation under 20 concurrent acquirers', () => {
  it('never has more than `slots` holders at once', async () => {
    const slots = 3;
    const res = new ConcurrencyReservation(uniqueName('conc'), { slots, lease: '1m' });
    const ctx: RateLimitContext = { driver, schema: db.schema };
    await res.ensureSlots(ctx);
    const worker = randomUUID();
    let holders = 0;
    let maxHolders = 0;
    let acquisitions = 0;
    const { denied } = await hammer(
      20,
      async () => {
        try {
          const lease = await res.acquire(randomUUID(), worker, ctx);
          holders++;
          acquisitions++;
          maxHolders = Math.max(maxHolders, holders);
          expect(holders).toBeLessThanOrEqual(slots);
          // Until every slot has been seen held at once, a holder keeps its slot so that the others
          // fill the rest: short holds alone could each end before the next acquirer's round trip,
          // and the test would prove less than it says. Then a holder lets the queued replies in
          // before it lets go.
          await waitFor(() => maxHolders === slots, 10_000, 'every slot held at once');
          await flushPromises();
          holders--; // counted out before the row is freed: the count can only under-report
          expect(await res.release(lease, worker, ctx)).toBe(true);
          return true;
        } catch (err) {
          if (!(err instanceof ReservationUnavailable)) throw err;
          return false;
        }
      },
      (t) => t.admitted >= 10 * slots && t.denied > 0,
      'thirty acquisitions and a denial',
    );
    expect(maxHolders).toBeLessThanOrEqual(slots);
    expect(maxHolders).toBe(slots); // contention was real
    expect(acquisitions).toBeGreaterThan(slots);
    expect(denied).toBeGreaterThan(0);
    expect(await res.peek(ctx)).toEqual({ freeCount: slots, totalSlots: slots, heldCount: 0 });
  });
});
