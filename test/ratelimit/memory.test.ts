import { describe, expect, it } from 'vitest';

import { FakeClock } from '../../src/testing/fake-clock.js';
import {
  MemoryRateLimitStore,
  RateLimitBackendMissing,
  SlidingWindow,
  TokenBucket,
} from '../../src/ratelimit/index.js';
import {
  captureLogger,
  defineReservationConformance,
  defineSlidingWindowConformance,
  defineTokenBucketConformance,
  type ConformanceHarness,
} from './conformance.js';
import { defineRateLimitStoreConformance } from './store-conformance.js';

function memoryHarness(): ConformanceHarness {
  const clock = new FakeClock(Date.UTC(2025, 0, 1));
  return {
    backend: 'memory',
    ctx: () => ({ clock, logger: captureLogger() }),
    async elapse(ms) {
      clock.advance(ms);
    },
    reservationOptions: () => ({ clock }),
  };
}

defineTokenBucketConformance(memoryHarness);
defineSlidingWindowConformance(memoryHarness, 'log');
defineSlidingWindowConformance(memoryHarness, 'gcra');
defineReservationConformance(memoryHarness);

defineRateLimitStoreConformance('memory', () => {
  const clock = new FakeClock(Date.UTC(2025, 0, 1));
  return {
    store: () => new MemoryRateLimitStore({ clock }),
    async elapse(ms) {
      clock.advance(ms);
    },
    holdsSlots: true,
    publishes: false,
    sweeps: true,
  };
});

describe('memory backend specifics', () => {
  it('the guide example: drain 10, deny, one second refills', async () => {
    const tb = new TokenBucket('test', { capacity: 10, refillPerSecond: 10, backend: 'memory' });
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    for (let i = 0; i < 10; i++) expect((await tb.acquire({ clock })).allowed).toBe(true);
    const denied = await tb.acquire({ clock });
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBe(100);
    clock.advance('1s');
    expect((await tb.acquire({ clock })).remaining).toBe(9);
  });

  it('a backward clock step counts as zero elapsed time (no negative refill, no double refill)', async () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1, 12));
    const tb = new TokenBucket('skew', { capacity: 2, refillPerSecond: 1, backend: 'memory' });
    await tb.acquire({ clock });
    await tb.acquire({ clock });
    clock.moveTo(Date.UTC(2025, 0, 1, 11)); // an hour back
    const back = await tb.acquire({ clock });
    expect(back.allowed).toBe(false);
    expect(back.remaining).toBe(0);
    clock.moveTo(Date.UTC(2025, 0, 1, 12) + 1000); // one second past the last reading
    expect((await tb.acquire({ clock })).allowed).toBe(true);
    expect((await tb.acquire({ clock })).allowed).toBe(false);

    const sw = new SlidingWindow('skew-sw', { limit: 1, window: 1000, backend: 'memory' });
    expect((await sw.acquire({ clock })).allowed).toBe(true);
    clock.moveTo(Date.UTC(2025, 0, 1)); // far back: the logged entry must not "age" backwards
    expect((await sw.acquire({ clock })).allowed).toBe(false);
  });

  it('memory primitives need ctx.clock', async () => {
    const tb = new TokenBucket('noclock', { capacity: 1, refillPerSecond: 1, backend: 'memory' });
    const err = await tb.acquire({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitBackendMissing);
    expect((err as RateLimitBackendMissing).missing).toBe('clock');
    expect((err as RateLimitBackendMissing).code).toBe('TASKQ_RATE_LIMIT_BACKEND_MISSING');
  });

  it('state is per instance: two instances of one name do not share (per-process store)', async () => {
    const clock = new FakeClock();
    const a = new TokenBucket('shared', { capacity: 1, refillPerSecond: 0, backend: 'memory' });
    const b = new TokenBucket('shared', { capacity: 1, refillPerSecond: 0, backend: 'memory' });
    expect((await a.acquire({ clock })).allowed).toBe(true);
    expect((await b.acquire({ clock })).allowed).toBe(true);
  });
});
