/**
 * `Backend.explainJob` through `tq.explain`, part of the Backend contract, run unchanged against
 * both backends: one case per reason (every reason exists on both). Time passes only through the
 * harness's `timeTravel`; times are checked against the backend's own stored times.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { ExplainReason, JobExplanation } from '../../src/client/job-explanation.js';
import type { WorkerRegistration } from '../../src/backend/worker-types.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { ReservationUnavailable } from '../../src/ratelimit/errors.js';
import { queueConcurrencyReservationName } from '../../src/ratelimit/names.js';
import type { ContractHarness } from './backend-contract.js';

const QUEUE = 'explain_q';
const ACTOR = 'explain_actor';
const work = actor({ name: ACTOR, queue: QUEUE }, async () => undefined);
const WORKER = '018f0000-0000-7000-8000-0000000e0001';
const HOUR = 3_600_000;

const registration: WorkerRegistration = {
  workerId: WORKER,
  hostname: 'explain-host',
  pid: 1,
  label: null,
  queues: [QUEUE],
  maxConcurrency: 4,
  version: 'test',
};

/** The reason of `kind` (the test fails when it is missing). */
function reason<K extends ExplainReason['kind']>(
  e: JobExplanation,
  kind: K,
): Extract<ExplainReason, { kind: K }> {
  const r = e.reasons.find((x) => x.kind === kind);
  expect(r, `${kind} in ${JSON.stringify(e.reasons.map((x) => x.kind))}`).toBeDefined();
  return r as Extract<ExplainReason, { kind: K }>;
}

const kinds = (e: JobExplanation): string[] => e.reasons.map((r) => r.kind);

