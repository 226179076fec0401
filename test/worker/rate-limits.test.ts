/**
 * Rate limits wired into the worker, in process: denials reschedule without using an attempt and
 * are recorded on the attempt; names resolve in the registry given to the worker; unknown names,
 * a Redis-backed limit without Redis, and a keyed ref whose key cannot be derived are refused
 * clearly; slots are freed when handlers end and renewed by the heartbeat; the in-memory backend
 * gets the same gate.
 */
import { randomBytes, randomUUID } from 'node:crypto';

import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { MissingProvider } from '../../src/errors/missing-provider-error.js';
import {
  ConcurrencyReservation,
  RateLimitRegistry,
  TokenBucket,
  keyedRateLimit,
} from '../../src/ratelimit/index.js';
import { LOCAL_RETRY_WAITS_MS } from '../../src/worker/rate-limit-gate.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { captureLogger } from '../ratelimit/conformance.js';

const QUEUE = 'rl_inproc';
const run = randomBytes(4).toString('hex');

let db: TestSchema;
let tq: TaskQ;

const baseSettings = () => ({
  pgDsn: TEST_DSN,
  schema: db.schema,
  queues: [QUEUE],
  maxConcurrency: 4,
  heartbeatInterval: '500ms',
  lockLease: '3s',
  cancellationGracePeriod: '1s',
  cleanupGracePeriod: '1s',
  watchdogEnabled: false,
  logLevel: 'error' as const,
});

beforeAll(async () => {
  db = await migratedSchema('rlw');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq?.close();
  await db?.drop();
});

const Tenant = z.object({ tenant: z.string() });

