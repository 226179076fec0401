import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { WaitTimeoutError } from '../../src/errors/job-errors.js';
import {
  ConcurrencyReservation,
  DEFAULT_RESERVATION_BACKOFF_MS,
  QUEUE_CONCURRENCY_PREFIX,
  RateLimitNotFound,
  RateLimitRegistry,
  ReservationUnavailable,
  SlidingWindow,
  TokenBucket,
  collectActorPrimitives,
  keyedRateLimit,
  missingNames,
  queueConcurrencyReservationName,
  type RateLimitContext,
  type RateLimitDecision,
  type RateLimitState,
  type SlotLease,
} from '../../src/ratelimit/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { captureLogger } from './conformance.js';

const clock = new FakeClock(Date.UTC(2025, 0, 1));
const ctx: RateLimitContext = { clock };
const job = (): { jobId: string; workerId: string } => ({ jobId: randomUUID(), workerId: randomUUID() });

/** Records the order of releases and refunds into a shared journal. */
class JournalBucket extends TokenBucket {
  constructor(
    name: string,
    capacity: number,
    private readonly journal: string[],
  ) {
    super(name, { capacity, refillPerSecond: 0, backend: 'memory' });
  }

  override async refund(d: RateLimitDecision, c: RateLimitContext, count = 1): Promise<void> {
    this.journal.push(`refund:${this.name}`);
    await super.refund(d, c, count);
  }
}

class JournalReservation extends ConcurrencyReservation {
  constructor(
    name: string,
    slots: number,
    private readonly journal: string[],
    private readonly failRelease = false,
  ) {
    super(name, { slots, lease: 60_000, clock });
  }

  override async release(
    lease: SlotLease | number,
    workerId: string,
    c?: RateLimitContext,
  ): Promise<boolean> {
    this.journal.push(`release:${this.name}`);
    if (this.failRelease) throw new Error('store gone');
    return super.release(lease, workerId, c);
  }
}

/** A rate limit that denies with a fixed hint (0 ms is a valid one). */
class DenyingWindow extends SlidingWindow {
  constructor(
    name: string,
    private readonly hint: number | null,
  ) {
    super(name, { limit: 1, window: 1000, backend: 'memory' });
  }

  override async acquire(): Promise<RateLimitDecision> {
    return Object.freeze({
      allowed: false,
      remaining: 0,
      retryAfterMs: this.hint,
      bucketName: this.name,
      backend: 'memory' as const,
      requestId: null,
      previousState: null,
    });
  }
}