export function defineExplainContract(name: string, makeHarness: () => Promise<ContractHarness>): void {
  describe(`Backend explain contract: ${name}`, () => {
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

    /** The actor registered (its actor_config row) and an alive worker serving its queue. */
    const fleet = async (): Promise<void> => {
      await h.backend.syncActorConfig([{ actor: ACTOR, queue: QUEUE, metadata: {} }], { force: false });
      await h.backend.registerWorker(registration);
    };

    const claim = (limit: number) =>
      h.backend.dispatchBatch({
        workerId: WORKER,
        queues: [QUEUE],
        actors: [{ name: ACTOR, maxConcurrent: null }],
        limit,
        leaseMs: HOUR,
        oversample: 2,
      });

    const explain = async (jobId: string): Promise<JobExplanation> => {
      const e = await client.explain(jobId);
      expect(e).not.toBeNull();
      return e!;
    };

    it('answers null for an unknown job and refuses an id that is not a UUID', async () => {
      expect(await client.explain('018f0000-0000-7000-8000-0000000e0fff')).toBeNull();
      await expect(client.explain('nope')).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(client.explain('nope')).rejects.toMatchObject({ field: 'jobId' });
    });

    it('ready: a due pending job with an alive worker and nothing ahead has no reason', async () => {
      await fleet();
      const job = await client.enqueue(work, {});
      const e = await explain(job.jobId);
      expect(e).toMatchObject({
        jobId: job.jobId,
        actor: ACTOR,
        queue: QUEUE,
        status: 'pending',
        verdict: 'ready',
        reasons: [],
        queueMode: 'strict_fifo',
      });
    });

    it('unregistered-actor and no-worker: nothing has ever served the actor or the queue', async () => {
      const job = await client.enqueue(work, {});
      const e = await explain(job.jobId);
      expect(e.verdict).toBe('waiting');
      expect(kinds(e)).toEqual(['unregistered-actor', 'no-worker']);
      expect(reason(e, 'unregistered-actor').actor).toBe(ACTOR);
      expect(reason(e, 'no-worker')).toMatchObject({ queue: QUEUE, lastSeenAt: null, aliveWithinMs: 60_000 });
    });

    it('no-worker: the workers serving the queue were last seen outside the alive window', async () => {
      await fleet();
      await h.timeTravel(2 * 60_000);
      const job = await client.enqueue(work, {});
      const e = await explain(job.jobId);
      expect(kinds(e)).toEqual(['no-worker']);
      const r = reason(e, 'no-worker');
      expect(r.lastSeenAt).not.toBeNull();
      expect(r.lastSeenAt!.getTime()).toBeLessThan(e.checkedAt.getTime() - 60_000);
      // A wider window counts the worker alive.
      expect((await client.explain(job.jobId, { workerAliveWithin: '1h' }))!.verdict).toBe('ready');
    });

    it('scheduled: its time is in the future on the backend clock', async () => {
      await fleet();
      const job = await client.enqueue(work, {}, { delay: '1h' });
      const e = await explain(job.jobId);
      expect(e.status).toBe('scheduled');
      expect(kinds(e)).toEqual(['scheduled']);
      const r = reason(e, 'scheduled');
      expect(r.scheduledAt.getTime()).toBe(job.row.scheduledAt.getTime());
      expect(r.dueInMs).toBe(r.scheduledAt.getTime() - e.checkedAt.getTime());
      expect(r.dueInMs).toBeGreaterThan(0);
      expect(r.dueInMs).toBeLessThanOrEqual(HOUR);
    });

    it('awaiting-promotion: due but still scheduled, with and without a maintenance leader', async () => {
      await fleet();
      const job = await client.enqueue(work, {}, { delay: '1h' });
      await h.timeTravel(2 * HOUR);
      await h.backend.touchWorker(WORKER);
      let e = await explain(job.jobId);
      expect(kinds(e)).toEqual(['awaiting-promotion']);
      expect(reason(e, 'awaiting-promotion')).toMatchObject({ leaderAlive: false });
      expect(reason(e, 'awaiting-promotion').overdueMs).toBeGreaterThanOrEqual(HOUR);

      const session = await h.backend.openLeaderSession(WORKER, 'explain-host');
      try {
        expect(await session.tryAcquire()).toBe(true);
        e = await explain(job.jobId);
        expect(reason(e, 'awaiting-promotion').leaderAlive).toBe(true);
      } finally {
        await session.close();
      }
    });

    it('disabled: the stored maxConcurrent is 0 (drained), first of the reasons', async () => {
      await fleet();
      await h.setStoredMaxConcurrent(ACTOR, 0);
      const job = await client.enqueue(work, {}, { delay: '1h' });
      const e = await explain(job.jobId);
      expect(kinds(e)).toEqual(['disabled', 'scheduled']);
      expect(reason(e, 'disabled').actor).toBe(ACTOR);
    });

    it("actor-max-concurrent: the actor's stored cap is in use, by which jobs", async () => {
      await fleet();
      await h.setStoredMaxConcurrent(ACTOR, 1);
      const first = await client.enqueue(work, {});
      const second = await client.enqueue(work, {});
      expect((await claim(2)).map((c) => c.id)).toEqual([first.jobId]);
      const e = await explain(second.jobId);
      expect(kinds(e)).toEqual(['actor-max-concurrent']);
      expect(reason(e, 'actor-max-concurrent')).toMatchObject({
        actor: ACTOR,
        maxConcurrent: 1,
        running: 1,
        runningJobIds: [first.jobId],
      });
    });

    it("queue-cap: the queue's max_concurrent is in use, by which jobs", async () => {
      await fleet();
      await h.backend.setQueueMaxConcurrent(QUEUE, 1);
      const first = await client.enqueue(work, {});
      const second = await client.enqueue(work, {});
      expect((await claim(1)).map((c) => c.id)).toEqual([first.jobId]);
      const e = await explain(second.jobId);
      expect(kinds(e)).toEqual(['queue-cap']);
      expect(reason(e, 'queue-cap')).toMatchObject({
        queue: QUEUE,
        maxConcurrent: 1,
        running: 1,
        runningJobIds: [first.jobId],
      });
    });

    it('identity-key: another job of the actor with the same key is running', async () => {
      await fleet();
      const first = await client.enqueue(work, {}, { identityKey: 'user:7' });
      const second = await client.enqueue(work, {}, { identityKey: 'user:7' });
      expect((await claim(2)).map((c) => c.id)).toEqual([first.jobId]);
      const e = await explain(second.jobId);
      expect(kinds(e)).toEqual(['identity-key']);
      expect(reason(e, 'identity-key')).toMatchObject({ identityKey: 'user:7', heldByJobId: first.jobId });
    });

    /** Claims the job and settles its attempt as refused by `err` (a reschedule, as the worker does). */
    const deny = async (jobId: string, err: ReservationUnavailable): Promise<void> => {
      expect((await claim(1)).map((c) => c.id)).toEqual([jobId]);
      const [res] = await h.backend.settle([
        {
          kind: 'reschedule',
          jobId,
          workerId: WORKER,
          handlerStartedAt: null,
          durationMs: null,
          delayMs: err.retryAfterMs,
          consumeBudget: false,
          outcome: err.source === 'reservation' ? 'reservation_denied' : 'rate_limit_denied',
          error: { errorClass: err.name, message: err.message, traceback: null },
        },
      ]);
      expect(res!.status).toBe('scheduled');
    };

    it('rate-limit: the last attempt was denied; which limit, and when it lifts', async () => {
      await fleet();
      const job = await client.enqueue(work, {});
      await deny(
        job.jobId,
        new ReservationUnavailable('stripe "calls"', 30 * 60_000, { source: 'rate_limit' }),
      );
      const row = (await h.backend.get(job.jobId))!;
      const e = await explain(job.jobId);
      // The denial explains the schedule: no separate `scheduled` reason.
      expect(kinds(e)).toEqual(['rate-limit']);
      const r = reason(e, 'rate-limit');
      expect(r.limit).toBe('stripe "calls"');
      expect(r.liftsAt.getTime()).toBe(row.scheduledAt.getTime());
      expect(r.deniedAt.getTime()).toBeLessThanOrEqual(r.liftsAt.getTime());
      const [attempt] = await h.backend.getAttempts(job.jobId);
      expect(r.deniedAt.getTime()).toBe(attempt!.finishedAt.getTime());
    });

    it('reservation: the last attempt found no free slot; the queue cap is told apart', async () => {
      await fleet();
      const a = await client.enqueue(work, {});
      await deny(a.jobId, new ReservationUnavailable('gpu', 30 * 60_000));
      let e = await explain(a.jobId);
      expect(kinds(e)).toEqual(['reservation']);
      expect(reason(e, 'reservation')).toMatchObject({ reservation: 'gpu', queueCap: false });
      expect(reason(e, 'reservation').liftsAt.getTime()).toBe(
        (await h.backend.get(a.jobId))!.scheduledAt.getTime(),
      );

      const b = await client.enqueue(work, {});
      await deny(b.jobId, new ReservationUnavailable(queueConcurrencyReservationName(QUEUE), 30 * 60_000));
      e = await explain(b.jobId);
      expect(reason(e, 'reservation')).toMatchObject({
        reservation: queueConcurrencyReservationName(QUEUE),
        queueCap: true,
      });
    });

    it('a denial that has lifted is no reason (the job is due and pending again)', async () => {
      await fleet();
      const job = await client.enqueue(work, {});
      await deny(job.jobId, new ReservationUnavailable('gpu', 60_000));
      await h.timeTravel(2 * 60_000);
      await h.backend.touchWorker(WORKER);
      await h.backend.scheduledToPending();
      const e = await explain(job.jobId);
      expect(e).toMatchObject({ status: 'pending', verdict: 'ready', reasons: [] });
    });

    it('fifo-head-of-line: due jobs of the actor ahead in strict FIFO order, nearest the head first', async () => {
      await fleet();
      const first = await client.enqueue(work, {});
      const second = await client.enqueue(work, {});
      const last = await client.enqueue(work, {});
      const urgent = await client.enqueue(work, {}, { priority: 5 });
      // Not due: not in line.
      await client.enqueue(work, {}, { delay: '1h' });
      const e = await explain(last.jobId);
      expect(kinds(e)).toEqual(['fifo-head-of-line']);
      expect(reason(e, 'fifo-head-of-line')).toMatchObject({
        queue: QUEUE,
        ahead: 3,
        aheadIsLowerBound: false,
        headJobIds: [urgent.jobId, first.jobId, second.jobId],
      });
      expect((await client.explain(urgent.jobId))!.verdict).toBe('ready');
      const bounded = await client.explain(last.jobId, { listLimit: 1 });
      expect(reason(bounded!, 'fifo-head-of-line')).toMatchObject({ ahead: 3, headJobIds: [urgent.jobId] });

      // Round-robin queues interleave keys: no strict line.
      await h.setQueueMode(QUEUE, 'round_robin');
      const rr = await explain(last.jobId);
      expect(rr).toMatchObject({ verdict: 'ready', reasons: [], queueMode: 'round_robin' });
    });

    it('fifo-head-of-line: a line longer than the count cap is a lower bound', async () => {
      await fleet();
      const items = Array.from({ length: 1000 }, () => ({ actor: work, payload: {} }));
      await client.enqueueBatch(items);
      await client.enqueueBatch(items.slice(0, 1));
      const last = await client.enqueue(work, {});
      const e = await explain(last.jobId);
      expect(reason(e, 'fifo-head-of-line')).toMatchObject({ ahead: 1000, aheadIsLowerBound: true });
      expect(reason(e, 'fifo-head-of-line').headJobIds).toHaveLength(10);
      expect(reason(e, 'fifo-head-of-line').message).toContain('1000+ due job(s)');
    });

    it('running: not waiting, on which worker since when', async () => {
      await fleet();
      const job = await client.enqueue(work, {});
      await claim(1);
      const row = (await h.backend.get(job.jobId))!;
      const e = await explain(job.jobId);
      expect(e).toMatchObject({ status: 'running', verdict: 'running' });
      expect(e.reasons).toHaveLength(1);
      expect(reason(e, 'running')).toMatchObject({
        workerId: WORKER,
        hostname: 'explain-host',
        workerAlive: true,
        cancelRequestedAt: null,
      });
      expect(reason(e, 'running').since!.getTime()).toBe(row.startedAt!.getTime());

      await h.backend.deregisterWorker(WORKER);
      expect(reason(await explain(job.jobId), 'running')).toMatchObject({
        workerAlive: null,
        hostname: null,
      });
    });

    it('terminal: not waiting, how it ended', async () => {
      const job = await client.enqueue(work, {});
      await client.cancel(job.jobId);
      const e = await explain(job.jobId);
      expect(e).toMatchObject({ status: 'cancelled', verdict: 'finished' });
      expect(e.reasons).toHaveLength(1);
      expect(reason(e, 'terminal')).toMatchObject({ status: 'cancelled' });
      expect(reason(e, 'terminal').finishedAt).not.toBeNull();
    });
  });
}
