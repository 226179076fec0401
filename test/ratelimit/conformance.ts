// One behaviour suite per primitive, run unchanged against every backend: memory on a FakeClock,
// Redis and Postgres on their own clocks (real time, tiny windows).
import { randomBytes, randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import type { Logger } from '../../src/obs/logger.js';
import {
  ConcurrencyReservation,
  ReservationUnavailable,
  SlidingWindow,
  TokenBucket,
  type ConcurrencyReservationOptions,
  type RateLimitBackend,
  type RateLimitContext,
  type SlidingWindowStyle,
} from '../../src/ratelimit/index.js';

/** One log line captured by {@link captureLogger}. */
export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that records every line. */
export function captureLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const make = (bindings: Record<string, unknown>): Logger & { entries: LogEntry[] } => {
    const at =
      (level: LogEntry['level']) =>
      (obj: object, msg?: string): void => {
        entries.push({ level, msg: msg ?? '', fields: { ...bindings, ...(obj as Record<string, unknown>) } });
      };
    return {
      entries,
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return make({});
}

/** A name no other test uses (state in Redis and Postgres outlives a test). */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

/** How a suite reaches one backend. */
export interface ConformanceHarness {
  /** The store under test. */
  backend: RateLimitBackend;
  /** A fresh context for one test (its own Redis key prefix, a capturing logger). */
  ctx(): RateLimitContext & { logger: Logger & { entries: LogEntry[] } };
  /**
   * Lets `ms` pass on the store's clock: `FakeClock.advance` for memory; for Postgres and Redis, a
   * wait until their own clock has moved on by `ms` (`elapseOnStoreClock`).
   */
  elapse(ms: number): Promise<void>;
  /** Extra reservation options (the in-memory clock for memory). */
  reservationOptions(): Partial<ConcurrencyReservationOptions>;
}

const close = (actual: number, expected: number, slack: number): void => {
  expect(actual).toBeGreaterThanOrEqual(expected - 1e-9);
  expect(actual).toBeLessThanOrEqual(expected + slack);
};

/** TokenBucket behaviour every backend must show. */
export function defineTokenBucketConformance(harness: () => ConformanceHarness): void {
  describe('TokenBucket conformance', () => {
    it('starts full, admits capacity, then denies with a retry hint from the refill rate', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('tb'), { capacity: 3, refillPerSecond: 2, backend: h.backend });
      const admitted = [];
      for (let i = 0; i < 3; i++) admitted.push(await tb.acquire(ctx));
      expect(admitted.map((d) => d.allowed)).toEqual([true, true, true]);
      for (const d of admitted) {
        expect(d.backend).toBe(h.backend);
        expect(d.retryAfterMs).toBe(0);
        expect(d.bucketName).toBe(tb.name);
        expect(d.requestId).toBeNull();
      }
      close(admitted[0]!.remaining, 2, 0.5);
      close(admitted[2]!.remaining, 0, 0.5);
      const denied = await tb.acquire(ctx);
      expect(denied.allowed).toBe(false);
      expect(denied.backend).toBe(h.backend);
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(500);
      expect(Object.isFrozen(denied)).toBe(true);
    });

    it('refills continuously: after the hinted delay a token is back', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('tb'), { capacity: 2, refillPerSecond: 4, backend: h.backend });
      await tb.acquire(ctx);
      await tb.acquire(ctx);
      const denied = await tb.acquire(ctx);
      expect(denied.allowed).toBe(false);
      await h.elapse((denied.retryAfterMs ?? 0) + 20);
      expect((await tb.acquire(ctx)).allowed).toBe(true);
    });

    it('a fixed quota (refill 0) never refills and denies with retryAfterMs null', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('quota'), {
        capacity: 2,
        refillPerSecond: 0,
        backend: h.backend,
      });
      expect((await tb.acquire(ctx)).allowed).toBe(true);
      expect((await tb.acquire(ctx)).allowed).toBe(true);
      const denied = await tb.acquire(ctx);
      expect(denied.allowed).toBe(false);
      expect(denied.retryAfterMs).toBeNull();
      await h.elapse(50);
      const still = await tb.acquire(ctx);
      expect(still.allowed).toBe(false);
      expect(still.retryAfterMs).toBeNull();
      const state = await tb.peek(ctx);
      expect(state.isExhausted).toBe(true);
      expect(state.retryAfterMs).toBeNull();
    });

    it('spends `count` tokens at once and refuses a count above capacity', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('tb'), { capacity: 5, refillPerSecond: 0, backend: h.backend });
      const d = await tb.acquire(ctx, 4);
      expect(d.allowed).toBe(true);
      expect(d.remaining).toBe(1);
      expect((await tb.acquire(ctx, 2)).allowed).toBe(false);
      expect((await tb.acquire(ctx, 1)).allowed).toBe(true);
      await expect(tb.acquire(ctx, 6)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(tb.acquire(ctx, 0)).rejects.toBeInstanceOf(InvalidArgumentError);
    });

    it('peek reads without consuming', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('tb'), { capacity: 4, refillPerSecond: 0, backend: h.backend });
      const first = await tb.peek(ctx);
      const second = await tb.peek(ctx);
      for (const s of [first, second]) {
        expect(s.tokensRemaining).toBe(4);
        expect(s.isExhausted).toBe(false);
        expect(s.capacity).toBe(4);
        expect(s.refillPerSecond).toBe(0);
        expect(s.kind).toBe('token_bucket');
        expect(s.backend).toBe(h.backend);
        expect(s.retryAfterMs).toBe(0);
      }
      await tb.acquire(ctx);
      expect((await tb.peek(ctx)).tokensRemaining).toBe(3);
    });

    it('refund gives the token back to the store that paid (rollback path)', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('tb'), { capacity: 1, refillPerSecond: 0, backend: h.backend });
      const d = await tb.acquire(ctx);
      expect(d.allowed).toBe(true);
      expect((await tb.acquire(ctx)).allowed).toBe(false);
      await tb.refund(d, ctx);
      expect((await tb.acquire(ctx)).allowed).toBe(true);
      // A refund never lifts the bucket above capacity.
      await tb.refund(d, ctx);
      await tb.refund(d, ctx);
      expect((await tb.peek(ctx)).tokensRemaining).toBe(1);
    });

    it('reset refills at once and logs ratelimit-reset', async () => {
      const h = harness();
      const ctx = h.ctx();
      const tb = new TokenBucket(uniqueName('tb'), { capacity: 2, refillPerSecond: 0, backend: h.backend });
      await tb.acquire(ctx);
      await tb.acquire(ctx);
      expect((await tb.acquire(ctx)).allowed).toBe(false);
      await tb.reset(ctx);
      await tb.reset(ctx); // idempotent
      expect((await tb.peek(ctx)).tokensRemaining).toBe(2);
      expect((await tb.acquire(ctx)).allowed).toBe(true);
      expect(
        ctx.logger.entries.filter((e) => e.msg === 'ratelimit-reset' && e.level === 'warn'),
      ).toHaveLength(2);
    });

    it('only a spent memory fixed quota holds consumed quota (eviction exemption)', async () => {
      const h = harness();
      const ctx = h.ctx();
      const quota = new TokenBucket(uniqueName('q'), { capacity: 2, refillPerSecond: 0, backend: h.backend });
      const refilling = new TokenBucket(uniqueName('r'), {
        capacity: 2,
        refillPerSecond: 1,
        backend: h.backend,
      });
      expect(quota.holdsConsumedQuota()).toBe(false);
      await quota.acquire(ctx);
      await refilling.acquire(ctx);
      expect(quota.holdsConsumedQuota()).toBe(h.backend === 'memory');
      expect(refilling.holdsConsumedQuota()).toBe(false);
    });

    it('buckets with different names are independent', async () => {
      const h = harness();
      const ctx = h.ctx();
      const a = new TokenBucket(uniqueName('a'), { capacity: 1, refillPerSecond: 0, backend: h.backend });
      const b = new TokenBucket(uniqueName('b'), { capacity: 1, refillPerSecond: 0, backend: h.backend });
      expect((await a.acquire(ctx)).allowed).toBe(true);
      expect((await a.acquire(ctx)).allowed).toBe(false);
      expect((await b.acquire(ctx)).allowed).toBe(true);
    });
  });
}

