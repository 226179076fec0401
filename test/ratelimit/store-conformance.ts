// One behaviour suite for RateLimitStore implementations, run unchanged against every store: memory
// on a FakeClock, Postgres and Redis on their own clocks (real time, short windows), and the
// fallback composition during an outage.
import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import {
  RateLimitBackendMissing,
  type RateLimitBackend,
  type RateLimitStore,
  type ReservationSpec,
  type SlidingWindowSpec,
  type TokenBucketSpec,
} from '../../src/ratelimit/index.js';
import { uniqueName } from './conformance.js';

/** How the suite reaches one store. */
export interface StoreHarness {
  /** A store for one test (its own Redis key prefix). */
  store(): RateLimitStore;
  /** The store its outcomes name (the fallback's during an outage). Default: `store().backend`. */
  decidedBy?: RateLimitBackend;
  /**
   * Lets `ms` pass on the store's clock: `FakeClock.advance` for memory; for Postgres and Redis, a
   * wait until their own clock has moved on by `ms` (`elapseOnStoreClock`).
   */
  elapse(ms: number): Promise<void>;
  /** The store holds reservation slots (memory, Postgres). */
  holdsSlots: boolean;
  /** `publishBucket` records metadata (Postgres). */
  publishes: boolean;
  /** `sweepIdleKeyed` deletes idle keyed state (memory, Postgres; Redis keys expire by TTL). */
  sweeps: boolean;
}

const tokenBucket = (over: Partial<TokenBucketSpec> = {}): TokenBucketSpec => ({
  name: uniqueName('st_tb'),
  capacity: 3,
  refillPerSecond: 0,
  ttlMs: 60_000,
  keyed: false,
  backend: 'postgres',
  ...over,
});

const slidingWindow = (over: Partial<SlidingWindowSpec> = {}): SlidingWindowSpec => ({
  name: uniqueName('st_sw'),
  limit: 3,
  windowMs: 1200,
  ttlMs: 60_000,
  keyed: false,
  backend: 'postgres',
  ...over,
});

const reservation = (over: Partial<ReservationSpec> = {}): ReservationSpec => ({
  name: uniqueName('st_res'),
  slots: 2,
  leaseMs: 60_000,
  keyed: false,
  ...over,
});

/** `actual` within [expected - below, expected + above]. */
const near = (actual: number, expected: number, below: number, above = 1e-6): void => {
  expect(actual).toBeGreaterThanOrEqual(expected - below);
  expect(actual).toBeLessThanOrEqual(expected + above);
};

