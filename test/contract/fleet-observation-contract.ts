/**
 * `Backend.observeFleet`, part of the Backend contract, run unchanged against both backends. Time
 * passes only through the harness's `timeTravel`; ages are checked against the backend's own
 * stored times, never against the test's clock.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { FleetObservationRequest, QueueObservation } from '../../src/backend/fleet-observation.js';
import type { RateLimitStore, ReservationSpec } from '../../src/ratelimit/stores/rate-limit-store.js';
import type { WorkerRegistration } from '../../src/backend/worker-types.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { silentLogger } from '../../src/obs/logger.js';
import type { ContractHarness } from './backend-contract.js';

const alpha = actor({ name: 'fleet_alpha', queue: 'fleet_alpha' }, async () => undefined);
const beta = actor({ name: 'fleet_beta', queue: 'fleet_beta' }, async () => undefined);
const W_OLD = '018f0000-0000-7000-8000-00000000f001';
const W_NEW = '018f0000-0000-7000-8000-00000000f002';
const LEADER = '018f0000-0000-7000-8000-00000000f00a';
const REQUEST: FleetObservationRequest = { aliveWithinMs: 60_000, keyedReservationBases: [] };
const HOUR = 3_600_000;

/** A job id per slot taken (`reservation_slots.job_id` is a uuid). */
const jobId = (n: number): string => `018f0000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;

const registration = (workerId: string, queues: string[]): WorkerRegistration => ({
  workerId,
  hostname: 'fleet-host',
  pid: 1,
  label: null,
  queues,
  maxConcurrency: 4,
  version: 'test',
});

/** Zero counts for `queue`, overridden by `o`. */
const queueOf = (queue: string, o: Partial<QueueObservation> = {}): QueueObservation => ({
  queue,
  pending: 0,
  scheduled: 0,
  running: 0,
  oldestPendingAgeSeconds: null,
  workersAlive: 0,
  ...o,
});

export function defineFleetObservationContract(
  name: string,
  makeHarness: () => Promise<ContractHarness>,
): void {
  describe(`Backend fleet observation contract: ${name}`, () => {
    let h: ContractHarness;
    let client: TaskQ;
    let stores: ReturnType<ContractHarness['backend']['rateLimitStores']> | null = null;

    beforeAll(async () => {
      h = await makeHarness();
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(async () => {
      await stores?.close();
      stores = null;
      await h.reset();
      client = new TaskQ(h.backend, { capacityCacheTtl: 0 });
    });

    const observe = (request: Partial<FleetObservationRequest> = {}) =>
      h.backend.observeFleet({ ...REQUEST, ...request });

    /** The backend's fleet-wide reservation store. */
    const shared = (): RateLimitStore => {
      stores ??= h.backend.rateLimitStores({ pgFallback: true, logger: silentLogger });
      return stores.shared;
    };

    /** Creates `spec`'s slots and takes `take` of them, each for its own job. */
    const reserve = async (spec: ReservationSpec, take: number, firstJob: number): Promise<void> => {
      await shared().ensureSlots(spec);
      for (let i = 0; i < take; i++) {
        const out = await shared().acquireSlot(spec, jobId(firstJob + i), W_OLD);
        expect(out.ok).toBe(true);
      }
    };

    const claim = (queue: string, actorName: string, limit: number) =>
      h.backend.dispatchBatch({
        workerId: W_OLD,
        queues: [queue],
        actors: [{ name: actorName, maxConcurrent: null }],
        limit,
        leaseMs: HOUR,
        oversample: 2,
      });

    it('is empty on an empty fleet', async () => {
      expect(await observe()).toEqual({ queues: [], reservations: [], leaders: 0 });
    });

    it('counts live jobs by status per queue, lists queues with only a queues row, sorted by name', async () => {
      for (let i = 0; i < 4; i++) await client.enqueue(alpha, {});
      expect(await claim('fleet_alpha', 'fleet_alpha', 1)).toHaveLength(1);
      await client.enqueue(alpha, {}, { delay: '2h' });
      const cancelled = await client.enqueue(alpha, {});
      await client.cancel(cancelled.jobId);
      await client.enqueue(beta, {}, { delay: '1h' });
      await h.setQueueMode('fleet_configured', 'round_robin');

      const { queues } = await observe();
      expect(queues.map((q) => q.queue)).toEqual(['fleet_alpha', 'fleet_beta', 'fleet_configured']);
      expect(queues[0]).toMatchObject({ pending: 3, scheduled: 1, running: 1, workersAlive: 0 });
      expect(queues[0]!.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(0);
      // Only scheduled: nothing is due yet, so no pending age.
      expect(queues[1]).toEqual(queueOf('fleet_beta', { scheduled: 1 }));
      expect(queues[2]).toEqual(queueOf('fleet_configured'));
    });

    it("reports the oldest pending job's age on the backend's clock; scheduled jobs are not due", async () => {
      const old = await client.enqueue(alpha, {});
      await client.enqueue(alpha, {}, { delay: '10h' });
      await h.timeTravel(HOUR);
      const young = await client.enqueue(alpha, {});
      const dueOld = (await h.backend.get(old.jobId))!.scheduledAt.getTime();
      const dueYoung = (await h.backend.get(young.jobId))!.scheduledAt.getTime();
      // The stored due times are an hour apart (and JS dates keep milliseconds, the database
      // microseconds: hence the 2 ms of slack below).
      const apart = (dueYoung - dueOld) / 1000;
      expect(apart).toBeGreaterThanOrEqual(3600 - 0.002);

      const withBoth = (await observe()).queues[0]!;
      expect(withBoth).toMatchObject({ queue: 'fleet_alpha', pending: 2, scheduled: 1 });
      await client.cancel(old.jobId);
      const youngOnly = (await observe()).queues[0]!;
      expect(youngOnly).toMatchObject({ pending: 1, scheduled: 1 });

      // The older job's age is the one reported: the first reading was taken after the young job
      // was due (so at least `apart`), and no later than the second (so at most `apart` more).
      const ageBoth = withBoth.oldestPendingAgeSeconds!;
      const ageYoung = youngOnly.oldestPendingAgeSeconds!;
      expect(ageYoung).toBeGreaterThanOrEqual(0);
      expect(ageBoth).toBeGreaterThanOrEqual(apart - 0.002);
      expect(ageBoth).toBeLessThanOrEqual(ageYoung + apart + 0.002);
    });

    it('counts the workers seen within the window, per queue they serve', async () => {
      await h.backend.registerWorker(registration(W_OLD, ['fleet_alpha', 'fleet_stale_only']));
      await h.timeTravel(2 * 60_000);
      await h.backend.registerWorker(registration(W_NEW, ['fleet_alpha', 'fleet_alpha']));

      // The stale worker's only queue is not listed: nothing else names it.
      expect((await observe()).queues).toEqual([queueOf('fleet_alpha', { workersAlive: 1 })]);
      expect((await observe({ aliveWithinMs: HOUR })).queues).toEqual([
        queueOf('fleet_alpha', { workersAlive: 2 }),
        queueOf('fleet_stale_only', { workersAlive: 1 }),
      ]);

      await h.backend.touchWorker(W_OLD);
      expect((await observe()).queues.map((q) => [q.queue, q.workersAlive])).toEqual([
        ['fleet_alpha', 2],
        ['fleet_stale_only', 1],
      ]);
    });

    it('sums keyed reservations under the longest matching base, else (keyed); static ones by name', async () => {
      const spec = (name: string, slots: number, keyed: boolean): ReservationSpec => ({
        name,
        slots,
        keyed,
        leaseMs: HOUR,
      });
      await reserve(spec('api', 2, false), 1, 1);
      await reserve(spec('api:eu:tenant-1', 3, true), 2, 10);
      await reserve(spec('api:eu:tenant-2', 1, true), 0, 20);
      await reserve(spec('api:us', 2, true), 1, 30);
      await reserve(spec('apix:1', 1, true), 1, 40);
      await reserve(spec('other:k', 2, true), 0, 50);
      await reserve(spec('zeta', 1, false), 0, 60);

      const { reservations } = await observe({ keyedReservationBases: ['api', 'api:eu', 'unused'] });
      expect(reservations).toEqual([
        { name: '(keyed)', keyed: true, slots: 3, held: 1 },
        { name: 'api', keyed: false, slots: 2, held: 1 },
        { name: 'api', keyed: true, slots: 2, held: 1 },
        { name: 'api:eu', keyed: true, slots: 4, held: 2 },
        { name: 'zeta', keyed: false, slots: 1, held: 0 },
      ]);

      // Without bases, every keyed row is unmatched.
      expect((await observe()).reservations).toEqual([
        { name: '(keyed)', keyed: true, slots: 9, held: 4 },
        { name: 'api', keyed: false, slots: 2, held: 1 },
        { name: 'zeta', keyed: false, slots: 1, held: 0 },
      ]);
    });

    it('counts a slot whose lease expired as not held', async () => {
      const short: ReservationSpec = { name: 'db', slots: 3, keyed: false, leaseMs: 1000 };
      const long: ReservationSpec = { ...short, leaseMs: HOUR };
      await reserve(short, 1, 1);
      await reserve(long, 1, 2);
      expect((await observe()).reservations).toEqual([{ name: 'db', keyed: false, slots: 3, held: 2 }]);
      await h.timeTravel(5000);
      expect((await observe()).reservations).toEqual([{ name: 'db', keyed: false, slots: 3, held: 1 }]);
    });

    it('counts the leader while its lease is live', async () => {
      expect((await observe()).leaders).toBe(0);
      const session = await h.backend.openLeaderSession(LEADER, 'fleet-host', { leaseMs: 10_000 });
      try {
        expect(await session.tryAcquire()).toBe(true);
        expect((await observe()).leaders).toBe(1);
        await h.timeTravel(20_000);
        expect((await observe()).leaders).toBe(0);
        expect(await session.tryAcquire()).toBe(true);
        expect((await observe()).leaders).toBe(1);
        await session.release();
        expect((await observe()).leaders).toBe(0);
      } finally {
        await session.close();
      }
    });

    it('rejects a bad request with a typed error naming the field', async () => {
      const bad: [Record<string, unknown>, string, unknown][] = [
        [{ aliveWithinMs: -1 }, 'aliveWithinMs', -1],
        [{ aliveWithinMs: Number.NaN }, 'aliveWithinMs', Number.NaN],
        [{ keyedReservationBases: 'api' }, 'keyedReservationBases', 'api'],
        [{ keyedReservationBases: ['api', ''] }, 'keyedReservationBases[1]', ''],
      ];
      for (const [request, field, value] of bad) {
        const err = await h.backend
          .observeFleet({ ...REQUEST, ...request } as FleetObservationRequest)
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ field, value });
      }
    });
  });
}