/** SlidingWindow behaviour every backend must show, for one style. */
export function defineSlidingWindowConformance(
  harness: () => ConformanceHarness,
  style: SlidingWindowStyle,
): void {
  describe(`SlidingWindow (${style}) conformance`, () => {
    it('admits `limit` within the window, then denies with a retry hint inside the window', async () => {
      const h = harness();
      const ctx = h.ctx();
      const sw = new SlidingWindow(uniqueName('sw'), { limit: 3, window: 1200, style, backend: h.backend });
      const ds = [];
      for (let i = 0; i < 3; i++) ds.push(await sw.acquire(ctx));
      expect(ds.map((d) => d.allowed)).toEqual([true, true, true]);
      expect(ds.map((d) => d.remaining)).toEqual([2, 1, 0]);
      for (const d of ds) {
        expect(d.backend).toBe(h.backend);
        if (style === 'log') expect(d.requestId).toMatch(/^[0-9a-f-]{36}$/);
        else expect(d.requestId).toBeNull();
      }
      const denied = await sw.acquire(ctx);
      expect(denied.allowed).toBe(false);
      expect(denied.requestId).toBeNull();
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      // log: the oldest entry leaves within the window; gcra: one emission interval (400 ms).
      expect(denied.retryAfterMs).toBeLessThanOrEqual(style === 'log' ? 1200 : 400);
    });

    it('admits again once the hinted delay has passed', async () => {
      const h = harness();
      const ctx = h.ctx();
      const sw = new SlidingWindow(uniqueName('sw'), { limit: 2, window: 600, style, backend: h.backend });
      await sw.acquire(ctx);
      await sw.acquire(ctx);
      const denied = await sw.acquire(ctx);
      expect(denied.allowed).toBe(false);
      await h.elapse((denied.retryAfterMs ?? 0) + 20);
      expect((await sw.acquire(ctx)).allowed).toBe(true);
    });

    if (style === 'log') {
      it('slides: only the entries older than the window leave', async () => {
        const h = harness();
        const ctx = h.ctx();
        const sw = new SlidingWindow(uniqueName('sw'), { limit: 3, window: 1000, style, backend: h.backend });
        await sw.acquire(ctx);
        await sw.acquire(ctx);
        await h.elapse(500);
        expect((await sw.acquire(ctx)).allowed).toBe(true);
        expect((await sw.acquire(ctx)).allowed).toBe(false);
        await h.elapse(560); // the first two left; the third (t ≈ 500) is still inside
        expect((await sw.acquire(ctx)).allowed).toBe(true);
        expect((await sw.acquire(ctx)).allowed).toBe(true);
        expect((await sw.acquire(ctx)).allowed).toBe(false);
      });
    } else {
      it('after a burst, admits one request per emission interval', async () => {
        const h = harness();
        const ctx = h.ctx();
        const sw = new SlidingWindow(uniqueName('sw'), { limit: 3, window: 1200, style, backend: h.backend });
        for (let i = 0; i < 3; i++) expect((await sw.acquire(ctx)).allowed).toBe(true);
        expect((await sw.acquire(ctx)).allowed).toBe(false);
        await h.elapse(460); // one interval (400 ms) and a margin
        expect((await sw.acquire(ctx)).allowed).toBe(true);
        expect((await sw.acquire(ctx)).allowed).toBe(false);
      });
    }

    it('refund rolls back exactly one admission', async () => {
      const h = harness();
      const ctx = h.ctx();
      const sw = new SlidingWindow(uniqueName('sw'), { limit: 2, window: '10s', style, backend: h.backend });
      const first = await sw.acquire(ctx);
      await sw.acquire(ctx);
      expect((await sw.acquire(ctx)).allowed).toBe(false);
      await sw.refund(first, ctx);
      expect((await sw.acquire(ctx)).allowed).toBe(true);
      expect((await sw.acquire(ctx)).allowed).toBe(false);
    });

    it('peek reads without consuming', async () => {
      const h = harness();
      const ctx = h.ctx();
      const sw = new SlidingWindow(uniqueName('sw'), { limit: 3, window: '10s', style, backend: h.backend });
      for (const s of [await sw.peek(ctx), await sw.peek(ctx)]) {
        expect(s).toMatchObject({
          kind: 'sliding_window',
          remaining: 3,
          isExhausted: false,
          limit: 3,
          windowMs: 10_000,
          style,
          capacity: null,
          backend: h.backend,
          retryAfterMs: 0,
        });
      }
      await sw.acquire(ctx);
      expect((await sw.peek(ctx)).remaining).toBe(2);
      await sw.acquire(ctx);
      await sw.acquire(ctx);
      const exhausted = await sw.peek(ctx);
      expect(exhausted.isExhausted).toBe(true);
      expect(exhausted.remaining).toBe(0);
      expect(exhausted.retryAfterMs).toBeGreaterThan(0);
    });

    it('reset empties the window and logs ratelimit-reset', async () => {
      const h = harness();
      const ctx = h.ctx();
      const sw = new SlidingWindow(uniqueName('sw'), { limit: 1, window: '10s', style, backend: h.backend });
      await sw.acquire(ctx);
      expect((await sw.acquire(ctx)).allowed).toBe(false);
      await sw.reset(ctx);
      expect((await sw.acquire(ctx)).allowed).toBe(true);
      expect(ctx.logger.entries.some((e) => e.msg === 'ratelimit-reset' && e.level === 'warn')).toBe(true);
    });
  });
}

