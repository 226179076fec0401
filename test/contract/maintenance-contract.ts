/**
 * The maintenance half of the Backend contract (the leader's sweeps and the reclaim feed), run
 * unchanged against both backends. Time passes through the harness's `timeTravel`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { ClaimedJob } from '../../src/backend/types.js';
import type { LeaderFence, LeaderSession } from '../../src/backend/worker-types.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { LeadershipLostError } from '../../src/errors/leadership-errors.js';
import { budgeted, plain } from '../helpers/actors.js';
import type { ContractHarness } from './backend-contract.js';

const W1 = '018f0000-0000-7000-8000-00000000b001';
const LEADER_A = '018f0000-0000-7000-8000-00000000c00a';
const LEADER_B = '018f0000-0000-7000-8000-00000000c00b';
const LEASE = 10_000;
const W2 = '018f0000-0000-7000-8000-00000000b002';
const once = actor({ name: 'once', retry: { kind: 'nonRetryable' } }, async () => undefined);
const twice = actor({ name: 'twice', retry: { maxAttempts: 1 } }, async () => undefined);
const ACTORS = ['plain', 'once', 'twice', 'budgeted'].map((name) => ({ name, maxConcurrent: null }));
const DAY = 86_400_000;
const retention = {
  succeededMs: DAY,
  failedMs: 2 * DAY,
  cancelledMs: DAY,
  abandonedMs: 2 * DAY,
  archiveMs: 10 * DAY,
};

export function defineMaintenanceContract(name: string, makeHarness: () => Promise<ContractHarness>): void {
  describe(`Backend maintenance contract: ${name}`, () => {
    let h: ContractHarness;
    let client: TaskQ;

    beforeAll(async () => {
      h = await makeHarness();
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(async () => {
      await h.reset();
      client = new TaskQ(h.backend, { capacityCacheTtl: 0 });
    });

    const claim = (leaseMs = 1000, startNow?: number): Promise<ClaimedJob[]> =>
      h.backend.dispatchBatch({
        workerId: W1,
        queues: ['default'],
        actors: ACTORS,
        limit: 100,
        leaseMs,
        oversample: 2,
        ...(startNow === undefined ? {} : { startNow }),
      });

    describe('reclaimExpiredLocks', () => {
      it('sends a job with attempts left back to pending and records the crash', async () => {
        const job = await client.enqueue(plain, { n: 1 });
        await claim();
        expect(await h.backend.reclaimExpiredLocks(30_000, 10_000)).toEqual({ reclaimed: 0, retried: 0 });
        await h.timeTravel(2000);
        expect(await h.backend.reclaimExpiredLocks(30_000, 10_000)).toEqual({ reclaimed: 1, retried: 1 });
        expect(await h.backend.get(job.jobId)).toMatchObject({
          status: 'pending',
          attempt: 1,
          lockedByWorker: null,
          errorClass: 'WorkerCrashed',
        });
        expect((await h.backend.getAttempts(job.jobId))[0]).toMatchObject({
          attempt: 1,
          outcome: 'crashed',
          workerId: W1,
        });
        expect((await h.backend.getEvents(job.jobId)).at(-1)?.detail).toMatchObject({
          from_state: 'running',
          to_state: 'pending',
          reason: 'lock_expired',
          worker_id: W1,
        });
        expect((await claim()).map((r) => r.attempt)).toEqual([2]);
      });

      it('crashes a job with no attempts left, and a nonRetryable one', async () => {
        const a = await client.enqueue(twice, {});
        const b = await client.enqueue(once, {});
        await claim();
        await h.timeTravel(2000);
        expect(await h.backend.reclaimExpiredLocks(0, 0)).toEqual({ reclaimed: 2, retried: 0 });
        expect((await h.backend.get(a.jobId))?.status).toBe('crashed');
        expect((await h.backend.get(b.jobId))?.status).toBe('crashed');
        expect((await h.backend.get(a.jobId))?.finishedAt).not.toBeNull();
      });

      it('gives a job being cancelled extra headroom, then ends it cancelled (attempt outcome crashed)', async () => {
        const a = await client.enqueue(twice, {});
        await claim();
        await h.backend.writeCancelRequest(a.jobId, 'stop');
        await h.timeTravel(2000);
        expect((await h.backend.reclaimExpiredLocks(1000, 1000)).reclaimed).toBe(0);
        await h.timeTravel(62_500);
        expect((await h.backend.reclaimExpiredLocks(1000, 1000)).reclaimed).toBe(1);
        expect((await h.backend.get(a.jobId))?.status).toBe('cancelled');
        expect((await h.backend.getAttempts(a.jobId))[0]?.outcome).toBe('crashed');
      });

      it('ends a job whose cancel was requested cancelled, whatever attempts remain (issue 62)', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        await h.backend.writeCancelRequest(a.jobId, null);
        await h.timeTravel(64_000);
        expect(await h.backend.reclaimExpiredLocks(1000, 1000)).toEqual({ reclaimed: 1, retried: 0 });
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'cancelled',
          attempt: 1,
          lockedByWorker: null,
          errorClass: 'WorkerCrashed',
        });
        expect((await h.backend.get(a.jobId))?.finishedAt).not.toBeNull();
        expect((await h.backend.getAttempts(a.jobId)).map((x) => [x.attempt, x.outcome])).toEqual([
          [1, 'crashed'],
        ]);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          from_state: 'running',
          to_state: 'cancelled',
          reason: 'lock_expired',
          worker_id: W1,
          attempt: 1,
        });
        // Nothing is claimable: the handler never runs again.
        expect(await claim()).toEqual([]);
      });

      // A declared maxConcurrent sends the Postgres claim through the full statement, none through the lean one.
      for (const [path, maxConcurrent] of [
        ['lean', null],
        ['full', 10],
      ] as const)
        it(`records the first startNow claimed jobs as started, the others when markStarted says so (${path} claim)`, async () => {
          const jobs: { jobId: string }[] = [];
          for (let n = 1; n <= 3; n++) jobs.push(await client.enqueue(plain, { n }));
          const rows = await h.backend.dispatchBatch({
            workerId: W1,
            queues: ['default'],
            actors: [{ name: 'plain', maxConcurrent }],
            limit: 100,
            leaseMs: 1000,
            oversample: 2,
            startNow: 1,
          });
          expect(rows.map((r) => r.id)).toEqual(jobs.map((j) => j.jobId));
          const started = async () =>
            Promise.all(jobs.map(async (j) => (await h.backend.get(j.jobId))?.startedAt !== null));
          expect(await started()).toEqual([true, false, false]);
          expect(await h.backend.markStarted(W2, [jobs[1]!.jobId])).toEqual([]);
          expect(await h.backend.markStarted(W1, [jobs[1]!.jobId])).toEqual([jobs[1]!.jobId]);
          expect(await started()).toEqual([true, true, false]);
        });

      it('gives a job whose handler never started its attempt back, with no attempt row (issue 62)', async () => {
        const a = await client.enqueue(twice, {});
        const b = await client.enqueue(twice, {});
        const c = await client.enqueue(twice, {});
        await claim(1000, 1);
        await h.backend.markStarted(W1, [b.jobId]);
        await h.timeTravel(2000);
        expect(await h.backend.reclaimExpiredLocks(1000, 1000)).toEqual({ reclaimed: 3, retried: 1 });
        expect((await h.backend.get(a.jobId))?.status).toBe('crashed');
        expect((await h.backend.get(b.jobId))?.status).toBe('crashed');
        expect(await h.backend.get(c.jobId)).toMatchObject({
          status: 'pending',
          attempt: 0,
          startedAt: null,
          lockedByWorker: null,
          errorClass: null,
          finishedAt: null,
        });
        expect(await h.backend.getAttempts(c.jobId)).toEqual([]);
        expect((await h.backend.getEvents(c.jobId)).at(-1)?.detail).toMatchObject({
          from_state: 'running',
          to_state: 'pending',
          reason: 'lock_expired',
          worker_id: W1,
          handler_started: false,
        });
        // Its whole budget is left: the next claim is its first attempt.
        expect((await claim()).map((r) => [r.id, r.attempt])).toEqual([[c.jobId, 1]]);
      });

      it('ends an unstarted job whose cancel was requested cancelled, its attempt given back', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim(1000, 0);
        await h.backend.writeCancelRequest(a.jobId, null);
        await h.timeTravel(64_000);
        expect(await h.backend.reclaimExpiredLocks(1000, 1000)).toEqual({ reclaimed: 1, retried: 0 });
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'cancelled',
          attempt: 0,
          errorClass: 'CancelRequested',
        });
        expect(await h.backend.getAttempts(a.jobId)).toEqual([]);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          to_state: 'cancelled',
          reason: 'lock_expired',
          handler_started: false,
        });
      });
    });

    describe('the reclaim feed', () => {
      it('returns lock_expired events after the cursor once they clear the visibility delay', async () => {
        const jobs = await Promise.all([1, 2, 3].map((n) => client.enqueue(plain, { n })));
        await claim();
        await h.timeTravel(2000);
        await h.backend.reclaimExpiredLocks(0, 0);
        expect(await h.backend.pollReclaimEvents('0', { visibilityDelayMs: 2000 })).toEqual([]);
        await h.timeTravel(2500);
        const all = await h.backend.pollReclaimEvents('0', { visibilityDelayMs: 2000 });
        expect(all.map((e) => e.jobId).sort()).toEqual(jobs.map((j) => j.jobId).sort());
        expect(all.every((e) => e.detail.reason === 'lock_expired')).toBe(true);
        const ids = all.map((e) => BigInt(e.eventId));
        expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
        const page = await h.backend.pollReclaimEvents('0', { visibilityDelayMs: 2000, limit: 2 });
        expect(page).toHaveLength(2);
        const rest = await h.backend.pollReclaimEvents(page[1]!.eventId, { visibilityDelayMs: 2000 });
        expect(rest.map((e) => e.eventId)).toEqual([all[2]!.eventId]);
        await expect(h.backend.pollReclaimEvents('-1')).rejects.toThrow(/afterId/);
      });
    });

    describe('other sweeps', () => {
      it('fails pending and scheduled jobs past their deadline', async () => {
        const a = await client.enqueue(budgeted, {});
        const b = await client.enqueue(budgeted, {}, { delay: '30m' });
        const c = await client.enqueue(plain, { n: 1 });
        expect(await h.backend.deadlineSweep()).toBe(0);
        await h.timeTravel(2 * 3_600_000);
        expect(await h.backend.deadlineSweep()).toBe(2);
        for (const id of [a.jobId, b.jobId]) {
          expect(await h.backend.get(id)).toMatchObject({ status: 'failed', errorClass: 'DeadlineExceeded' });
          expect((await h.backend.getEvents(id)).at(-1)?.detail).toMatchObject({
            to_state: 'failed',
            reason: 'deadline_exceeded',
          });
        }
        expect((await h.backend.get(c.jobId))?.status).toBe('pending');
      });

      it('leaves a running job past its deadline alone (its next retry is refused instead)', async () => {
        const a = await client.enqueue(budgeted, {});
        expect((await claim()).map((r) => r.id)).toEqual([a.jobId]);
        const eventsBefore = (await h.backend.getEvents(a.jobId)).length;
        await h.timeTravel(2 * 3_600_000);
        expect(await h.backend.deadlineSweep()).toBe(0);
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'running',
          lockedByWorker: W1,
          errorClass: null,
          finishedAt: null,
        });
        expect(await h.backend.getEvents(a.jobId)).toHaveLength(eventsBefore);
      });

      it('promotes due scheduled jobs and reports when the next one is due', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { delay: '10s' });
        await client.enqueue(plain, { n: 2 }, { delay: '60s' });
        const first = await h.backend.scheduledToPending();
        expect(first.promoted).toBe(0);
        expect(first.nextDueInMs).toBeGreaterThan(8000);
        expect(first.nextDueInMs).toBeLessThanOrEqual(10_000);
        await h.timeTravel(11_000);
        const second = await h.backend.scheduledToPending();
        expect(second.promoted).toBe(1);
        expect(second.nextDueInMs).toBeGreaterThan(40_000);
        expect((await h.backend.get(a.jobId))?.status).toBe('pending');
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          from_state: 'scheduled',
          to_state: 'pending',
        });
      });

      it('drops expired results', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        await h.backend.settle([
          {
            kind: 'succeeded',
            jobId: a.jobId,
            workerId: W1,
            handlerStartedAt: null,
            durationMs: 1,
            resultJson: '{"x":1}',
            resultSizeBytes: 7,
            fallbackResultTtlMs: 60_000,
          },
        ]);
        expect(await h.backend.sweepExpiredResults()).toBe(0);
        await h.timeTravel(61_000);
        expect(await h.backend.sweepExpiredResults()).toBe(1);
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'succeeded',
          result: null,
          resultSizeBytes: null,
        });
      });

      it('names actors whose jobs no worker registered', async () => {
        await client.enqueue(plain, { n: 1 });
        await client.enqueue(plain, { n: 2 }, { delay: '1h' });
        await h.backend.syncActorConfig([{ actor: 'once', queue: 'default', metadata: {} }], {
          force: false,
        });
        await client.enqueue(once, {});
        expect(await h.backend.strandedActors()).toEqual([{ actor: 'plain', jobs: 2 }]);
      });

      it('removes workers not seen recently', async () => {
        await h.backend.registerWorker({
          workerId: W1,
          hostname: 'h',
          pid: 1,
          label: null,
          queues: ['default'],
          maxConcurrency: 1,
          version: 'x',
        });
        expect(await h.backend.cleanupStaleWorkers(60_000)).toBe(0);
        await h.timeTravel(61_000);
        expect(await h.backend.cleanupStaleWorkers(60_000)).toBe(1);
      });
    });

    describe('the leader lease', () => {
      const sessions: LeaderSession[] = [];
      const open = async (workerId: string, leaseMs = LEASE): Promise<LeaderSession> => {
        const s = await h.backend.openLeaderSession(workerId, `host-${workerId.slice(-1)}`, { leaseMs });
        sessions.push(s);
        return s;
      };
      const closeAll = async (): Promise<void> => {
        for (const s of sessions.splice(0)) await s.close();
      };

      it('is held by one worker at a time and keeps its term while renewed', async () => {
        try {
          const a = await open(LEADER_A);
          const b = await open(LEADER_B);
          expect(await a.tryAcquire()).toBe(true);
          const term = a.fence!.term;
          expect(a.fence).toEqual({ workerId: LEADER_A, term });
          expect(await b.tryAcquire()).toBe(false);
          expect(b.fence).toBeNull();
          await h.timeTravel(LEASE / 2);
          expect(await a.tryAcquire()).toBe(true);
          // Past the first expiry, inside the renewed one.
          await h.timeTravel(LEASE / 2 + 1000);
          expect(await b.tryAcquire()).toBe(false);
          expect(await a.tryAcquire()).toBe(true);
          expect(a.fence?.term).toBe(term);
          expect(await h.backend.getLeaderLease()).toMatchObject({
            workerId: LEADER_A,
            hostname: 'host-a',
            term,
            valid: true,
          });
        } finally {
          await closeAll();
        }
      });

      it('expires on the backend clock: another worker takes over with a greater term, the old renewal is refused', async () => {
        try {
          const a = await open(LEADER_A);
          const b = await open(LEADER_B);
          expect(await a.tryAcquire()).toBe(true);
          const old = a.fence!;
          await h.timeTravel(LEASE + 1000);
          expect((await h.backend.getLeaderLease())?.valid).toBe(false);
          expect(await b.tryAcquire()).toBe(true);
          expect(BigInt(b.fence!.term)).toBeGreaterThan(BigInt(old.term));
          expect(await a.tryAcquire()).toBe(false);
          expect(a.fence).toBeNull();
          expect(await h.backend.getLeaderLease()).toMatchObject({
            workerId: LEADER_B,
            term: b.fence!.term,
            valid: true,
          });
        } finally {
          await closeAll();
        }
      });

      it('refuses every sweep of a stale term and writes nothing; the current term sweeps', async () => {
        try {
          const a = await open(LEADER_A);
          const b = await open(LEADER_B);
          expect(await a.tryAcquire()).toBe(true);
          const stale: LeaderFence = a.fence!;
          const job = await client.enqueue(plain, { n: 1 });
          const due = await client.enqueue(budgeted, {}, { delay: '1s' });
          await claim();
          await h.timeTravel(LEASE + 1000);
          expect(await b.tryAcquire()).toBe(true);
          const current = b.fence!;

          const refusals: (() => Promise<unknown>)[] = [
            () => h.backend.reclaimExpiredLocks(0, 0, 100, stale),
            () => h.backend.scheduledToPending(100, stale),
            () => h.backend.deadlineSweep(100, stale),
            () => h.backend.sweepExpiredResults(100, stale),
            () => h.backend.cleanupStaleWorkers(1, stale),
            () => h.backend.pruneJobs(retention, 100, stale),
            () => h.backend.expireArchive(100, stale),
          ];
          for (const sweep of refusals) {
            const err = await sweep().then(
              () => null,
              (e: unknown) => e,
            );
            expect(err).toBeInstanceOf(LeadershipLostError);
            expect(err).toMatchObject({
              code: 'TASKQ_LEADERSHIP_LOST',
              workerId: LEADER_A,
              term: stale.term,
            });
          }
          expect(await h.backend.get(job.jobId)).toMatchObject({ status: 'running', lockedByWorker: W1 });
          expect((await h.backend.get(due.jobId))?.status).toBe('scheduled');
          expect(await h.backend.getAttempts(job.jobId)).toEqual([]);

          expect(await h.backend.reclaimExpiredLocks(0, 0, 100, current)).toEqual({
            reclaimed: 1,
            retried: 1,
          });
          expect((await h.backend.scheduledToPending(100, current)).promoted).toBe(1);
          expect(
            (await h.backend.getEvents(job.jobId)).filter((e) => e.detail.reason === 'lock_expired'),
          ).toHaveLength(1);
        } finally {
          await closeAll();
        }
      });

      it('a released lease is free at once, and a closed session gives its lease up', async () => {
        try {
          const a = await open(LEADER_A);
          const b = await open(LEADER_B);
          expect(await a.tryAcquire()).toBe(true);
          const first = a.fence!;
          await a.release();
          expect(a.fence).toBeNull();
          expect(await b.tryAcquire()).toBe(true);
          expect(BigInt(b.fence!.term)).toBe(BigInt(first.term) + 1n);
          await expect(h.backend.deadlineSweep(100, first)).rejects.toBeInstanceOf(LeadershipLostError);
          await b.close();
          expect(await a.tryAcquire()).toBe(true);
          expect(BigInt(a.fence!.term)).toBe(BigInt(first.term) + 2n);
        } finally {
          await closeAll();
        }
      });

      it('refuses a lease duration that is not a positive whole number of milliseconds', async () => {
        for (const leaseMs of [0, -1, 1.5, Number.NaN]) {
          const err = await h.backend.openLeaderSession(LEADER_A, 'h', { leaseMs }).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(InvalidArgumentError);
          expect(err).toMatchObject({ field: 'openLeaderSession.leaseMs' });
        }
      });
    });

    describe('prune and archive expiry', () => {
      it('moves terminal jobs past their retention (with attempts) to the archive in bounded batches', async () => {
        const done = await Promise.all(
          [1, 2, 3].map((n) => client.enqueue(plain, { n }, { idempotencyKey: `k${n}` })),
        );
        await claim();
        await h.backend.settle(
          done.map((d) => ({
            kind: 'succeeded' as const,
            jobId: d.jobId,
            workerId: W1,
            handlerStartedAt: null,
            durationMs: 1,
            resultJson: null,
            resultSizeBytes: null,
            fallbackResultTtlMs: null,
          })),
        );
        const failed = await client.enqueue(plain, { n: 9 });
        await client.cancel(failed.jobId);
        const active = await client.enqueue(plain, { n: 10 }, { delay: '1d' });
        await h.timeTravel(DAY / 2);
        expect(await h.backend.pruneJobs(retention, 100)).toEqual({ archived: 0, attempts: 0 });
        await h.timeTravel(DAY);
        expect(await h.backend.pruneJobs(retention, 2)).toEqual({ archived: 2, attempts: 2 });
        expect(await h.backend.pruneJobs(retention, 2)).toEqual({ archived: 2, attempts: 1 });
        expect(await h.backend.pruneJobs(retention, 2)).toEqual({ archived: 0, attempts: 0 });
        for (const d of [...done, failed]) expect(await h.backend.get(d.jobId)).toBeNull();
        expect(await h.backend.get(active.jobId)).not.toBeNull();
        // Idempotency keys are free once the row left jobs.
        const again = await client.enqueue(plain, { n: 1 }, { idempotencyKey: 'k1' });
        expect(again.wasExisting).toBe(false);
        await h.timeTravel(9 * DAY);
        expect(await h.backend.expireArchive(100)).toBe(0);
        await h.timeTravel(2 * DAY);
        expect(await h.backend.expireArchive(3)).toBe(3);
        expect(await h.backend.expireArchive(3)).toBe(1);
      });

      it('getArchivedJob reads an archived job with its attempts, and only the archive', async () => {
        const d = await client.enqueue(plain, { n: 1 }, { tags: ['t1'] });
        expect(await h.backend.getArchivedJob(d.jobId)).toBeNull();
        await claim();
        await h.backend.settle([
          {
            kind: 'succeeded' as const,
            jobId: d.jobId,
            workerId: W1,
            handlerStartedAt: null,
            durationMs: 1,
            resultJson: null,
            resultSizeBytes: null,
            fallbackResultTtlMs: null,
          },
        ]);
        await h.timeTravel(2 * DAY);
        // Read after the time travel (on Postgres it moves the rows' times back).
        const live = await h.backend.get(d.jobId);
        const attempts = await h.backend.getAttempts(d.jobId);
        expect(attempts).toHaveLength(1);
        const before = (await h.backend.dueSchedules(1)).now;
        expect(await h.backend.pruneJobs(retention, 100)).toMatchObject({ archived: 1 });
        const after = (await h.backend.dueSchedules(1)).now;
        const a = await h.backend.getArchivedJob(d.jobId);
        expect(a).not.toBeNull();
        expect(a!.job).toEqual(live);
        expect(a!.attempts).toEqual(attempts);
        expect(a!.archivedAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(a!.archivedAt.getTime()).toBeLessThanOrEqual(after.getTime());
        // Two readings of the database clock in one statement: equal to the millisecond, or nearly.
        expect(Math.abs(a!.expireAt.getTime() - a!.archivedAt.getTime() - retention.archiveMs)).toBeLessThan(
          50,
        );
        expect(await h.backend.get(d.jobId)).toBeNull();
        await h.timeTravel(11 * DAY);
        expect(await h.backend.expireArchive(100)).toBe(1);
        expect(await h.backend.getArchivedJob(d.jobId)).toBeNull();
      });
    });
  });
}
