/**
 * Rate limits in the worker, the parts the other suites leave out (real Postgres, in process):
 * the cap on the reschedule delay after a reservation denial, the keyed-limit sweeper (local
 * eviction on every worker, fleet-wide row deletion on the leader only), and a worker whose queue
 * cap cannot be slot-synced at startup.
 */
import { randomBytes, randomUUID } from 'node:crypto';

import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor, type AnyActor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { SystemClock } from '../../src/core/clock.js';
import { TaskQ } from '../../src/client/taskq.js';
import { silentLogger, type Logger } from '../../src/obs/logger.js';
import {
  ConcurrencyReservation,
  KEYED_IDLE_THRESHOLD_MS,
  RateLimitRegistry,
  ReservationUnavailable,
  TokenBucket,
  keyedRateLimit,
  keyedReservation,
  queueConcurrencyReservationName,
  rateLimitStoresFor,
  type RateLimitContext,
} from '../../src/ratelimit/index.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { RESERVATION_DENIAL_MAX_DELAY_MS, denialDelayMs } from '../../src/worker/job-runner.js';
import { RATE_LIMIT_LOCAL_WAIT_MS, RateLimitGate } from '../../src/worker/rate-limit-gate.js';
import { RateLimitSweeper } from '../../src/worker/rate-limit-sweeper.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { flushPromises, holdsFor, waitFor } from '../helpers/wait.js';

const QUEUE = 'rl_extra';
const run = randomBytes(4).toString('hex');

let db: TestSchema;
let tq: TaskQ;

const baseSettings = () => ({
  pgDsn: TEST_DSN,
  schema: db.schema,
  queues: [QUEUE],
  maxConcurrency: 4,
  heartbeatInterval: '500ms',
  lockLease: '5s',
  cancellationGracePeriod: '1s',
  cleanupGracePeriod: '1s',
  watchdogEnabled: false,
  logLevel: 'error' as const,
});
const ctx = (): RateLimitContext => ({ driver: db.driver, schema: db.schema });

/** A worker's rate-limit gate for one actor, on this file's schema (not started). */
function gateFor(registry: RateLimitRegistry, a: AnyActor, logger: Logger = silentLogger): RateLimitGate {
  return new RateLimitGate({
    registry,
    actors: new Map<string, AnyActor>([[a.name, a]]),
    workerId: randomUUID(),
    settings: loadWorkerSettings({ overrides: { pgDsn: TEST_DSN, schema: db.schema, queues: [QUEUE] } })
      .settings,
    stores: rateLimitStoresFor({ driver: db.driver, schema: db.schema }),
    clock: new SystemClock(),
    logger,
  });
}

beforeAll(async () => {
  db = await migratedSchema('rlx');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq?.close();
  await db?.drop();
});

/**
 * The delay the worker chose for the job's last denial: its scheduled_at minus its latest attempt's
 * finished_at. Both come from one settle statement on the database clock, read in one snapshot.
 */
async function lastDenial(jobId: string): Promise<{ outcome: string; delayMs: number } | null> {
  const { rows } = await db.pool.query<{ outcome: string; delay_ms: number }>(
    `SELECT a.outcome, extract(epoch FROM j.scheduled_at - a.finished_at)::float8 * 1000 AS delay_ms
       FROM "${db.schema}".jobs j
       JOIN LATERAL (SELECT outcome, finished_at FROM "${db.schema}".job_attempts
                      WHERE job_id = j.id ORDER BY finished_at DESC LIMIT 1) a ON true
      WHERE j.id = $1 AND j.status = 'scheduled'`,
    [jobId],
  );
  const r = rows[0];
  return r ? { outcome: r.outcome, delayMs: r.delay_ms } : null;
}