/** The RateLimitStore contract. */
export function defineRateLimitStoreConformance(label: string, harness: () => StoreHarness): void {
  describe(`RateLimitStore conformance: ${label}`, () => {
    const setup = (): { h: StoreHarness; store: RateLimitStore; by: RateLimitBackend } => {
      const h = harness();
      const store = h.store();
      return { h, store, by: h.decidedBy ?? store.backend };
    };

    it('forBackend: the store that answers as its decisions say', () => {
      const { store, by } = setup();
      expect(store.forBackend(by)?.backend).toBe(by);
      const other = (['memory', 'postgres', 'redis'] as const).filter((b) => b !== by && b !== store.backend);
      for (const b of other) expect(store.forBackend(b)).toBeNull();
    });

    describe('token bucket', () => {
      it('no state is a full bucket; an acquire spends, a denial writes nothing', async () => {
        const { store, by } = setup();
        const b = tokenBucket();
        expect(await store.peekTokens(b)).toEqual({ backend: by, available: 3 });
        const first = await store.acquireTokens(b, 2);
        expect(first).toEqual({
          status: 'allowed',
          backend: by,
          tokens: 1,
          available: 3,
          previousTokens: null,
        });
        const denied = await store.acquireTokens(b, 2);
        expect(denied).toMatchObject({ status: 'denied', backend: by, tokens: 1, available: 1 });
        expect((await store.peekTokens(b)).available).toBe(1);
        expect((await store.acquireTokens(b, 1)).status).toBe('allowed');
        expect((await store.peekTokens(b)).available).toBe(0);
      });

      it('tokens flow back at the refill rate, never above capacity', async () => {
        const { h, store } = setup();
        const b = tokenBucket({ capacity: 2, refillPerSecond: 10 });
        expect((await store.acquireTokens(b, 2)).status).toBe('allowed');
        await h.elapse(120);
        const partly = (await store.peekTokens(b)).available;
        expect(partly).toBeGreaterThanOrEqual(1.2 - 1e-6);
        expect(partly).toBeLessThanOrEqual(2);
        await h.elapse(300);
        expect((await store.peekTokens(b)).available).toBe(2);
      });

      it('a refund gives tokens back, capped at capacity; on no state it is a no-op', async () => {
        const { store, by } = setup();
        const paid = store.forBackend(by)!; // refunds go to the store that decided, never fall back
        const b = tokenBucket({ capacity: 2 });
        await paid.refundTokens(b, 1);
        expect((await store.peekTokens(b)).available).toBe(2);
        await store.acquireTokens(b, 2);
        await paid.refundTokens(b, 1);
        expect((await store.peekTokens(b)).available).toBe(1);
        await paid.refundTokens(b, 5);
        expect((await store.peekTokens(b)).available).toBe(2);
      });

      it('reset fills the bucket again; idempotent, and fine on a name with no state', async () => {
        const { store } = setup();
        const b = tokenBucket();
        await store.acquireTokens(b, 3);
        await store.resetBucket(b.name, 'token_bucket');
        await store.resetBucket(b.name, 'token_bucket');
        await store.resetBucket(uniqueName('never'), 'token_bucket');
        expect((await store.peekTokens(b)).available).toBe(3);
        expect((await store.acquireTokens(b, 3)).status).toBe('allowed');
      });

      it('buckets of different names are independent', async () => {
        const { store } = setup();
        const a = tokenBucket({ capacity: 1 });
        const b = tokenBucket({ capacity: 1 });
        expect((await store.acquireTokens(a, 1)).status).toBe('allowed');
        expect((await store.acquireTokens(a, 1)).status).toBe('denied');
        expect((await store.acquireTokens(b, 1)).status).toBe('allowed');
      });
    });

    describe('GCRA', () => {
      it('admits `limit` at once, one emission interval of debt each, then denies', async () => {
        const { store, by } = setup();
        const w = slidingWindow(); // interval 400 ms
        const first = await store.acquireGcra(w);
        expect(first).toEqual({ status: 'allowed', backend: by, debtMs: 400, previousTatMs: null });
        const second = await store.acquireGcra(w);
        expect(second.status).toBe('allowed');
        if (second.status === 'busy') throw new Error('unexpected');
        // One more interval of debt, less the time that passed between the two calls.
        expect(second.debtMs).toBeGreaterThan(400);
        expect(second.debtMs).toBeLessThanOrEqual(800 + 1e-6);
        expect(second.previousTatMs).not.toBeNull();
        expect((await store.acquireGcra(w)).status).toBe('allowed');
        const denied = await store.acquireGcra(w);
        expect(denied.status).toBe('denied');
        if (denied.status === 'busy') throw new Error('unexpected');
        // Denied: the arrival time would pass the window by up to one interval.
        expect(denied.debtMs - w.windowMs).toBeGreaterThan(0);
        expect(denied.debtMs - w.windowMs).toBeLessThanOrEqual(400 + 1e-6);
      });

      it('peek reads the debt without consuming', async () => {
        const { store, by } = setup();
        const w = slidingWindow({ windowMs: 60_000 });
        expect(await store.peekGcra(w)).toEqual({ backend: by, debtMs: 0 });
        await store.acquireGcra(w);
        const a = await store.peekGcra(w);
        const b = await store.peekGcra(w);
        near(a.debtMs, 20_000, 10_000);
        expect(b.debtMs).toBeLessThanOrEqual(a.debtMs);
        near(b.debtMs, 20_000, 10_000);
      });

      it('the debt drains with time: after one interval one more request fits', async () => {
        const { h, store } = setup();
        const w = slidingWindow({ limit: 2, windowMs: 2000 }); // interval 1 s
        await store.acquireGcra(w);
        await store.acquireGcra(w);
        expect((await store.acquireGcra(w)).status).toBe('denied');
        await h.elapse(1050);
        expect((await store.acquireGcra(w)).status).toBe('allowed');
        expect((await store.acquireGcra(w)).status).toBe('denied');
      });

      it('a refund moves the arrival time back one interval, never below now', async () => {
        const { store, by } = setup();
        const paid = store.forBackend(by)!;
        const w = slidingWindow({ windowMs: 60_000 });
        await paid.refundGcra(w); // no state: nothing to give back
        expect((await store.peekGcra(w)).debtMs).toBe(0);
        for (let i = 0; i < 3; i++) await store.acquireGcra(w);
        expect((await store.acquireGcra(w)).status).toBe('denied');
        await paid.refundGcra(w);
        near((await store.peekGcra(w)).debtMs, 40_000, 10_000);
        expect((await store.acquireGcra(w)).status).toBe('allowed');
        for (let i = 0; i < 5; i++) await paid.refundGcra(w);
        expect((await store.peekGcra(w)).debtMs).toBe(0);
      });

      it('reset clears the arrival time', async () => {
        const { store } = setup();
        const w = slidingWindow({ limit: 1, windowMs: 60_000 });
        await store.acquireGcra(w);
        expect((await store.acquireGcra(w)).status).toBe('denied');
        await store.resetBucket(w.name, 'gcra');
        expect((await store.peekGcra(w)).debtMs).toBe(0);
        expect((await store.acquireGcra(w)).status).toBe('allowed');
      });
    });

    describe('sliding log', () => {
      it('logs up to `limit` requests, then denies with when the oldest needed entry leaves', async () => {
        const { store, by } = setup();
        const w = slidingWindow({ limit: 2, windowMs: 10_000 });
        expect(await store.acquireLog(w, randomUUID())).toEqual({
          status: 'allowed',
          backend: by,
          live: 0,
          retryMs: 0,
        });
        expect(await store.acquireLog(w, randomUUID())).toMatchObject({ status: 'allowed', live: 1 });
        const denied = await store.acquireLog(w, randomUUID());
        expect(denied).toMatchObject({ status: 'denied', backend: by, live: 2 });
        if (denied.status === 'busy') throw new Error('unexpected');
        near(denied.retryMs, 10_000, 5000);
        const peek = await store.peekLog(w);
        expect(peek.live).toBe(2);
        near(peek.retryMs, 10_000, 5000);
      });

      it('peek of an empty window, and one below its limit, has no retry hint', async () => {
        const { store, by } = setup();
        const w = slidingWindow({ limit: 2, windowMs: 10_000 });
        expect(await store.peekLog(w)).toEqual({ backend: by, live: 0, retryMs: 0 });
        await store.acquireLog(w, randomUUID());
        expect(await store.peekLog(w)).toEqual({ backend: by, live: 1, retryMs: 0 });
      });

      it('a refund removes exactly that request', async () => {
        const { store, by } = setup();
        const paid = store.forBackend(by)!;
        const w = slidingWindow({ limit: 2, windowMs: 10_000 });
        const first = randomUUID();
        await store.acquireLog(w, first);
        await store.acquireLog(w, randomUUID());
        await paid.refundLog(w, randomUUID()); // not logged: a no-op
        expect((await store.peekLog(w)).live).toBe(2);
        await paid.refundLog(w, first);
        expect((await store.peekLog(w)).live).toBe(1);
        expect((await store.acquireLog(w, randomUUID())).status).toBe('allowed');
        expect((await store.acquireLog(w, randomUUID())).status).toBe('denied');
      });

      it('entries leave once older than the window', async () => {
        const { h, store } = setup();
        const w = slidingWindow({ limit: 1, windowMs: 1000 });
        await store.acquireLog(w, randomUUID());
        expect((await store.acquireLog(w, randomUUID())).status).toBe('denied');
        await h.elapse(1050);
        expect((await store.peekLog(w)).live).toBe(0);
        expect((await store.acquireLog(w, randomUUID())).status).toBe('allowed');
      });

      it('reset empties the window', async () => {
        const { store } = setup();
        const w = slidingWindow({ limit: 1, windowMs: 10_000 });
        await store.acquireLog(w, randomUUID());
        await store.resetBucket(w.name, 'sliding_log');
        expect((await store.peekLog(w)).live).toBe(0);
        expect((await store.acquireLog(w, randomUUID())).status).toBe('allowed');
      });
    });

    it('publishBucket records metadata where the store keeps a list; listBuckets reads it', async () => {
      const { h, store } = setup();
      const name = uniqueName('st_pub');
      const published = await store.publishBucket({
        name,
        kind: 'token_bucket',
        capacity: 5,
        refillPerSecond: 1,
        windowMs: null,
        backend: 'postgres',
        keyed: false,
      });
      expect(published).toBe(h.publishes);
      const listed = await store.listBuckets(name);
      if (!h.publishes) {
        expect(listed).toEqual([]);
        return;
      }
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ name, kind: 'token_bucket', capacity: 5, refillPerSecond: 1 });
      expect(listed[0]!.lastUsedAt).toBeInstanceOf(Date);
      expect((await store.listBuckets()).some((b) => b.name === name)).toBe(true);
    });

    it('listReservations summarises slots: total, live holders, keyed', async () => {
      const { h, store } = setup();
      const r = reservation({ slots: 3 });
      if (!h.holdsSlots) {
        expect(await store.listReservations(r.name)).toEqual([]);
        return;
      }
      await store.ensureSlots(r);
      const outcome = await store.acquireSlot(r, randomUUID(), randomUUID());
      expect(outcome.ok).toBe(true);
      const [row] = await store.listReservations(r.name);
      expect(row).toMatchObject({ name: r.name, slots: 3, held: 1, keyed: false });
      expect((await store.listReservations()).some((x) => x.name === r.name)).toBe(true);
    });

    describe('reservation slots', () => {
      it('ensureSlots is idempotent; peekSlots and slotRowsExist see the slots', async () => {
        const { h, store } = setup();
        const r = reservation({ slots: 3 });
        expect(await store.slotRowsExist(r.name)).toBe(false);
        expect(await store.peekSlots(r.name)).toEqual({ free: 0, held: 0, total: 0 });
        if (!h.holdsSlots) {
          await expect(store.ensureSlots(r)).rejects.toBeInstanceOf(RateLimitBackendMissing);
          await expect(store.syncSlots(r)).rejects.toBeInstanceOf(RateLimitBackendMissing);
          await expect(store.acquireSlot(r, randomUUID(), randomUUID())).rejects.toBeInstanceOf(
            RateLimitBackendMissing,
          );
          expect(await store.releaseSlot(r.name, 0, randomUUID(), null)).toBe(false);
          expect(await store.extendSlotLeases(randomUUID(), 1000, null)).toBe(0);
          return;
        }
        await store.ensureSlots(r);
        await store.ensureSlots(r);
        expect(await store.slotRowsExist(r.name)).toBe(true);
        expect(await store.peekSlots(r.name)).toEqual({ free: 3, held: 0, total: 3 });
      });

      it('takes free slots until none is left; the denial hints the earliest live lease', async () => {
        const { h, store, by } = setup();
        if (!h.holdsSlots) return;
        const r = reservation({ slots: 2, leaseMs: 60_000 });
        await store.ensureSlots(r);
        const worker = randomUUID();
        const a = await store.acquireSlot(r, randomUUID(), worker);
        const b = await store.acquireSlot(r, randomUUID(), worker);
        if (!a.ok || !b.ok) throw new Error('expected two slots');
        expect(a.backend).toBe(by);
        expect(new Set([a.slotIndex, b.slotIndex])).toEqual(new Set([0, 1]));
        expect(a.fence).not.toBe(b.fence);
        const denied = await store.acquireSlot(r, randomUUID(), worker);
        expect(denied.ok).toBe(false);
        if (denied.ok) throw new Error('unexpected');
        expect(denied.totalRows).toBe(2);
        near(denied.retryMs ?? -1, 60_000, 30_000);
        expect(await store.peekSlots(r.name)).toEqual({ free: 0, held: 2, total: 2 });
      });

      it('a release frees only the holder’s slot, fenced by the lease', async () => {
        const { h, store } = setup();
        if (!h.holdsSlots) return;
        const r = reservation({ slots: 1 });
        await store.ensureSlots(r);
        const worker = randomUUID();
        const first = await store.acquireSlot(r, randomUUID(), worker);
        if (!first.ok) throw new Error('expected a slot');
        expect(await store.releaseSlot(r.name, first.slotIndex, randomUUID(), null)).toBe(false);
        expect(await store.releaseSlot(r.name, first.slotIndex, worker, first.fence)).toBe(true);
        expect(await store.releaseSlot(r.name, first.slotIndex, worker, first.fence)).toBe(false);
        const second = await store.acquireSlot(r, randomUUID(), worker);
        if (!second.ok) throw new Error('expected a slot');
        expect(second.fence).not.toBe(first.fence);
        // The earlier lease's fence is not this lease: nothing is freed.
        expect(await store.releaseSlot(r.name, second.slotIndex, worker, first.fence)).toBe(false);
        expect(await store.releaseSlot(r.name, second.slotIndex, worker, null)).toBe(true); // unfenced
      });

      it('an expired lease is free; the zombie’s fenced release frees nothing', async () => {
        const { h, store } = setup();
        if (!h.holdsSlots) return;
        const r = reservation({ slots: 1, leaseMs: 200 });
        await store.ensureSlots(r);
        const worker = randomUUID();
        const zombie = await store.acquireSlot(r, randomUUID(), worker);
        await h.elapse(250);
        expect(await store.peekSlots(r.name)).toEqual({ free: 1, held: 0, total: 1 });
        const successor = await store.acquireSlot(r, randomUUID(), worker);
        if (!zombie.ok || !successor.ok) throw new Error('expected slots');
        expect(successor.slotIndex).toBe(zombie.slotIndex);
        expect(await store.releaseSlot(r.name, zombie.slotIndex, worker, zombie.fence)).toBe(false);
        expect((await store.peekSlots(r.name)).held).toBe(1);
      });

      it('extendSlotLeases renews the worker’s slots, of one reservation or all', async () => {
        const { h, store } = setup();
        if (!h.holdsSlots) return;
        const r1 = reservation({ slots: 1, leaseMs: 300 });
        const r2 = reservation({ slots: 1, leaseMs: 300 });
        const worker = randomUUID();
        for (const r of [r1, r2]) {
          await store.ensureSlots(r);
          expect((await store.acquireSlot(r, randomUUID(), worker)).ok).toBe(true);
        }
        expect(await store.extendSlotLeases(worker, 60_000, r1.name)).toBe(1);
        expect(await store.extendSlotLeases(randomUUID(), 60_000, null)).toBe(0);
        await h.elapse(350); // r2's lease expired, r1's was renewed
        expect((await store.peekSlots(r1.name)).held).toBe(1);
        expect((await store.peekSlots(r2.name)).held).toBe(0);
        expect(await store.extendSlotLeases(worker, 60_000, null)).toBe(2);
        expect((await store.peekSlots(r2.name)).held).toBe(1);
      });

      it('syncSlots creates missing slots, deletes free excess ones, keeps held excess ones', async () => {
        const { h, store } = setup();
        if (!h.holdsSlots) return;
        const four = reservation({ slots: 4 });
        expect(await store.syncSlots(four)).toEqual({ inserted: [0, 1, 2, 3], deleted: [], skippedHeld: [] });
        const worker = randomUUID();
        const leases = [];
        for (let i = 0; i < 4; i++) leases.push(await store.acquireSlot(four, randomUUID(), worker));
        const third = leases.find((l) => l.ok && l.slotIndex === 2);
        if (!third?.ok) throw new Error('expected slot 2');
        await store.releaseSlot(four.name, 2, worker, third.fence);
        const two = { ...four, slots: 2 };
        expect(await store.syncSlots(two)).toEqual({ inserted: [], deleted: [2], skippedHeld: [3] });
        await store.releaseSlot(four.name, 3, worker, null);
        expect(await store.syncSlots(two)).toEqual({ inserted: [], deleted: [3], skippedHeld: [] });
        expect((await store.peekSlots(four.name)).total).toBe(2);
        expect(await store.syncSlots({ ...four, slots: 3 })).toEqual({
          inserted: [2],
          deleted: [],
          skippedHeld: [],
        });
      });
    });

    it('sweepIdleKeyed deletes idle keyed state only, sparing a spent fixed quota and held slots', async () => {
      const { h, store } = setup();
      if (!h.sweeps) {
        expect(await store.sweepIdleKeyed(0)).toEqual({
          rateLimitRows: 0,
          reservationBuckets: 0,
          reservationRows: 0,
        });
        return;
      }
      // A refill too slow to matter within the test: a swept bucket reads full again.
      const keyed = tokenBucket({ capacity: 3, refillPerSecond: 0.001, keyed: true });
      const keyedQuota = tokenBucket({ capacity: 3, keyed: true });
      const staticBucket = tokenBucket({ capacity: 3, refillPerSecond: 0.001 });
      for (const b of [keyed, keyedQuota, staticBucket]) await store.acquireTokens(b, 1);
      const idleSlots = reservation({ slots: 2, keyed: true });
      const heldSlots = reservation({ slots: 1, keyed: true });
      const staticSlots = reservation({ slots: 1 });
      for (const r of [idleSlots, heldSlots, staticSlots]) await store.ensureSlots(r);
      expect((await store.acquireSlot(heldSlots, randomUUID(), randomUUID())).ok).toBe(true);
      await h.elapse(150);
      const swept = await store.sweepIdleKeyed(100);
      expect(swept.rateLimitRows).toBeGreaterThanOrEqual(1);
      expect(swept.reservationBuckets).toBeGreaterThanOrEqual(1);
      expect(swept.reservationRows).toBeGreaterThanOrEqual(2);
      expect((await store.peekTokens(keyed)).available).toBeGreaterThan(2.99); // state gone: full
      expect((await store.peekTokens(keyedQuota)).available).toBe(2); // consumed-quota veto
      expect((await store.peekTokens(staticBucket)).available).toBeLessThan(2.5);
      expect(await store.slotRowsExist(idleSlots.name)).toBe(false);
      expect(await store.slotRowsExist(heldSlots.name)).toBe(true);
      expect(await store.slotRowsExist(staticSlots.name)).toBe(true);
    });
  });
}
