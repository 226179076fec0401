import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  ConcurrencyReservation,
  PostgresRateLimitStore,
  RateLimitBackendMissing,
  RateLimitStoreCorrupt,
  RateLimitStoreUnavailable,
  SlidingWindow,
  TokenBucket,
  syncSlots,
  type RateLimitContext,
} from '../../src/ratelimit/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import {
  captureLogger,
  defineReservationConformance,
  defineSlidingWindowConformance,
  defineTokenBucketConformance,
  uniqueName,
  type ConformanceHarness,
} from './conformance.js';
import { elapseOnStoreClock, postgresClockMs } from './helpers.js';
import { defineRateLimitStoreConformance } from './store-conformance.js';

let db: TestSchema;

beforeAll(async () => {
  db = await migratedSchema('rl_pg');
});
afterAll(async () => {
  await db.drop();
});

function pgHarness(): ConformanceHarness {
  return {
    backend: 'postgres',
    ctx: () => ({ driver: db.driver, schema: db.schema, logger: captureLogger() }),
    elapse: elapseOnStoreClock(() => postgresClockMs(db.driver)),
    reservationOptions: () => ({}),
  };
}

defineTokenBucketConformance(pgHarness);
defineSlidingWindowConformance(pgHarness, 'log');
defineSlidingWindowConformance(pgHarness, 'gcra');
defineReservationConformance(pgHarness);

defineRateLimitStoreConformance('postgres', () => ({
  store: () => new PostgresRateLimitStore({ driver: db.driver, schema: db.schema }),
  elapse: elapseOnStoreClock(() => postgresClockMs(db.driver)),
  holdsSlots: true,
  publishes: true,
  sweeps: true,
}));

/**
 * Holds the row lock of bucket `name` in another session until `release()` is called;
 * `waitedOn()` resolves, with its backend pid, once some other session waits for that lock.
 */