describe('the delay after a denial', () => {
  it('denialDelayMs caps a reservation hint at 1 s (+ up to 20 % jitter) and leaves rate-limit hints alone', () => {
    expect(RESERVATION_DENIAL_MAX_DELAY_MS).toBe(1000);
    const reservation = new ReservationUnavailable('slots', 600_000, { source: 'reservation' });
    const rateLimit = new ReservationUnavailable('bucket', 4000, { source: 'rate_limit' });
    for (let i = 0; i < 200; i++) {
      const d = denialDelayMs(reservation);
      expect(d).toBeGreaterThanOrEqual(1000);
      expect(d).toBeLessThanOrEqual(1200);
      const r = denialDelayMs(rateLimit);
      expect(r).toBeGreaterThanOrEqual(4000);
      expect(r).toBeLessThanOrEqual(4800);
    }
  });

  it('a job denied a slot held under a 10-minute lease comes back after ~1 s, not after the lease', async () => {
    const slots = new ConcurrencyReservation(`denial-slots-${run}`, { slots: 1, lease: '10m' });
    // A token every 3.3 s: a rate-limit denial's hint is exact and is not capped.
    const bucket = new TokenBucket(`denial-bucket-${run}`, {
      capacity: 1,
      refillPerSecond: 0.3,
      backend: 'postgres',
    });
    const reserved = actor({ name: 'rlx_reserved', queue: QUEUE, reservations: [slots] }, async () => 'ran');
    const metered = actor({ name: 'rlx_metered', queue: QUEUE, rateLimits: [bucket] }, async () => 'ran');
    const worker = new Worker({ actors: [reserved, metered], settings: baseSettings() });
    await worker.start();
    // Someone else (not this worker, so not renewed by its heartbeat) holds the only slot.
    const holder = randomUUID();
    const lease = await slots.acquire(randomUUID(), holder, ctx());
    try {
      expect(await bucket.acquire(ctx())).toMatchObject({ allowed: true });
      const r = await tq.enqueue(reserved, {});
      const m = await tq.enqueue(metered, {});
      let rDenial: { outcome: string; delayMs: number } | null = null;
      let mDenial: { outcome: string; delayMs: number } | null = null;
      await waitFor(
        async () => {
          rDenial ??= await lastDenial(r.jobId);
          mDenial ??= await lastDenial(m.jobId);
          return rDenial !== null && mDenial !== null;
        },
        15_000,
        'both denials',
      );
      console.log(
        `reschedule delay: reservation denial ${rDenial!.delayMs.toFixed(0)} ms (hint ~600 000 ms), rate-limit denial ${mDenial!.delayMs.toFixed(0)} ms (hint ≤ 3334 ms)`,
      );
      expect(rDenial!.outcome).toBe('reservation_denied');
      // The delay is the feature here, so it is read from what the database stored (see lastDenial),
      // never timed by this process: the cap plus at most 20 % jitter. The two clock_timestamp()
      // reads it is measured between can only shorten it (a row-lock wait between them): the
      // slack below is generous, the bound above exact but for rounding.
      expect(rDenial!.delayMs).toBeGreaterThanOrEqual(RESERVATION_DENIAL_MAX_DELAY_MS - 100);
      expect(rDenial!.delayMs).toBeLessThanOrEqual(RESERVATION_DENIAL_MAX_DELAY_MS * 1.2 + 1);
      expect(mDenial!.outcome).toBe('rate_limit_denied');
      // Above the reservation cap and below the 5 s default back-off: the bucket's own hint
      // (at most 3334 ms, stretched by at most 20 %).
      expect(mDenial!.delayMs).toBeGreaterThan(RESERVATION_DENIAL_MAX_DELAY_MS * 1.2 + 20);
      expect(mDenial!.delayMs).toBeLessThan(4500);

      // Once the slot is free, the reserved job runs on its next return (attempt given back).
      await slots.release(lease, holder, ctx());
      expect(await r.wait({ timeout: '15s' })).toBe('ran');
      expect(await m.wait({ timeout: '15s' })).toBe('ran');
      expect((await tq.getRow(r.jobId))!.attempt).toBe(1);
    } finally {
      await slots.release(lease, holder, ctx()).catch(() => undefined);
      await worker.stop();
    }
  });
});

