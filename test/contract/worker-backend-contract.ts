/**
 * The worker-facing half of the Backend contract (claiming, renewing, settling, notifications),
 * run unchanged against both backends.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { newJobId } from '../../src/core/ids.js';
import type { ClaimedJob } from '../../src/backend/types.js';
import { plain, sendEmail } from '../helpers/actors.js';
import { waitFor } from '../helpers/wait.js';
import type { ContractHarness } from './backend-contract.js';
import { defineSettleContract } from './settle-contract.js';
import { defineSubJobEnqueuerContract } from './sub-job-enqueuer-contract.js';
import { defineSubJobSettleContract } from './sub-job-settle-contract.js';
import { ACTORS, QUEUES, W1, W2, type WorkerContractContext } from './worker-contract-context.js';
import { normalizeJobFilter } from '../../src/backend/job-filter.js';

export function defineWorkerBackendContract(name: string, makeHarness: () => Promise<ContractHarness>): void {
  describe(`Backend worker contract: ${name}`, () => {
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

    const claim = (limit = 10, actors = ACTORS, workerId = W1, queues = QUEUES): Promise<ClaimedJob[]> =>
      h.backend.dispatchBatch({ workerId, queues, actors, limit, leaseMs: 60_000, oversample: 2 });
    const base = { workerId: W1, handlerStartedAt: null, durationMs: 3 };
    // For the parts of the contract in files of their own; `h` and `client` change per test.
    const context: WorkerContractContext = {
      get h() {
        return h;
      },
      get client() {
        return client;
      },
      claim,
      base,
    };

    describe('ping', () => {
      it('answers while the backend is open, concurrent pings included', async () => {
        await expect(h.backend.ping()).resolves.toBeUndefined();
        await expect(Promise.all([h.backend.ping(), h.backend.ping(), h.backend.ping()])).resolves.toEqual([
          undefined,
          undefined,
          undefined,
        ]);
      });
    });

    describe('dispatchBatch', () => {
      it('claims pending jobs of the given actors and queues, sets the lease and writes the event', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await client.enqueue(plain, { n: 2 }, { queue: 'elsewhere' });
        await client.enqueue(plain, { n: 3 }, { delay: '1h' });
        const other = await client.enqueue(sendEmail, { to: 'x@example.com' });
        const rows = await claim(10, [{ name: 'plain', maxConcurrent: null }]);
        expect(rows.map((r) => r.id)).toEqual([a.jobId]);
        expect(rows[0]).toMatchObject({ id: a.jobId, actor: 'plain', attempt: 1, payload: { n: 1 } });
        const row = (await h.backend.get(a.jobId))!;
        expect(row).toMatchObject({ status: 'running', attempt: 1, lockedByWorker: W1 });
        expect(row.lockExpiresAt!.getTime() - row.startedAt!.getTime()).toBe(60_000);
        expect((await h.backend.get(other.jobId))?.status).toBe('pending');
        const events = await h.backend.getEvents(a.jobId);
        expect(events.at(-1)).toMatchObject({
          kind: 'state_change',
          detail: {
            from_state: 'pending',
            to_state: 'running',
            reason: 'dispatched',
            worker_id: W1,
            attempt: 1,
          },
        });
        expect(await claim()).toHaveLength(1); // only send_email is left
      });

      it("returns each job's stored trace context with the claim (its span links to it; its logs carry the trace id)", async () => {
        const ids = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
        const traced = await client.enqueue(plain, { n: 1 }, ids);
        const bare = await client.enqueue(plain, { n: 2 });
        const rows = await claim(10, [{ name: 'plain', maxConcurrent: null }]);
        const byId = new Map(rows.map((r) => [r.id, r]));
        expect(byId.get(traced.jobId)).toMatchObject(ids);
        // No SDK registered in the contract run: the send span has no ids to store.
        expect(byId.get(bare.jobId)).toMatchObject({ traceId: null, spanId: null });
      });

      it('honours the limit and strict FIFO order: priority, then time, then id', async () => {
        const batch = await client.enqueueBatch([
          { actor: plain, payload: { n: 1 } },
          { actor: plain, payload: { n: 2 }, options: { priority: 5 } },
          { actor: plain, payload: { n: 3 } },
          { actor: plain, payload: { n: 4 }, options: { priority: 5 } },
        ]);
        const ids = batch.jobHandles.map((x) => x.jobId);
        const first = await claim(3);
        expect(first.map((r) => r.id)).toEqual([ids[1], ids[3], ids[0]]);
        expect((await claim(3)).map((r) => r.id)).toEqual([ids[2]]);
        expect(await claim(3)).toEqual([]);
      });

      it('caps running jobs per actor with the literal or the stored maxConcurrent, and 0 drains', async () => {
        await client.enqueueBatch(Array.from({ length: 6 }, (_, n) => ({ actor: plain, payload: { n } })));
        const capped = [{ name: 'plain', maxConcurrent: 2 }];
        expect(await claim(10, capped)).toHaveLength(2);
        expect(await claim(10, capped)).toHaveLength(0);
        await h.setStoredMaxConcurrent('plain', 3);
        expect(await claim(10, capped)).toHaveLength(1);
        await h.setStoredMaxConcurrent('plain', 0);
        expect(await claim(10, [{ name: 'plain', maxConcurrent: null }])).toHaveLength(0);
      });

      it('runs at most one job per (actor, identityKey) at a time', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { identityKey: 'acct:1' });
        const b = await client.enqueue(plain, { n: 2 }, { identityKey: 'acct:1' });
        const c = await client.enqueue(plain, { n: 3 }, { identityKey: 'acct:2' });
        const first = await claim(10);
        expect(first.map((r) => r.id).sort()).toEqual([a.jobId, c.jobId].sort());
        expect(await claim(10)).toEqual([]);
        await h.backend.settle([
          {
            ...base,
            kind: 'succeeded',
            jobId: a.jobId,
            resultJson: null,
            resultSizeBytes: null,
            fallbackResultTtlMs: null,
          },
        ]);
        expect((await claim(10)).map((r) => r.id)).toEqual([b.jobId]);
      });

      it('interleaves fairness keys on round-robin queues, and not on strict FIFO ones', async () => {
        const old = await client.enqueueBatch(
          Array.from({ length: 4 }, (_, n) => ({
            actor: plain,
            payload: { n },
            options: { fairnessKey: 'big' },
          })),
        );
        const newer = await client.enqueue(plain, { n: 9 }, { fairnessKey: 'small' });
        const strict = await claim(2);
        expect(strict.map((r) => r.id)).toEqual(old.jobHandles.slice(0, 2).map((x) => x.jobId));
        await h.reset();
        await h.setQueueMode('default', 'round_robin');
        const old2 = await client.enqueueBatch(
          Array.from({ length: 4 }, (_, n) => ({
            actor: plain,
            payload: { n },
            options: { fairnessKey: 'big' },
          })),
        );
        const newer2 = await client.enqueue(plain, { n: 9 }, { fairnessKey: 'small' });
        const rr = await claim(2);
        expect(rr.map((r) => r.id).sort()).toEqual([old2.jobHandles[0]!.jobId, newer2.jobId].sort());
        expect(newer.jobId).not.toBe(newer2.jobId);
      });

      it('round-robin: every key and the key-less group get their heads first, by priority, and all drain', async () => {
        await h.setQueueMode('default', 'round_robin');
        const keys = ['k1', 'k2', 'k3', 'k4', 'k5', null] as const;
        const byKey = new Map<string | null, string[]>();
        for (let n = 0; n < 4; n++) {
          for (const key of keys) {
            // k3 has a single job; k5's head is urgent.
            if (key === 'k3' && n > 0) continue;
            const priority = key === 'k5' && n === 0 ? 9 : 0;
            const job = await client.enqueue(
              plain,
              { n },
              { priority, ...(key === null ? {} : { fairnessKey: key }) },
            );
            byKey.set(key, [...(byKey.get(key) ?? []), job.jobId]);
          }
        }
        const heads = keys.map((k) => byKey.get(k)![0]!);
        const first = await claim(6);
        // One head per group, the urgent head first (the rest by time).
        expect(first.map((r) => r.id).sort()).toEqual([...heads].sort());
        expect(first[0]!.id).toBe(byKey.get('k5')![0]);
        // Second round: every group that still has jobs gives its next one before any third.
        const second = await claim(5);
        expect(second.map((r) => r.id).sort()).toEqual(
          keys
            .filter((k) => k !== 'k3')
            .map((k) => byKey.get(k)![1]!)
            .sort(),
        );
        let drained = first.length + second.length;
        for (let i = 0; i < 10 && drained < 21; i++) drained += (await claim(7)).length;
        expect(drained).toBe(21);
      });
    });

    describe('heartbeatJobs and repend', () => {
      it('renews only jobs the worker still owns', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        const row = await h.backend.get(a.jobId);
        const stranger = newJobId();
        expect(await h.backend.heartbeatJobs(W2, [a.jobId], 90_000)).toEqual([]);
        const renewed = await h.backend.heartbeatJobs(W1, [a.jobId, stranger], 90_000);
        expect(renewed).toEqual([a.jobId]);
        const after = await h.backend.get(a.jobId);
        expect(after!.lockExpiresAt!.getTime()).toBeGreaterThanOrEqual(row!.lockExpiresAt!.getTime());
      });

      it('repends claimed-but-unstarted jobs and gives the attempt back', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        expect(await h.backend.repend(W2, [a.jobId])).toBe(0);
        expect(await h.backend.repend(W1, [a.jobId])).toBe(1);
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'pending',
          attempt: 0,
          lockedByWorker: null,
        });
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          to_state: 'pending',
          reason: 'drained',
        });
        expect((await claim()).map((r) => r.attempt)).toEqual([1]);
      });

      it('ends a claimed-but-unstarted job whose cancel was requested cancelled, attempt given back', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        await h.backend.writeCancelRequest(a.jobId, 'stop');
        expect(await h.backend.repend(W1, [a.jobId])).toBe(1);
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'cancelled',
          attempt: 0,
          lockedByWorker: null,
          errorClass: 'CancelRequested',
        });
        expect(await h.backend.getAttempts(a.jobId)).toEqual([]);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          from_state: 'running',
          to_state: 'cancelled',
          reason: 'drained',
        });
        expect(await claim()).toEqual([]);
      });
    });

    defineSettleContract(context);
    defineSubJobSettleContract(context);
    defineSubJobEnqueuerContract(context);

    describe('cancelWhere', () => {
      it('cancels pending and scheduled matches at once and flags running ones, in one call', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { tags: ['bulk'] });
        const b = await client.enqueue(plain, { n: 2 }, { tags: ['bulk'], delay: '1h' });
        const c = await client.enqueue(plain, { n: 3 }, { tags: ['bulk'] });
        const other = await client.enqueue(plain, { n: 4 });
        await claim(1); // a (oldest) runs
        const result = await client.cancelWhere({ tags: ['bulk'] }, 'cleanup');
        expect(result.cancelRequestedIds).toEqual([a.jobId]);
        expect([...result.cancelledIds].sort()).toEqual([b.jobId, c.jobId].sort());
        expect(result).toMatchObject({ cancelledDirectly: 2, cancelRequested: 1, totalAffected: 3 });
        expect(await h.backend.get(a.jobId)).toMatchObject({ status: 'running', cancelPhase: 1 });
        expect((await h.backend.get(b.jobId))?.status).toBe('cancelled');
        expect((await h.backend.get(other.jobId))?.status).toBe('pending');
        expect((await h.backend.getEvents(a.jobId)).at(-1)).toMatchObject({
          kind: 'cancel_request',
          detail: { message: 'cleanup' },
        });
        const again = await client.cancelWhere({ tags: ['bulk'] });
        expect(again.totalAffected).toBe(0);
      });

      it('finds every job of a batch, whatever its status, and cancels or flags the active ones', async () => {
        const batch = await client.enqueueBatch([1, 2, 3, 4].map((n) => ({ actor: plain, payload: { n } })));
        const [done, running, waiting, alsoWaiting] = batch.jobHandles.map((j) => j.jobId);
        const other = await client.enqueueBatch([{ actor: plain, payload: { n: 5 } }]);
        expect((await claim(2)).map((r) => r.id)).toEqual([done, running]);
        await h.backend.settle([
          {
            ...base,
            kind: 'succeeded',
            jobId: done!,
            resultJson: null,
            resultSizeBytes: null,
            fallbackResultTtlMs: null,
          },
        ]);
        const statuses = async (filter: { status?: 'running' } = {}) =>
          Object.fromEntries(
            (await client.list({ batchId: batch.batchId, ...filter })).jobs.map((j) => [j.id, j.status]),
          );
        expect(await statuses()).toEqual({
          [done!]: 'succeeded',
          [running!]: 'running',
          [waiting!]: 'pending',
          [alsoWaiting!]: 'pending',
        });
        expect(await statuses({ status: 'running' })).toEqual({ [running!]: 'running' });
        const result = await client.cancelWhere({ batchId: batch.batchId });
        expect(result.cancelRequestedIds).toEqual([running]);
        expect([...result.cancelledIds].sort()).toEqual([waiting, alsoWaiting].sort());
        expect((await h.backend.get(other.jobHandles[0]!.jobId))?.status).toBe('pending');
      });

      it('refuses an empty filter unless allowed, and honours status and active', async () => {
        await client.enqueue(plain, { n: 1 });
        await expect(client.cancelWhere({})).rejects.toThrow(/needs at least one predicate/);
        await expect(client.cancelWhere({ orderBy: 'created_at_desc' })).rejects.toThrow(
          /needs at least one predicate/,
        );
        // A bulk cancel is not paginated: a limit would suggest otherwise, so it is refused.
        await expect(client.cancelWhere({ queue: 'default', limit: 5 })).rejects.toThrow(
          /is not accepted by cancelWhere/,
        );
        expect((await client.cancelWhere({ status: [] })).totalAffected).toBe(0);
        expect((await client.cancelWhere({}, null, { allowEmptyFilter: true })).cancelledDirectly).toBe(1);
        await expect(client.cancelWhere({ queue: 'x\u0000' })).rejects.toThrow(/NUL/);
      });

      it('previews with dryRun: the counts the real call returns, changing and writing nothing', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { tags: ['bulk'] });
        await client.enqueue(plain, { n: 2 }, { tags: ['bulk'], delay: '1h' });
        await client.enqueue(plain, { n: 3 }, { tags: ['bulk'] });
        await client.enqueue(plain, { n: 4 });
        await claim(1); // a (oldest) runs
        const events = (await h.backend.getEvents(a.jobId)).length;
        const preview = await client.cancelWhere({ tags: ['bulk'] }, 'cleanup', { dryRun: true });
        expect(preview).toEqual({ dryRun: true, cancelledDirectly: 2, cancelRequested: 1, totalAffected: 3 });
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'running',
          cancelPhase: 0,
          cancelRequestedAt: null,
        });
        expect((await h.backend.getEvents(a.jobId)).length).toBe(events);
        expect((await client.list({ tags: ['bulk'], status: ['pending', 'scheduled'] })).jobs).toHaveLength(
          2,
        );
        const real = await client.cancelWhere({ tags: ['bulk'] }, 'cleanup');
        expect(real).toMatchObject({ cancelledDirectly: 2, cancelRequested: 1, totalAffected: 3 });
        // The flagged running job is not counted again, as the real call would not change it.
        expect(await client.cancelWhere({ tags: ['bulk'] }, null, { dryRun: true })).toMatchObject({
          totalAffected: 0,
        });
        await expect(client.cancelWhere({}, null, { dryRun: true })).rejects.toThrow(
          /needs at least one predicate/,
        );
        expect(await client.cancelWhere({}, null, { dryRun: true, allowEmptyFilter: true })).toMatchObject({
          cancelledDirectly: 1,
          cancelRequested: 0,
        });
        expect(await h.backend.previewCancelWhere(normalizeJobFilter({ status: [] }, 'cancelWhere'))).toEqual(
          { cancelledDirectly: 0, cancelRequested: 0 },
        );
      });
    });

    describe('cancel phases, progress and heartbeat details', () => {
      it('reports cancel flags, escalates only from phase 1, and abandons only from phase 2', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        expect(await h.backend.pollCancelFlags(W1)).toEqual([]);
        expect(await h.backend.writeCancelEscalation(a.jobId, W1)).toBe(false);
        expect(await h.backend.markAbandoned(a.jobId, W1)).toBe(false);
        await h.backend.writeCancelRequest(a.jobId, null);
        expect(await h.backend.pollCancelFlags(W1)).toEqual([{ jobId: a.jobId, phase: 1 }]);
        expect(await h.backend.pollCancelFlags(W2)).toEqual([]);
        expect(await h.backend.writeCancelEscalation(a.jobId, W2)).toBe(false);
        expect(await h.backend.writeCancelEscalation(a.jobId, W1)).toBe(true);
        expect(await h.backend.writeCancelEscalation(a.jobId, W1)).toBe(false);
        expect(await h.backend.pollCancelFlags(W1)).toEqual([{ jobId: a.jobId, phase: 2 }]);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          reason: 'cancel_escalated',
          from_phase: 1,
          to_phase: 2,
        });
        expect(await h.backend.markAbandoned(a.jobId, W1, { seq: 3, state: { step: 'stuck' } })).toBe(true);
        expect(await h.backend.get(a.jobId)).toMatchObject({
          status: 'abandoned',
          errorClass: 'Abandoned',
          lockedByWorker: null,
          progressSeq: 3,
        });
        expect((await h.backend.getAttempts(a.jobId)).map((x) => x.outcome)).toEqual(['abandoned']);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          from_state: 'running',
          to_state: 'abandoned',
        });
        expect(await h.backend.markAbandoned(a.jobId, W1)).toBe(false);
      });

      it('escalates from phase 0 only for a shutdown, without recording a cancel request', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        expect(await h.backend.writeCancelEscalation(a.jobId, W2, 'shutdown')).toBe(false);
        expect(await h.backend.writeCancelEscalation(a.jobId, W1, 'shutdown')).toBe(true);
        expect(await h.backend.writeCancelEscalation(a.jobId, W1, 'shutdown')).toBe(false);
        expect(await h.backend.get(a.jobId)).toMatchObject({ cancelPhase: 2, cancelRequestedAt: null });
        // Not a caller's cancel: the heartbeat's cancel poll does not report it.
        expect(await h.backend.pollCancelFlags(W1)).toEqual([]);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          reason: 'shutdown_escalated',
          from_phase: 0,
          to_phase: 2,
        });
        expect(await h.backend.markAbandoned(a.jobId, W1, null, 'shutdown')).toBe(true);
        expect(await h.backend.get(a.jobId)).toMatchObject({ status: 'abandoned', errorClass: 'Abandoned' });
        expect((await h.backend.get(a.jobId))?.errorMessage).toMatch(/worker shut down/);
        expect((await h.backend.getEvents(a.jobId)).at(-1)?.detail).toMatchObject({
          to_state: 'abandoned',
          reason: 'shutdown_abandoned',
        });
      });

      it('flushes progress of owned running jobs and never moves seq backwards', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        expect(await h.backend.flushProgress(W1, [{ jobId: a.jobId, seq: 2, state: { percent: 20 } }])).toBe(
          1,
        );
        expect(await h.backend.flushProgress(W1, [{ jobId: a.jobId, seq: 1, state: { percent: 10 } }])).toBe(
          0,
        );
        expect(await h.backend.flushProgress(W2, [{ jobId: a.jobId, seq: 5, state: { percent: 50 } }])).toBe(
          0,
        );
        expect(await h.backend.get(a.jobId)).toMatchObject({
          progressSeq: 2,
          progressState: { percent: 20 },
        });
      });

      it('keeps the last heartbeat details for the next attempt', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await claim();
        await h.backend.heartbeatJobs(
          W1,
          [a.jobId],
          60_000,
          new Map([[a.jobId, JSON.stringify({ offset: 40 })]]),
        );
        expect((await h.backend.get(a.jobId))?.heartbeatDetails).toEqual({ offset: 40 });
        await h.backend.settle([
          {
            ...base,
            kind: 'failed',
            jobId: a.jobId,
            error: { errorClass: 'X', message: null, traceback: null },
            retryDelayMs: 0,
            heartbeatDetailsJson: JSON.stringify({ offset: 55 }),
          },
        ]);
        const [again] = await claim();
        expect(again?.heartbeatDetails).toEqual({ offset: 55 });
      });
    });

    describe('notifications', () => {
      it('delivers wake-ups, job-done announcements and cancels for the owning worker only', async () => {
        const wakes: number[] = [];
        const done: string[] = [];
        const cancels: [string, string][] = [];
        const otherCancels: string[] = [];
        const sub = await h.backend.subscribe(
          {
            onWake: () => wakes.push(1),
            onDone: (ids) => done.push(...(ids === '*' ? ['*'] : ids)),
            onCancel: (j, w) => cancels.push([j, w]),
          },
          { workerId: W1 },
        );
        const sub2 = await h.backend.subscribe({ onCancel: (j) => otherCancels.push(j) }, { workerId: W2 });
        try {
          const a = await client.enqueue(plain, { n: 1 });
          await waitFor(() => wakes.length > 0);
          await claim();
          await h.backend.writeCancelRequest(a.jobId, null);
          await waitFor(() => cancels.length > 0);
          expect(cancels[0]).toEqual([a.jobId, W1]);
          await h.backend.settle([{ ...base, kind: 'cancelled', jobId: a.jobId, error: null }]);
          await waitFor(() => done.includes(a.jobId));
          await sub.ping();
          expect(otherCancels).toEqual([]);
        } finally {
          await sub.close();
          await sub2.close();
        }
      });
    });

    describe('actor configuration', () => {
      it('creates rows, reports structural drift, and overwrites it only when forced', async () => {
        expect(
          await h.backend.syncActorConfig([{ actor: 'plain', queue: 'default', metadata: { v: 1 } }], {
            force: false,
          }),
        ).toEqual([]);
        await h.setStoredMaxConcurrent('plain', 7);
        const drift = await h.backend.syncActorConfig(
          [{ actor: 'plain', queue: 'other', metadata: { v: 2 } }],
          { force: false },
        );
        expect(drift.map((d) => d.field).sort()).toEqual(['metadata', 'queue']);
        expect((await h.backend.getActorConfigs(['plain']))[0]).toMatchObject({
          queue: 'default',
          metadata: { v: 1 },
          maxConcurrent: 7,
        });
        await h.backend.syncActorConfig([{ actor: 'plain', queue: 'other', metadata: { v: 2 } }], {
          force: true,
        });
        expect((await h.backend.getActorConfigs(['plain']))[0]).toMatchObject({
          queue: 'other',
          metadata: { v: 2 },
          maxConcurrent: 7,
        });
      });
    });
  });
}