async function holdRowLock(name: string): Promise<{ waitedOn(): Promise<number>; release(): Promise<void> }> {
  const conn = await db.pool.connect();
  await conn.query('BEGIN');
  const { rowCount } = await conn.query(
    `SELECT 1 FROM "${db.schema}".rate_limit_buckets WHERE bucket_name = $1 FOR UPDATE`,
    [name],
  );
  expect(rowCount).toBe(1);
  const pid = (conn as unknown as { processID: number }).processID;
  let released = false;
  return {
    async waitedOn() {
      let waiter: number | undefined;
      await waitFor(
        async () => {
          const { rows } = await db.pool.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))`,
            [pid],
          );
          waiter = rows[0]?.pid;
          return waiter !== undefined;
        },
        10_000,
        `a session to wait for the row lock of ${name}`,
      );
      return waiter!;
    },
    async release() {
      if (released) return;
      released = true;
      await conn.query('COMMIT');
      conn.release();
    },
  };
}

describe('postgres backend specifics', () => {
  const ctx = (): RateLimitContext => ({ driver: db.driver, schema: db.schema });

  it('a row lock not won within the budget is a denial (fail closed), never an error or an admission', async () => {
    const prims = [
      new TokenBucket(uniqueName('lock'), { capacity: 5, refillPerSecond: 1, backend: 'postgres' }),
      new SlidingWindow(uniqueName('lock'), { limit: 5, window: 1000, style: 'gcra', backend: 'postgres' }),
      new SlidingWindow(uniqueName('lock'), { limit: 5, window: 1000, style: 'log', backend: 'postgres' }),
    ];
    for (const p of prims) {
      expect((await p.acquire(ctx())).allowed).toBe(true); // creates the row
      const lock = await holdRowLock(p.name);
      try {
        // The budget runs out: a denial whose hint is the budget, logged as a lock timeout (SQLSTATE
        // 55P03, which a lock_timeout raises: the statement waited on the lock, it did not skip it).
        const logger = captureLogger();
        const d = await p.acquire({ ...ctx(), lockTimeoutMs: 80, logger });
        expect(d).toMatchObject({ allowed: false, backend: 'postgres', retryAfterMs: 80, remaining: 0 });
        expect(logger.entries.some((e) => e.msg === 'ratelimit-lock-timeout')).toBe(true);
        // Within the budget, the acquirer waits on the lock and is decided once it is won.
        const waiting = p.acquire({ ...ctx(), lockTimeoutMs: 10_000 });
        await lock.waitedOn();
        await lock.release();
        expect((await waiting).allowed).toBe(true);
      } finally {
        await lock.release();
      }
    }
  });

  it('a refund that cannot lock the row raises RateLimitStoreUnavailable (a lost refund is never silent)', async () => {
    const tb = new TokenBucket(uniqueName('refund'), {
      capacity: 1,
      refillPerSecond: 0,
      backend: 'postgres',
    });
    const d = await tb.acquire(ctx());
    const lock = await holdRowLock(tb.name);
    try {
      await expect(tb.refund(d, { ...ctx(), lockTimeoutMs: 50 })).rejects.toBeInstanceOf(
        RateLimitStoreUnavailable,
      );
    } finally {
      await lock.release();
    }
    await tb.refund(d, ctx());
    expect((await tb.acquire(ctx())).allowed).toBe(true);
  });

  it('refill is measured with clock_timestamp() after the row lock is won, not at statement start', async () => {
    // One token per 500 ms, spent: the acquire below starts well before the next one is back.
    const tb = new TokenBucket(uniqueName('clock'), { capacity: 1, refillPerSecond: 2, backend: 'postgres' });
    expect((await tb.acquire(ctx())).allowed).toBe(true);
    const lock = await holdRowLock(tb.name);
    const pending = tb.acquire({ ...ctx(), lockTimeoutMs: 10_000 });
    try {
      const waiter = await lock.waitedOn();
      // The acquire's statement started while the bucket was still empty (both times are the database's).
      const { rows } = await db.pool.query<{ empty_at_start: boolean }>(
        `SELECT a.query_start < b.updated_at + interval '500 milliseconds' AS empty_at_start
           FROM pg_stat_activity a, "${db.schema}".rate_limit_buckets b
          WHERE a.pid = $1 AND b.bucket_name = $2`,
        [waiter, tb.name],
      );
      expect(rows).toEqual([{ empty_at_start: true }]);
      // A token refills while it waits (peek reads without the row lock).
      await waitFor(async () => (await tb.peek(ctx())).tokensRemaining >= 1, 10_000, 'a token to refill');
    } finally {
      await lock.release();
    }
    const d = await pending;
    // With the statement's start time the wait would not count and this would be a denial.
    expect(d.allowed).toBe(true);
  });

  it('impossible row state raises RateLimitStoreCorrupt', async () => {
    const tb = new TokenBucket(uniqueName('corrupt'), {
      capacity: 3,
      refillPerSecond: 0,
      backend: 'postgres',
    });
    await tb.acquire(ctx());
    await db.pool.query(`UPDATE "${db.schema}".rate_limit_buckets SET tokens = -2 WHERE bucket_name = $1`, [
      tb.name,
    ]);
    await expect(tb.acquire(ctx())).rejects.toBeInstanceOf(RateLimitStoreCorrupt);
    await tb.reset(ctx());
    expect((await tb.acquire(ctx())).allowed).toBe(true);
  });

  it('reset clears the state but keeps the row and its metadata (§27.45)', async () => {
    const tb = new TokenBucket(uniqueName('reset'), { capacity: 2, refillPerSecond: 0, backend: 'postgres' });
    await tb.acquire(ctx());
    await tb.reset(ctx());
    const { rows } = await db.pool.query(
      `SELECT kind, capacity, tokens FROM "${db.schema}".rate_limit_buckets WHERE bucket_name = $1`,
      [tb.name],
    );
    expect(rows).toEqual([{ kind: 'token_bucket', capacity: 2, tokens: null }]);
    const log = new SlidingWindow(uniqueName('reset'), { limit: 2, window: '1m', backend: 'postgres' });
    await log.acquire(ctx());
    await log.reset(ctx());
    const entries = await db.pool.query(
      `SELECT count(*)::int AS n FROM "${db.schema}".rate_limit_window_entries WHERE bucket_name = $1`,
      [log.name],
    );
    expect(entries.rows[0].n).toBe(0);
  });

  it('log-style windows live in rate_limit_window_entries, one row per admitted request (§27.4)', async () => {
    const log = new SlidingWindow(uniqueName('entries'), { limit: 3, window: '1m', backend: 'postgres' });
    const a = await log.acquire(ctx());
    const b = await log.acquire(ctx());
    const { rows } = await db.pool.query(
      `SELECT request_id::text AS id FROM "${db.schema}".rate_limit_window_entries WHERE bucket_name = $1 ORDER BY admitted_at`,
      [log.name],
    );
    expect(rows.map((r) => r.id)).toEqual([a.requestId, b.requestId]);
    await log.refund(a, ctx());
    const after = await db.pool.query(
      `SELECT request_id::text AS id FROM "${db.schema}".rate_limit_window_entries WHERE bucket_name = $1`,
      [log.name],
    );
    expect(after.rows.map((r) => r.id)).toEqual([b.requestId]);
  });

  it("backend 'postgres' without ctx.driver is a configuration error", async () => {
    const tb = new TokenBucket(uniqueName('nodriver'), {
      capacity: 1,
      refillPerSecond: 1,
      backend: 'postgres',
    });
    await expect(tb.acquire({})).rejects.toBeInstanceOf(RateLimitBackendMissing);
    const res = new ConcurrencyReservation(uniqueName('nodriver'), { slots: 1, lease: 1000 });
    await expect(res.acquire(randomUUID(), randomUUID(), {})).rejects.toBeInstanceOf(RateLimitBackendMissing);
  });

  it('a reservation name may contain ":" (keyed and queue-cap names do) (§27.46)', async () => {
    const res = new ConcurrencyReservation('geocode-session:tenant:42', { slots: 1, lease: 1000 });
    await res.ensureSlots(ctx());
    const lease = await res.acquire(randomUUID(), randomUUID(), ctx());
    expect(lease.bucketName).toBe('geocode-session:tenant:42');
  });

  it('the fence is acquired_at with microseconds, compared exactly', async () => {
    const res = new ConcurrencyReservation(uniqueName('fence'), { slots: 1, lease: 60_000 });
    await res.ensureSlots(ctx());
    const worker = randomUUID();
    const lease = await res.acquire(randomUUID(), worker, ctx());
    expect(lease.fence).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    const { rows } = await db.pool.query(
      `SELECT acquired_at = $2::timestamptz AS same FROM "${db.schema}".reservation_slots WHERE bucket_name = $1`,
      [res.name, lease.fence],
    );
    expect(rows[0].same).toBe(true);
    // Off by one microsecond: not this lease.
    const wrong = lease.fence.replace(/(\d)Z$/, (_, d: string) => `${(Number(d) + 1) % 10}Z`);
    expect(await res.release({ ...lease, fence: wrong }, worker, ctx())).toBe(false);
    expect(await res.release(lease, worker, ctx())).toBe(true);
  });
});

describe('syncSlots', () => {
  it('creates missing rows, deletes free excess, keeps held excess; re-runnable', async () => {
    const name = uniqueName('sync');
    const ctx = { driver: db.driver, schema: db.schema };
    const four = new ConcurrencyReservation(name, { slots: 4, lease: 60_000 });
    const first = await syncSlots([four], ctx);
    expect(first.inserted.map((r) => r.slotIndex)).toEqual([0, 1, 2, 3]);
    expect(first.deleted).toEqual([]);
    const worker = randomUUID();
    const leases = [];
    for (let i = 0; i < 4; i++) leases.push(await four.acquire(randomUUID(), worker, ctx));
    await four.release(leases[2]!, worker, ctx); // slot 2 free, 1 and 3 held

    const two = new ConcurrencyReservation(name, { slots: 2, lease: 60_000 });
    const shrink = await syncSlots([two], ctx);
    expect(shrink.inserted).toEqual([]);
    expect(shrink.deleted).toEqual([{ bucketName: name, slotIndex: 2 }]);
    expect(shrink.skippedHeld).toEqual([{ bucketName: name, slotIndex: 3 }]);
    await four.release(leases[3]!, worker, ctx);
    const again = await syncSlots([two], ctx);
    expect(again.deleted).toEqual([{ bucketName: name, slotIndex: 3 }]);
    expect((await two.peek(ctx)).totalSlots).toBe(2);

    const grow = await syncSlots([new ConcurrencyReservation(name, { slots: 3, lease: 60_000 })], ctx);
    expect(grow.inserted).toEqual([{ bucketName: name, slotIndex: 2 }]);
  });
});