/** ConcurrencyReservation behaviour of the memory table and the Postgres rows. */
export function defineReservationConformance(harness: () => ConformanceHarness): void {
  describe('ConcurrencyReservation conformance', () => {
    const worker = randomUUID();

    async function reservation(
      h: ConformanceHarness,
      ctx: RateLimitContext,
      slots: number,
      lease: number,
    ): Promise<ConcurrencyReservation> {
      const r = new ConcurrencyReservation(uniqueName('res:x'), { slots, lease, ...h.reservationOptions() });
      await r.ensureSlots(ctx);
      return r;
    }

    it('admits `slots` holders, then throws ReservationUnavailable with the earliest lease as hint', async () => {
      const h = harness();
      const ctx = h.ctx();
      const r = await reservation(h, ctx, 2, 60_000);
      const a = await r.acquire(randomUUID(), worker, ctx);
      const b = await r.acquire(randomUUID(), worker, ctx);
      expect(new Set([a.slotIndex, b.slotIndex])).toEqual(new Set([0, 1]));
      expect(a.backend).toBe(r.backend);
      expect(a.fence).not.toBe(b.fence);
      const err = await r.acquire(randomUUID(), worker, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ReservationUnavailable);
      const ru = err as ReservationUnavailable;
      expect(ru.bucketName).toBe(r.name);
      expect(ru.source).toBe('reservation');
      expect(ru.code).toBe('TASKQ_RESERVATION_UNAVAILABLE');
      expect(ru.retryAfterMs).toBeGreaterThan(55_000);
      expect(ru.retryAfterMs).toBeLessThanOrEqual(60_100);
      expect(await r.peek(ctx)).toEqual({ freeCount: 0, totalSlots: 2, heldCount: 2 });
    });

    it('release frees the slot; a release by another worker is a no-op', async () => {
      const h = harness();
      const ctx = h.ctx();
      const r = await reservation(h, ctx, 1, 60_000);
      const lease = await r.acquire(randomUUID(), worker, ctx);
      expect(await r.release(lease, randomUUID(), ctx)).toBe(false);
      await expect(r.acquire(randomUUID(), worker, ctx)).rejects.toBeInstanceOf(ReservationUnavailable);
      expect(await r.release(lease, worker, ctx)).toBe(true);
      expect(await r.release(lease, worker, ctx)).toBe(false); // idempotent
      expect(await r.peek(ctx)).toEqual({ freeCount: 1, totalSlots: 1, heldCount: 0 });
      const again = await r.acquire(randomUUID(), worker, ctx);
      // A bare index releases unfenced.
      expect(await r.release(again.slotIndex, worker, ctx)).toBe(true);
    });

    it('an expired lease is free, and the zombie holder’s fenced release frees nothing', async () => {
      const h = harness();
      const ctx = h.ctx();
      const r = await reservation(h, ctx, 1, 300);
      const zombie = await r.acquire(randomUUID(), worker, ctx);
      await h.elapse(350);
      // Same worker, same slot: only the fence tells the two leases apart.
      const successor = await r.acquire(randomUUID(), worker, ctx);
      expect(successor.slotIndex).toBe(zombie.slotIndex);
      expect(successor.fence).not.toBe(zombie.fence);
      expect(await r.release(zombie, worker, ctx)).toBe(false);
      expect((await r.peek(ctx)).heldCount).toBe(1);
      await expect(r.acquire(randomUUID(), worker, ctx)).rejects.toBeInstanceOf(ReservationUnavailable);
      expect(await r.release(successor, worker, ctx)).toBe(true);
    });

    it('extendLeases keeps a slot held past its original lease', async () => {
      const h = harness();
      const ctx = h.ctx();
      const r = await reservation(h, ctx, 1, 400);
      await r.acquire(randomUUID(), worker, ctx);
      await h.elapse(250);
      expect(await r.extendLeases(worker, ctx)).toBe(1);
      expect(await r.extendLeases(randomUUID(), ctx)).toBe(0);
      await h.elapse(250); // past the original lease, inside the renewed one
      await expect(r.acquire(randomUUID(), worker, ctx)).rejects.toBeInstanceOf(ReservationUnavailable);
    });

    it('ensureSlots is idempotent; peek and slotRowsExist see the rows', async () => {
      const h = harness();
      const ctx = h.ctx();
      const r = new ConcurrencyReservation(uniqueName('res'), {
        slots: 3,
        lease: 1000,
        ...h.reservationOptions(),
      });
      expect(await r.slotRowsExist(ctx)).toBe(false);
      await r.ensureSlots(ctx);
      await r.ensureSlots(ctx);
      expect(await r.slotRowsExist(ctx)).toBe(true);
      expect(await r.peek(ctx)).toEqual({ freeCount: 3, totalSlots: 3, heldCount: 0 });
    });

    it('refuses ids that are not UUIDs before touching the store', async () => {
      const h = harness();
      const ctx = h.ctx();
      const r = await reservation(h, ctx, 1, 1000);
      await expect(r.acquire('job-1', worker, ctx)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(r.acquire(randomUUID(), 'w', ctx)).rejects.toBeInstanceOf(InvalidArgumentError);
    });
  });
}