describe('claims paused by an actor-wide denial', () => {
  it("leaves the actor's new jobs pending (unclaimed) while its bucket says wait; keyed limits do not pause", async () => {
    // One token every 5 s: after the first job, the bucket denies for ~5 s.
    const bucket = new TokenBucket(`pause-bucket-${run}`, {
      capacity: 1,
      refillPerSecond: 0.2,
      backend: 'postgres',
    });
    const metered = actor({ name: 'rlx_paused', queue: QUEUE, rateLimits: [bucket] }, async () => 'ran');
    const free = actor({ name: 'rlx_unpaused', queue: QUEUE }, async () => 'ran');
    const worker = new Worker({ actors: [metered, free], settings: baseSettings() });
    await worker.start();
    try {
      const first = await tq.enqueue(metered, {});
      expect(await first.wait({ timeout: '10s' })).toBe('ran');
      const denied = await tq.enqueue(metered, {});
      await waitFor(async () => (await lastDenial(denied.jobId)) !== null, 10_000, 'the denial');
      // The worker now knows every job of this actor would be denied: it does not claim the next.
      const later = await tq.enqueue(metered, {});
      // A job of another actor, enqueued after it, is claimed and runs: the worker claimed from the
      // queue while `later` was there, and passed it over.
      const after = await tq.enqueue(free, {});
      expect(await after.wait({ timeout: '10s' })).toBe('ran');
      expect(await tq.getRow(later.jobId)).toMatchObject({ status: 'pending', attempt: 0 });
      expect(await later.attempts()).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it('a denial pauses the actor only for a primitive every job shares', () => {
    const Tenant = z.object({ tenant: z.string() });
    const shared = new TokenBucket(`pause-shared-${run}`, { capacity: 1, refillPerSecond: 1 });
    const a = actor(
      {
        name: 'rlx_pause_kinds',
        queue: QUEUE,
        payload: Tenant,
        rateLimits: [
          shared,
          'by-name',
          keyedRateLimit(Tenant, {
            baseName: 'per-tenant',
            keyFn: (p) => p.tenant,
            capacity: 1,
            refillPerSecond: 1,
          }),
        ],
        reservations: [
          keyedReservation(Tenant, {
            baseName: 'per-tenant-slots',
            keyFn: (p) => p.tenant,
            slots: 1,
            lease: '1m',
          }),
        ],
      },
      async () => undefined,
    );
    const gate = gateFor(new RateLimitRegistry(), a);
    expect(gate.deniesActorWide(QUEUE, a, shared.name)).toBe(true);
    expect(gate.deniesActorWide(QUEUE, a, 'by-name')).toBe(true);
    expect(gate.deniesActorWide(QUEUE, a, 'per-tenant:acme')).toBe(false);
    expect(gate.deniesActorWide(QUEUE, a, 'per-tenant-slots:acme')).toBe(false);
    expect(gate.deniesActorWide(QUEUE, a, queueConcurrencyReservationName(QUEUE))).toBe(false); // not capped here
  });
});

describe("a rate limit's denial waited out in the worker", () => {
  /**
   * A gate for an actor limited by `bucket`, whose registry counts tries and, among the tries after
   * the first `burst`, the most in flight at once.
   */
  async function countedGate(bucket: TokenBucket, burst = 0) {
    const limited = actor(
      { name: `rlx_wait_${bucket.name}`, queue: QUEUE, rateLimits: [bucket] },
      async () => 1,
    );
    const registry = new RateLimitRegistry();
    // `composition-denied` lines by level.
    const denied = { info: 0, debug: 0 };
    const logger: Logger = {
      ...silentLogger,
      info: (_o, msg) => void (msg === 'composition-denied' && denied.info++),
      debug: (_o, msg) => void (msg === 'composition-denied' && denied.debug++),
      child: () => logger,
    };
    const gate = gateFor(registry, limited, logger);
    await gate.start([]);
    const tries = { total: 0, inFlight: 0, mostInFlight: 0 };
    const acquireForActor = registry.acquireForActor.bind(registry);
    registry.acquireForActor = async (...args) => {
      const counted = ++tries.total > burst;
      if (counted) tries.mostInFlight = Math.max(tries.mostInFlight, ++tries.inFlight);
      try {
        return await acquireForActor(...args);
      } finally {
        if (counted) tries.inFlight--;
      }
    };
    const job = () => ({ id: randomUUID(), queue: QUEUE, payload: {} });
    return { gate, limited, tries, job, denied };
  }

  it('admits every job whose wait fits the bound, probing the limit one job at a time', async () => {
    // One token every 25 ms: eight jobs at once need 175 ms, within RATE_LIMIT_LOCAL_WAIT_MS.
    const { gate, limited, tries, job, denied } = await countedGate(
      new TokenBucket(`wait-${run}`, { capacity: 1, refillPerSecond: 40, backend: 'memory' }),
      8,
    );
    const held = await Promise.all(Array.from({ length: 8 }, () => gate.acquire(job(), limited)));
    expect(held.map((h) => h.length)).toEqual(Array(8).fill(1));
    // After the first eight tries (one admitted), the seven denied jobs took turns: one probe at a
    // time, each admitted after a denial or two (all probing at each token would take 8 + 7 + … + 1).
    expect(tries.total).toBeGreaterThan(8);
    expect(tries.mostInFlight).toBe(1);
    expect(tries.total).toBeLessThanOrEqual(8 + 3 * 7);
    // Denials waited out log at debug only: none ended an acquisition.
    expect(denied).toEqual({ info: 0, debug: tries.total - 8 });
    await gate.close();
  });

  it('gives up at once, for the job to be rescheduled, when the hint reaches past the bound', async () => {
    const { gate, limited, tries, job, denied } = await countedGate(
      new TokenBucket(`slow-${run}`, { capacity: 1, refillPerSecond: 1, backend: 'memory' }),
    );
    await gate.acquire(job(), limited);
    // A memory bucket answers without I/O: an acquisition that does not wait settles once the
    // queued promise work has run, before any timer could fire.
    let err: unknown = null;
    void gate.acquire(job(), limited).catch((e: unknown) => (err = e));
    await flushPromises();
    expect(err).toBeInstanceOf(ReservationUnavailable);
    expect((err as ReservationUnavailable).source).toBe('rate_limit');
    // The hint (1 s) reaches past the bound: the job was not held for it.
    expect((err as ReservationUnavailable).retryAfterMs).toBeGreaterThan(RATE_LIMIT_LOCAL_WAIT_MS);
    expect(tries.total).toBe(2);
    // The denial that ends the acquisition is the one logged at info.
    expect(denied).toEqual({ info: 1, debug: 1 });
    await gate.close();
  });

  it('ends the wait on abort (cancel, shutdown) with no further try', async () => {
    const { gate, limited, tries, job, denied } = await countedGate(
      new TokenBucket(`abort-${run}`, { capacity: 1, refillPerSecond: 5, backend: 'memory' }),
    );
    await gate.acquire(job(), limited);
    const ac = new AbortController();
    const abort = {
      get aborted() {
        return ac.signal.aborted;
      },
      signal: ac.signal,
    };
    const waiting = gate.acquire(job(), limited, abort).catch((e: unknown) => e);
    // Denied (a hint of 200 ms, within the bound): the job now waits it out.
    await waitFor(() => denied.debug === 1, 10_000, 'the first denial');
    ac.abort();
    expect(await waiting).toBeInstanceOf(ReservationUnavailable);
    // Past the hint, when the wait would have ended in another try: none comes.
    await holdsFor(() => tries.total === 2, 300, 'no further try');
    await gate.close();
  });
});

describe('RateLimitSweeper', () => {
  it('evicts idle keyed entries locally on every worker; only the leader deletes idle keyed rows', async () => {
    const Tenant = z.object({ tenant: z.string() });
    const names = { bucket: `kb-${run}`, slots: `ks-${run}`, fixed: `static-${run}` };
    const keyed = actor(
      {
        name: 'rlx_keyed',
        queue: QUEUE,
        payload: Tenant,
        rateLimits: [
          new TokenBucket(names.fixed, { capacity: 5, refillPerSecond: 1, backend: 'postgres' }),
          keyedRateLimit(Tenant, {
            baseName: names.bucket,
            keyFn: (p) => p.tenant,
            capacity: 5,
            refillPerSecond: 1,
            backend: 'postgres',
          }),
        ],
        reservations: [
          keyedReservation(Tenant, { baseName: names.slots, keyFn: (p) => p.tenant, slots: 2, lease: '1m' }),
        ],
      },
      async () => undefined,
    );
    // Idle bookkeeping runs on this clock; the rows' idleness is the database's.
    const clock = new FakeClock();
    const registry = new RateLimitRegistry({ clock });
    const gate = gateFor(registry, keyed);
    await gate.start([]);
    const use = async (tenant: string): Promise<void> => {
      const held = await gate.acquire({ id: randomUUID(), queue: QUEUE, payload: { tenant } }, keyed);
      await gate.release(held);
    };
    const bucketRows = async (name: string): Promise<{ keyed: boolean }[]> =>
      (
        await db.pool.query<{ keyed: boolean }>(
          `SELECT keyed FROM "${db.schema}".rate_limit_buckets WHERE bucket_name = $1`,
          [name],
        )
      ).rows;
    const slotRows = async (name: string): Promise<number> =>
      (
        await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${db.schema}".reservation_slots WHERE bucket_name = $1 AND keyed`,
          [name],
        )
      ).rows[0]!.n;
    const age = async (): Promise<void> => {
      await db.pool.query(
        `UPDATE "${db.schema}".rate_limit_buckets SET last_used_at = clock_timestamp() - interval '2 hours' WHERE bucket_name = ANY($1)`,
        [[`${names.bucket}:idle`, names.fixed]],
      );
      await db.pool.query(
        `UPDATE "${db.schema}".reservation_slots SET last_used_at = clock_timestamp() - interval '2 hours' WHERE bucket_name = $1`,
        [`${names.slots}:idle`],
      );
    };

    try {
      await use('idle');
      clock.advance(KEYED_IDLE_THRESHOLD_MS + 60_000);
      await use('busy');
      await age();
      expect(await bucketRows(`${names.bucket}:idle`)).toEqual([{ keyed: true }]);
      expect(await bucketRows(names.fixed)).toEqual([{ keyed: false }]);
      expect(await slotRows(`${names.slots}:idle`)).toBe(2);

      // A follower forgets the idle key's bucket and reservation, and deletes nothing.
      const follower = new RateLimitSweeper(gate, () => false, silentLogger);
      expect(await follower.runOnce()).toBe(2);
      expect(registry.rateLimits.has(`${names.bucket}:idle`)).toBe(false);
      expect(registry.reservations.has(`${names.slots}:idle`)).toBe(false);
      expect(registry.isKeyedRateLimit(`${names.bucket}:busy`)).toBe(true);
      expect(registry.isKeyedReservation(`${names.slots}:busy`)).toBe(true);
      expect(registry.rateLimits.has(names.fixed)).toBe(true);
      expect(await bucketRows(`${names.bucket}:idle`)).toHaveLength(1);
      expect(await slotRows(`${names.slots}:idle`)).toBe(2);

      // The leader deletes the idle keyed rows fleet-wide; recent keys and static rows stay.
      const leader = new RateLimitSweeper(gate, () => true, silentLogger);
      expect(await leader.runOnce()).toBe(0); // nothing left to forget locally
      expect(await bucketRows(`${names.bucket}:idle`)).toEqual([]);
      expect(await slotRows(`${names.slots}:idle`)).toBe(0);
      expect(await bucketRows(`${names.bucket}:busy`)).toEqual([{ keyed: true }]);
      expect(await slotRows(`${names.slots}:busy`)).toBe(2);
      expect(await bucketRows(names.fixed)).toEqual([{ keyed: false }]);

      // A forgotten key re-materialises (rows included) on its next use.
      await use('idle');
      expect(registry.isKeyedReservation(`${names.slots}:idle`)).toBe(true);
      expect(await slotRows(`${names.slots}:idle`)).toBe(2);
      expect(await bucketRows(`${names.bucket}:idle`)).toEqual([{ keyed: true }]);
    } finally {
      await gate.close();
    }
  });
});

describe('a queue cap whose slots cannot be synced at startup', () => {
  it('stops Worker.start with the cause, before the worker registers or claims anything', async () => {
    const queue = `rl_broken_${run}`;
    const capName = queueConcurrencyReservationName(queue);
    await new PostgresBackend(db.driver, { schema: db.schema }).setQueueMaxConcurrent(queue, 2);
    const capped = actor({ name: 'rlx_capped', queue }, async () => 'ran');
    const h = await tq.enqueue(capped, {});
    // The slot table refuses this reservation's rows (in this test's own schema only).
    await db.pool.query(`
      CREATE FUNCTION "${db.schema}".test_refuse_slots() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'reservation_slots is read-only for %', NEW.bucket_name;
      END $$;
      CREATE TRIGGER test_refuse_slots BEFORE INSERT OR UPDATE ON "${db.schema}".reservation_slots
        FOR EACH ROW WHEN (NEW.bucket_name = '${capName}') EXECUTE FUNCTION "${db.schema}".test_refuse_slots();
    `);
    const worker = new Worker({ actors: [capped], settings: { ...baseSettings(), queues: [queue] } });
    try {
      const err = await worker.start().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect(err).toMatchObject({ code: 'TASKQ_RESERVATION_SYNC_FAILED' });
      // The message names the reservations being synced and keeps the driver's reason.
      expect((err as Error).message).toContain(`reservations [${capName}]`);
      expect((err as Error).message).toContain(`reservation_slots is read-only for ${capName}`);
      expect(worker.phase).toBe('stopped');
      expect(await worker.stopped).toBe('fatal');
      const workers = await db.pool.query(`SELECT id FROM "${db.schema}".workers WHERE id = $1`, [
        worker.workerId,
      ]);
      expect(workers.rows).toEqual([]);
      expect(await tq.getRow(h.jobId)).toMatchObject({ status: 'pending', attempt: 0 });
      const rows = await db.pool.query(
        `SELECT count(*)::int AS n FROM "${db.schema}".reservation_slots WHERE bucket_name = $1`,
        [capName],
      );
      expect(rows.rows[0].n).toBe(0);
    } finally {
      await db.pool.query(`DROP TRIGGER IF EXISTS test_refuse_slots ON "${db.schema}".reservation_slots`);
      await worker.stop();
    }

    // The sync is idempotent: the next start, with the table writable again, succeeds and runs the job.
    const retry = new Worker({ actors: [capped], settings: { ...baseSettings(), queues: [queue] } });
    await retry.start();
    try {
      expect(await h.wait({ timeout: '15s' })).toBe('ran');
    } finally {
      await retry.stop();
    }
  });
});