describe('registration', () => {
  it('keeps rate limits and reservations in separate namespaces', () => {
    const r = new RateLimitRegistry();
    r.register(new TokenBucket('shared', { capacity: 1, refillPerSecond: 1, backend: 'memory' }));
    r.register(new ConcurrencyReservation('shared', { slots: 1, lease: 1000, clock }));
    expect(r.hasRateLimit('shared')).toBe(true);
    expect(r.hasReservation('shared')).toBe(true);
    expect(r.getRateLimit('shared')).toBeInstanceOf(TokenBucket);
    expect(r.getReservation('shared')).toBeInstanceOf(ConcurrencyReservation);
    expect(() => r.getRateLimit('nope')).toThrow(RateLimitNotFound);
    expect(() => r.getReservation('nope')).toThrow(RateLimitNotFound);
    // The maps are copies.
    (r.rateLimits as Map<string, unknown>).clear();
    expect(r.hasRateLimit('shared')).toBe(true);
  });

  it('is idempotent for identical config and refuses a conflicting one', () => {
    const r = new RateLimitRegistry();
    r.register(new TokenBucket('api', { capacity: 10, refillPerSecond: 1 }));
    r.register(new TokenBucket('api', { capacity: 10, refillPerSecond: 1 }));
    expect(() => r.register(new TokenBucket('api', { capacity: 11, refillPerSecond: 1 }))).toThrow(
      InvalidArgumentError,
    );
    expect(() => r.register(new SlidingWindow('api', { limit: 10, window: 1000 }))).toThrow(
      InvalidArgumentError,
    );
    r.register(new ConcurrencyReservation('slots', { slots: 2, lease: '1m' }));
    r.register(new ConcurrencyReservation('slots', { slots: 2, lease: 60_000 }));
    expect(() => r.register(new ConcurrencyReservation('slots', { slots: 3, lease: '1m' }))).toThrow(
      InvalidArgumentError,
    );
  });

  it('reserves the taskq:global:queue: namespace for queue caps', () => {
    const r = new RateLimitRegistry();
    const name = queueConcurrencyReservationName('emails');
    expect(name).toBe(`${QUEUE_CONCURRENCY_PREFIX}emails`);
    expect(() => r.register(new ConcurrencyReservation(name, { slots: 5, lease: '30s' }))).toThrow(
      InvalidArgumentError,
    );
    expect(() => r.register(new TokenBucket(name, { capacity: 1, refillPerSecond: 1 }))).toThrow(
      InvalidArgumentError,
    );
    expect(() =>
      r.registerQueueCapReservation(new ConcurrencyReservation('plain', { slots: 1, lease: 1 })),
    ).toThrow(InvalidArgumentError);
    r.registerQueueCapReservation(new ConcurrencyReservation(name, { slots: 5, lease: '30s' }));
    r.registerQueueCapReservation(new ConcurrencyReservation(name, { slots: 5, lease: '30s' }));
    expect(() =>
      r.registerQueueCapReservation(new ConcurrencyReservation(name, { slots: 6, lease: '30s' })),
    ).toThrow(InvalidArgumentError);
    expect(r.hasReservation(name)).toBe(true);
  });

  it('warns when a reservation lease is shorter than the lock lease', () => {
    const logger = captureLogger();
    const r = new RateLimitRegistry({ logger });
    r.register(new ConcurrencyReservation('short', { slots: 1, lease: '10s', lockLease: '30s' }));
    expect(logger.entries.map((e) => e.msg)).toContain('reservation-lease-shorter-than-lock-lease');
  });

  it('rejects bad constructor input with InvalidArgumentError (field, value, rule)', () => {
    const bad: (() => unknown)[] = [
      () => new TokenBucket('x', { capacity: 0, refillPerSecond: 1 }),
      () => new TokenBucket('x', { capacity: 1, refillPerSecond: -1 }),
      () => new TokenBucket('x', { capacity: Number.NaN, refillPerSecond: 1 }),
      () => new TokenBucket('x', { capacity: 1, refillPerSecond: 1, backend: 'disk' as 'redis' }),
      () => new TokenBucket('', { capacity: 1, refillPerSecond: 1 }),
      () => new TokenBucket('a\u0000b', { capacity: 1, refillPerSecond: 1 }),
      () => new TokenBucket('x', { capacity: 1, refillPerSecond: 1, ttl: 0 }),
      () => new SlidingWindow('x', { limit: 0, window: 1000 }),
      () => new SlidingWindow('x', { limit: 1.5, window: 1000 }),
      () => new SlidingWindow('x', { limit: 1, window: 0 }),
      () => new SlidingWindow('x', { limit: 1, window: '1 fortnight' }),
      () => new SlidingWindow('x', { limit: 1, window: 1000, style: 'fixed' as 'log' }),
      () => new ConcurrencyReservation('x', { slots: 0, lease: 1000 }),
      () => new ConcurrencyReservation('x', { slots: 1, lease: 0 }),
      () => new ConcurrencyReservation('x', { slots: 1, lease: -5 }),
    ];
    for (const make of bad) {
      const err = (() => {
        try {
          make();
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBeTruthy();
      expect((err as InvalidArgumentError).rule).toBeTruthy();
    }
    // Any text name, ':' included (decision on spec item 46).
    expect(new ConcurrencyReservation('a:b c/d', { slots: 1, lease: 1 }).name).toBe('a:b c/d');
  });
});

describe('ReservationUnavailable', () => {
  it('accepts 0 and refuses a negative or null retryAfterMs', () => {
    expect(new ReservationUnavailable('x', 0).retryAfterMs).toBe(0);
    expect(new ReservationUnavailable('x', 0).source).toBe('reservation');
    expect(new ReservationUnavailable('x', 5, { source: 'rate_limit' }).source).toBe('rate_limit');
    expect(() => new ReservationUnavailable('x', -1)).toThrow(InvalidArgumentError);
    expect(() => new ReservationUnavailable('x', null as unknown as number)).toThrow(InvalidArgumentError);
    expect(() => new ReservationUnavailable('x', Number.POSITIVE_INFINITY)).toThrow(InvalidArgumentError);
  });
});

describe('acquireForActor', () => {
  it('acquires reservations first, then rate limits, each in declaration order', async () => {
    const r = new RateLimitRegistry();
    const journal: string[] = [];
    r.register(new JournalReservation('res-a', 1, journal));
    r.register(new JournalReservation('res-b', 1, journal));
    r.register(new JournalBucket('rl-a', 5, journal));
    r.register(new JournalBucket('rl-b', 5, journal));
    const held = await r.acquireForActor(
      { rateLimits: ['rl-b', 'rl-a'], reservations: ['res-b', 'res-a'], ...job() },
      ctx,
    );
    expect(held.map((h) => `${h.kind}:${h.name}`)).toEqual([
      'reservation:res-b',
      'reservation:res-a',
      'rate_limit:rl-b',
      'rate_limit:rl-a',
    ]);
    // Exactly one token per rate limit.
    expect((await r.peek('rl-a', ctx)).tokensRemaining).toBe(4);
    expect((await r.peek('rl-b', ctx)).tokensRemaining).toBe(4);
  });

  it('on a denial gives back everything in reverse order, then throws with the denier and source', async () => {
    const r = new RateLimitRegistry();
    const journal: string[] = [];
    r.register(new JournalReservation('res-a', 1, journal));
    r.register(new JournalReservation('res-b', 1, journal));
    r.register(new JournalBucket('rl-a', 5, journal));
    r.register(new JournalBucket('rl-empty', 1, journal));
    await r.acquire('rl-empty', ctx); // exhaust it (no refund: non-job acquire)
    const err = await r
      .acquireForActor({ rateLimits: ['rl-a', 'rl-empty'], reservations: ['res-a', 'res-b'], ...job() }, ctx)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReservationUnavailable);
    expect((err as ReservationUnavailable).bucketName).toBe('rl-empty');
    expect((err as ReservationUnavailable).source).toBe('rate_limit');
    expect(journal).toEqual(['refund:rl-a', 'release:res-b', 'release:res-a']);
    // Everything is free again.
    expect((await r.peek('rl-a', ctx)).tokensRemaining).toBe(5);
    expect((await r.getReservation('res-a').peek()).freeCount).toBe(1);
    expect((await r.getReservation('res-b').peek()).freeCount).toBe(1);
  });

  it('a reservation denial acquires no rate limit and reports source reservation', async () => {
    const r = new RateLimitRegistry();
    const journal: string[] = [];
    r.register(new JournalReservation('res-full', 1, journal));
    r.register(new JournalReservation('res-ok', 1, journal));
    r.register(new JournalBucket('rl', 5, journal));
    await r.acquireForActor({ reservations: ['res-full'], ...job() }, ctx);
    journal.length = 0;
    const err = await r
      .acquireForActor({ rateLimits: ['rl'], reservations: ['res-ok', 'res-full'], ...job() }, ctx)
      .catch((e: unknown) => e);
    expect((err as ReservationUnavailable).source).toBe('reservation');
    expect((err as ReservationUnavailable).bucketName).toBe('res-full');
    expect((err as ReservationUnavailable).retryAfterMs).toBeGreaterThan(59_000);
    expect(journal).toEqual(['release:res-ok']);
    expect((await r.peek('rl', ctx)).tokensRemaining).toBe(5);
  });

  it('substitutes the 5 s default when the primitive gives no hint (exhausted fixed quota)', async () => {
    const r = new RateLimitRegistry();
    r.register(new TokenBucket('quota', { capacity: 1, refillPerSecond: 0, backend: 'memory' }));
    await r.acquireForActor({ rateLimits: ['quota'], ...job() }, ctx);
    const err = await r.acquireForActor({ rateLimits: ['quota'], ...job() }, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReservationUnavailable);
    expect((err as ReservationUnavailable).retryAfterMs).toBe(DEFAULT_RESERVATION_BACKOFF_MS);
    expect(DEFAULT_RESERVATION_BACKOFF_MS).toBe(5000);
  });

  it('honours a 0 ms hint (never a truthiness default)', async () => {
    const r = new RateLimitRegistry();
    r.register(new DenyingWindow('zero', 0));
    r.register(new DenyingWindow('none', null));
    const zero = await r.acquireForActor({ rateLimits: ['zero'], ...job() }, ctx).catch((e: unknown) => e);
    expect((zero as ReservationUnavailable).retryAfterMs).toBe(0);
    const none = await r.acquireForActor({ rateLimits: ['none'], ...job() }, ctx).catch((e: unknown) => e);
    expect((none as ReservationUnavailable).retryAfterMs).toBe(5000);
  });

  it('logs each rollback failure and keeps rolling back', async () => {
    const logger = captureLogger();
    const r = new RateLimitRegistry({ logger });
    const journal: string[] = [];
    r.register(new JournalReservation('res-a', 1, journal));
    r.register(new JournalReservation('res-broken', 1, journal, true));
    r.register(new DenyingWindow('deny', 10));
    const err = await r
      .acquireForActor({ rateLimits: ['deny'], reservations: ['res-a', 'res-broken'], ...job() }, ctx)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReservationUnavailable);
    expect(journal).toEqual(['release:res-broken', 'release:res-a']);
    const failures = logger.entries.filter((e) => e.msg === 'ratelimit-rollback-failure');
    expect(failures).toHaveLength(1);
    expect(failures[0]!.level).toBe('error');
    expect(failures[0]!.fields).toMatchObject({ handleName: 'res-broken', operation: 'release' });
    expect((await r.getReservation('res-a').peek()).freeCount).toBe(1);
  });

  it('releaseForActor frees slots in reverse order and never refunds tokens; failures are logged', async () => {
    const logger = captureLogger();
    const r = new RateLimitRegistry({ logger });
    const journal: string[] = [];
    r.register(new JournalReservation('res-a', 1, journal));
    r.register(new JournalReservation('res-broken', 1, journal, true));
    r.register(new JournalReservation('res-c', 1, journal));
    r.register(new JournalBucket('rl', 2, journal));
    const held = await r.acquireForActor(
      { rateLimits: ['rl'], reservations: ['res-a', 'res-broken', 'res-c'], ...job() },
      ctx,
    );
    await r.releaseForActor(held);
    expect(journal).toEqual(['release:res-c', 'release:res-broken', 'release:res-a']);
    expect(logger.entries.filter((e) => e.msg === 'ratelimit-release-failure')).toHaveLength(1);
    expect((await r.peek('rl', ctx)).tokensRemaining).toBe(1);
    expect((await r.getReservation('res-a').peek()).freeCount).toBe(1);
  });

  it('resolves registered instances, refuses unregistered ones and unknown names', async () => {
    const r = new RateLimitRegistry();
    const tb = new TokenBucket('inst', { capacity: 1, refillPerSecond: 1, backend: 'memory' });
    r.register(tb);
    const held = await r.acquireForActor({ rateLimits: [tb], ...job() }, ctx);
    expect(held[0]?.name).toBe('inst');
    const stray = new TokenBucket('stray', { capacity: 1, refillPerSecond: 1, backend: 'memory' });
    await expect(r.acquireForActor({ rateLimits: [stray], ...job() }, ctx)).rejects.toBeInstanceOf(
      RateLimitNotFound,
    );
    await expect(r.acquireForActor({ reservations: ['ghost'], ...job() }, ctx)).rejects.toBeInstanceOf(
      RateLimitNotFound,
    );
    await expect(r.acquireForActor({ rateLimits: [{ name: 'x' }], ...job() }, ctx)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('waitForRelease wakes on a release in this process, else times out', async () => {
    const r = new RateLimitRegistry();
    r.register(new ConcurrencyReservation('w', { slots: 1, lease: 60_000, clock }));
    const held = await r.acquireForActor({ reservations: ['w'], ...job() }, ctx);
    const woken = r.waitForRelease('w', 5000);
    await r.releaseForActor(held);
    expect(await woken).toBe(true);
    expect(await r.waitForRelease('w', 5)).toBe(false);
    const ac = new AbortController();
    const aborted = r.waitForRelease('w', 5000, ac.signal);
    ac.abort();
    expect(await aborted).toBe(false);
  });
});

describe('non-job acquire, peek, reset', () => {
  it('acquire returns the decision and never refunds; reservation names are refused', async () => {
    const r = new RateLimitRegistry();
    r.register(new TokenBucket('api', { capacity: 2, refillPerSecond: 0, backend: 'memory' }));
    r.register(new ConcurrencyReservation('slots', { slots: 1, lease: 1000, clock }));
    expect((await r.acquire('api', ctx)).allowed).toBe(true);
    expect((await r.acquire('api', ctx)).allowed).toBe(true);
    expect((await r.acquire('api', ctx)).allowed).toBe(false);
    await expect(r.acquire('slots', ctx)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(r.acquire('nope', ctx)).rejects.toBeInstanceOf(RateLimitNotFound);
    await expect(r.peek('slots', ctx)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(r.reset('slots', ctx)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('peekAll reads every rate limit, leaves out failures and honours its timeout', async () => {
    const logger = captureLogger();
    const r = new RateLimitRegistry({ logger });
    r.register(new TokenBucket('a', { capacity: 2, refillPerSecond: 0, backend: 'memory' }));
    r.register(new SlidingWindow('b', { limit: 3, window: 1000, backend: 'memory' }));
    r.register(new TokenBucket('needs-redis', { capacity: 1, refillPerSecond: 1 })); // no ctx.redis
    await r.acquire('a', ctx);
    const all = await r.peekAll(ctx, { timeout: '5s' });
    expect([...all.keys()].sort()).toEqual(['a', 'b']);
    expect(all.get('a')?.tokensRemaining).toBe(1);
    expect(all.get('b')?.remaining).toBe(3);
    expect(logger.entries.some((e) => e.msg === 'ratelimit-peek-failed')).toBe(true);

    class Hanging extends SlidingWindow {
      override peek(): Promise<RateLimitState> {
        return new Promise(() => undefined);
      }
    }
    r.register(new Hanging('hang', { limit: 1, window: 1000, backend: 'memory' }));
    await expect(r.peekAll(ctx, { timeout: 30 })).rejects.toBeInstanceOf(WaitTimeoutError);
  });

  it('reset refills and logs a warning', async () => {
    const logger = captureLogger();
    const r = new RateLimitRegistry({ logger });
    r.register(new TokenBucket('a', { capacity: 1, refillPerSecond: 0, backend: 'memory' }));
    await r.acquire('a', ctx);
    await r.reset('a', ctx, { timeout: '1s' });
    expect((await r.acquire('a', ctx)).allowed).toBe(true);
    expect(logger.entries.some((e) => e.msg === 'ratelimit-reset' && e.level === 'warn')).toBe(true);
  });
});

const Tenant = z.object({ tenantId: z.string().min(1), region: z.string().default('eu') });

describe('actor wiring helpers', () => {
  it('collectActorPrimitives registers declared instances; missingNames lists unknown names', () => {
    const r = new RateLimitRegistry();
    const tb = new TokenBucket('declared', { capacity: 5, refillPerSecond: 1 });
    const res = new ConcurrencyReservation('declared-slots', { slots: 2, lease: '1m' });
    const noop = async (): Promise<void> => undefined;
    const a = actor(
      {
        name: 'send',
        rateLimits: [
          tb,
          'registered-later',
          keyedRateLimit(Tenant, {
            baseName: 'kt',
            keyFn: (p) => p.tenantId,
            capacity: 1,
            refillPerSecond: 1,
          }),
        ],
        reservations: [res, 'ghost-slots'],
      },
      noop,
    );
    const b = actor(
      {
        name: 'other',
        rateLimits: [new TokenBucket('declared', { capacity: 5, refillPerSecond: 1 })],
      },
      noop,
    );
    collectActorPrimitives([a, b], r);
    expect(r.hasRateLimit('declared')).toBe(true);
    expect(r.hasReservation('declared-slots')).toBe(true);
    expect(missingNames([a, b], r)).toEqual([
      { actor: 'send', namespace: 'rate_limit', name: 'registered-later' },
      { actor: 'send', namespace: 'reservation', name: 'ghost-slots' },
    ]);
    r.register(new TokenBucket('registered-later', { capacity: 1, refillPerSecond: 1 }));
    r.register(new ConcurrencyReservation('ghost-slots', { slots: 1, lease: 1000 }));
    expect(missingNames([a, b], r)).toEqual([]);

    const conflicting = actor(
      {
        name: 'c',
        rateLimits: [new TokenBucket('declared', { capacity: 6, refillPerSecond: 1 })],
      },
      noop,
    );
    expect(() => collectActorPrimitives([conflicting], r)).toThrow(InvalidArgumentError);
    const misplaced = actor({ name: 'm', rateLimits: [res] }, noop);
    expect(() => collectActorPrimitives([misplaced], r)).toThrow(InvalidArgumentError);
  });

  it('clear() forgets everything', async () => {
    const r = new RateLimitRegistry();
    r.register(new TokenBucket('x', { capacity: 1, refillPerSecond: 1, backend: 'memory' }));
    const ref = keyedRateLimit(Tenant, {
      baseName: 'k',
      keyFn: (p) => p.tenantId,
      capacity: 1,
      refillPerSecond: 1,
      backend: 'memory',
    });
    await r.acquireForActor({ rateLimits: [ref], payload: { tenantId: 't' }, ...job() }, ctx);
    r.clear();
    expect(r.hasRateLimit('x')).toBe(false);
    expect(r.keyedRateLimitCount).toBe(0);
  });
});