describe('a rate-limited actor', () => {
  it('runs what the quota allows; denied jobs wait scheduled, their attempt given back and the denial recorded', async () => {
    const quota = actor(
      {
        name: 'rl_quota',
        queue: QUEUE,
        rateLimits: [
          new TokenBucket(`quota-${run}`, { capacity: 2, refillPerSecond: 0, backend: 'postgres' }),
        ],
      },
      async () => 'ran',
    );
    // The jobs are all waiting before the worker starts, so its first claim takes all five. Were
    // they to arrive one by one, the first denial would pause the actor's claims (no retry hint:
    // 5 s) with jobs still pending, and each later one would wait out a pause of its own.
    const handles = await Promise.all(Array.from({ length: 5 }, () => tq.enqueue(quota, {})));
    const worker = new Worker({ actors: [quota], settings: baseSettings() });
    await worker.start();
    try {
      await waitFor(async () => {
        const rows = await Promise.all(handles.map((h) => tq.getRow(h.jobId)));
        return (
          rows.filter((r) => r!.status === 'succeeded').length === 2 &&
          rows.filter((r) => r!.status === 'scheduled').length === 3
        );
      }, 10_000);
      for (const h of handles) {
        const row = (await tq.getRow(h.jobId))!;
        const attempts = await h.attempts();
        if (row.status === 'succeeded') {
          expect(row.attempt).toBe(1);
          expect(attempts.map((a) => a.outcome)).toEqual(['succeeded']);
        } else {
          // The denial used no attempt: the next run will again be attempt 1.
          expect(row.attempt).toBe(0);
          expect(attempts.map((a) => a.outcome)).toEqual(['rate_limit_denied']);
          expect(attempts[0]!.errorClass).toBe('ReservationUnavailable');
          // A fixed quota gives no hint: the default back-off (5 s) applies.
          expect(row.scheduledAt!.getTime() - attempts[0]!.finishedAt!.getTime()).toBeGreaterThanOrEqual(
            4_900,
          );
        }
      }
    } finally {
      await worker.stop();
    }
  });

  it('waits out a denial whose hint is short in the worker: no denial written, no job rescheduled', async () => {
    // One token every 50 ms: three jobs claimed at once are admitted over ~100 ms, within the bound.
    const bucket = new TokenBucket(`paced-${run}`, { capacity: 1, refillPerSecond: 20, backend: 'memory' });
    const paced = actor({ name: 'rl_paced', queue: QUEUE, rateLimits: [bucket] }, async () => 'ran');
    const handles = await Promise.all(Array.from({ length: 3 }, () => tq.enqueue(paced, {})));
    const logger = captureLogger();
    const worker = new Worker({ actors: [paced], settings: baseSettings(), logger });
    await worker.start();
    try {
      for (const h of handles) expect(await h.wait({ timeout: '10s' })).toBe('ran');
      // The bucket did deny (tries waited out log at debug) and no denial ended a wait (info).
      const denials = logger.entries.filter(
        (e) => e.msg === 'composition-denied' && e.fields.failedBucket === bucket.name,
      );
      expect(denials.filter((e) => e.level === 'debug').length).toBeGreaterThanOrEqual(1);
      expect(denials.filter((e) => e.level !== 'debug')).toEqual([]);
      for (const h of handles) expect((await h.attempts()).map((a) => a.outcome)).toEqual(['succeeded']);
    } finally {
      await worker.stop();
    }
  });

  it('resolves names in the registry it is given, never runs more holders than slots, and frees every slot', async () => {
    const registry = new RateLimitRegistry();
    const slots = new ConcurrencyReservation(`shared-${run}`, { slots: 2, lease: '30s' });
    registry.register(slots);
    let running = 0;
    let peak = 0;
    const limited = actor(
      { name: 'rl_named', queue: QUEUE, reservations: [`shared-${run}`] },
      async (_p, ctx) => {
        peak = Math.max(peak, ++running);
        // The first holders keep their slots until both are held at once: the cap is exercised.
        await waitFor(() => peak >= 2, 10_000, 'both slots held at once');
        running--;
        return ctx.attempt;
      },
    );
    const worker = new Worker({ actors: [limited], settings: baseSettings(), rateLimitRegistry: registry });
    await worker.start();
    try {
      const handles = await Promise.all(Array.from({ length: 8 }, () => tq.enqueue(limited, {})));
      // Every run is attempt 1: reservation denials give the attempt back.
      for (const h of handles) expect(await h.wait({ timeout: '20s' })).toBe(1);
      expect(peak).toBe(2);
      await waitFor(async () => (await slots.peek({ driver: db.driver, schema: db.schema })).heldCount === 0);
    } finally {
      await worker.stop();
    }
  });

  it('parks a job denied a slot its worker holds until that slot is freed, instead of rescheduling it', async () => {
    const slot = new ConcurrencyReservation(`parked-${run}`, { slots: 1, lease: '30s' });
    const order: string[] = [];
    const logger = captureLogger();
    const serial = actor(
      { name: 'rl_parked', queue: QUEUE, reservations: [slot] },
      async (p: { n: number }) => {
        order.push(`start ${p.n}`);
        // The first holder ends once the other job has been denied the slot (and is parked on it),
        // well within the local retry's waits (25 + 75 + 150 ms); the parked one, once it runs,
        // finds that denial already logged.
        await waitFor(
          () =>
            logger.entries.some((e) => e.msg === 'composition-denied' && e.fields.failedBucket === slot.name),
          10_000,
          'the other job to be denied the slot',
        );
        order.push(`end ${p.n}`);
      },
    );
    const handles = await Promise.all([0, 1].map((n) => tq.enqueue(serial, { n })));
    const worker = new Worker({ actors: [serial], settings: baseSettings(), logger });
    await worker.start();
    try {
      for (const h of handles) await h.wait({ timeout: '10s' });
      // One at a time, and no job went back to the queue: one attempt row each, and it succeeded.
      expect(order).toEqual([
        order[0],
        order[0]!.replace('start', 'end'),
        order[2],
        order[2]!.replace('start', 'end'),
      ]);
      expect(order[0]).not.toBe(order[2]);
      for (const h of handles) expect((await h.attempts()).map((a) => a.outcome)).toEqual(['succeeded']);
    } finally {
      await worker.stop();
    }
  });

  it('reschedules a job whose slot is still held once the local retry is spent', async () => {
    const slot = new ConcurrencyReservation(`held-${run}`, { slots: 1, lease: '30s' });
    const blocked = actor({ name: 'rl_held', queue: QUEUE, reservations: [slot] }, async () => 'ran');
    const registry = new RateLimitRegistry();
    registry.register(slot);
    const logger = captureLogger();
    const worker = new Worker({
      actors: [blocked],
      settings: baseSettings(),
      rateLimitRegistry: registry,
      logger,
    });
    await worker.start();
    // Another holder (not this worker: its release would never be seen here) keeps the only slot.
    await slot.acquire(randomUUID(), randomUUID(), { driver: db.driver, schema: db.schema });
    try {
      const h = await tq.enqueue(blocked, {});
      await waitFor(async () => (await tq.getRow(h.jobId))!.status === 'scheduled', 10_000);
      const [denied] = await h.attempts();
      expect(denied!.outcome).toBe('reservation_denied');
      // The first try and one per local retry wait were denied (each logged at debug), and the last
      // denial ended the acquisition (info): the retry was spent, then the job went back.
      const denials = logger.entries.filter(
        (e) => e.msg === 'composition-denied' && e.fields.jobId === h.jobId,
      );
      expect(denials.map((e) => e.level)).toEqual([
        ...Array<string>(LOCAL_RETRY_WAITS_MS.length + 1).fill('debug'),
        'info',
      ]);
    } finally {
      await worker.stop();
    }
  });

  it('renews the slot lease with the heartbeat while the handler runs', async () => {
    // A 1 s lease and a handler that runs past it: without renewal the slot would be free mid-run.
    const res = new ConcurrencyReservation(`renewed-${run}`, { slots: 1, lease: '1s' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const long = actor({ name: 'rl_long', queue: QUEUE, reservations: [res] }, async () => {
      await gate;
    });
    const worker = new Worker({ actors: [long], settings: baseSettings() });
    await worker.start();
    try {
      const h = await tq.enqueue(long, {});
      await waitFor(async () => (await tq.getRow(h.jobId))!.status === 'running');
      // Until the database clock is two leases past the acquisition: only renewals keep it held.
      await waitFor(
        async () =>
          (
            await db.pool.query<{ past: boolean }>(
              `SELECT clock_timestamp() > acquired_at + interval '2 seconds' AS past
                 FROM "${db.schema}".reservation_slots WHERE bucket_name = $1 AND job_id IS NOT NULL`,
              [res.name],
            )
          ).rows[0]?.past === true,
        10_000,
        'two leases to pass',
      );
      expect(await res.peek({ driver: db.driver, schema: db.schema })).toMatchObject({ heldCount: 1 });
      release();
      await h.wait({ timeout: '10s' });
    } finally {
      release();
      await worker.stop();
    }
  });

  it('fails a job whose keyed-limit key cannot be derived, without retrying', async () => {
    const keyed = actor(
      {
        name: 'rl_keyed_bad',
        queue: QUEUE,
        payload: Tenant,
        rateLimits: [
          keyedRateLimit(Tenant, {
            baseName: `tenant-${run}`,
            keyFn: (p) => p.tenant,
            capacity: 5,
            refillPerSecond: 1,
            backend: 'postgres',
          }),
        ],
      },
      async () => 'never',
    );
    const worker = new Worker({ actors: [keyed], settings: baseSettings() });
    await worker.start();
    try {
      const bad = await tq.enqueue(keyed, { tenant: '' });
      const good = await tq.enqueue(keyed, { tenant: 'acme' });
      expect(await good.wait({ timeout: '10s' })).toBe('never');
      await waitFor(async () => (await tq.getRow(bad.jobId))!.status === 'failed');
      const row = (await tq.getRow(bad.jobId))!;
      expect(row).toMatchObject({ attempt: 1, errorClass: 'PayloadValidationError' });
    } finally {
      await worker.stop();
    }
  });
});

describe('refusing to start', () => {
  it('names every actor and limit nothing provides (MissingProvider) and claims nothing', async () => {
    const orphan = actor(
      { name: 'rl_orphan', queue: QUEUE, rateLimits: ['nope-bucket'], reservations: ['nope-slots'] },
      async () => undefined,
    );
    const h = await tq.enqueue(orphan, {});
    const worker = new Worker({ actors: [orphan], settings: baseSettings() });
    const err = await worker.start().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MissingProvider);
    expect((err as MissingProvider).missing).toEqual([
      { actor: 'rl_orphan', namespace: 'rate_limit', name: 'nope-bucket' },
      { actor: 'rl_orphan', namespace: 'reservation', name: 'nope-slots' },
    ]);
    expect((err as Error).message).toMatch(/rl_orphan.*nope-bucket/);
    expect((await tq.getRow(h.jobId))!.status).toBe('pending');
    expect(worker.phase).toBe('stopped');
    await tq.cancel(h.jobId);
  });

  it('refuses a Redis-backed limit when no Redis is configured', async () => {
    const needsRedis = actor(
      {
        name: 'rl_needs_redis',
        queue: QUEUE,
        rateLimits: [new TokenBucket(`redis-${run}`, { capacity: 1, refillPerSecond: 1 })],
      },
      async () => undefined,
    );
    const worker = new Worker({ actors: [needsRedis], settings: { ...baseSettings(), redisUrl: null } });
    const err = await worker.start().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toMatch(/redisUrl.*TASKQ_REDIS_URL/);
  });

  it('refuses a primitive declared in the wrong list', async () => {
    const wrong = actor(
      {
        name: 'rl_wrong_list',
        queue: QUEUE,
        rateLimits: [new ConcurrencyReservation(`wrong-${run}`, { slots: 1, lease: '1m' })],
      },
      async () => undefined,
    );
    const worker = new Worker({ actors: [wrong], settings: baseSettings() });
    await expect(worker.start()).rejects.toThrow(/declare it under reservations/);
  });
});

describe('on the in-memory backend', () => {
  it('applies memory-backed limits the same way', async () => {
    const backend = new InMemoryBackend();
    const jobs = new TaskQ(backend);
    const limited = actor(
      {
        name: 'rl_memory',
        queue: QUEUE,
        rateLimits: [new TokenBucket(`mem-${run}`, { capacity: 1, refillPerSecond: 0, backend: 'memory' })],
      },
      async () => 'ok',
    );
    const worker = new Worker({ actors: [limited], backend, settings: { ...baseSettings(), pgDsn: null } });
    await worker.start();
    try {
      const a = await jobs.enqueue(limited, {});
      const b = await jobs.enqueue(limited, {});
      await waitFor(async () => {
        const rows = [await backend.get(a.jobId), await backend.get(b.jobId)];
        return rows.some((r) => r!.status === 'succeeded') && rows.some((r) => r!.status === 'scheduled');
      });
      const denied = [await backend.get(a.jobId), await backend.get(b.jobId)].find(
        (r) => r!.status === 'scheduled',
      )!;
      expect((await backend.getAttempts(denied.id)).map((x) => x.outcome)).toEqual(['rate_limit_denied']);
    } finally {
      await worker.stop();
      await backend.close();
    }
  });
});
