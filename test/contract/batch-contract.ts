/**
 * The batch members of the Backend (`writeBatch` … `pruneBatches`) and the batch accounting every
 * status writer takes part in (settle, cancels, sweeps, abandonment, admin retry), run unchanged
 * against both backends. On Postgres the jobs trigger is the reference; the in-memory backend must
 * count exactly as it does.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { newJobId } from '../../src/core/ids.js';
import { TaskQ } from '../../src/client/taskq.js';
import { buildEnqueueArgs } from '../../src/client/enqueue-options.js';
import type { BatchRow, BatchWrite } from '../../src/backend/batch-types.js';
import { normalizeJobFilter } from '../../src/backend/job-filter.js';
import type { ClaimedJob, EnqueueArgs, JobStatus } from '../../src/backend/types.js';
import type { EnqueueOptions } from '../../src/client/enqueue-options.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import { BatchAbortedError, BatchNotOpenError } from '../../src/errors/batch-errors.js';
import { MaxPendingExceededError } from '../../src/errors/backpressure-errors.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { LeadershipLostError } from '../../src/errors/leadership-errors.js';
import type { ContractHarness } from './backend-contract.js';

/** What the batch contract needs beyond the common harness. */
export interface BatchContractHarness extends ContractHarness {
  /**
   * Puts a finished batch back to `active`, as if its last child's accounting had been lost: the
   * state `completeStaleBatches` repairs (no write path of either backend can reach it).
   */
  reopenBatch(batchId: string): Promise<void>;
}

const W1 = '018f0000-0000-7000-8000-00000000e001';
const LEADER = '018f0000-0000-7000-8000-00000000e00a';
const DAY = 86_400_000;
const kid = actor({ name: 'bc_child', retry: { kind: 'nonRetryable' } }, async () => undefined);
const fin = actor({ name: 'bc_final' }, async () => undefined);
const ACTORS = [kid.name, fin.name].map((name) => ({ name, maxConcurrent: null }));
const boom = { errorClass: 'Boom', message: 'boom', traceback: null };
const base = { workerId: W1, handlerStartedAt: null, durationMs: 2 };

/** A child of `batchId` (stamped with it, as the client stamps batch items). */
const childArgs = (
  batchId: string,
  o: EnqueueOptions = {},
  extra: Partial<EnqueueArgs> = {},
): EnqueueArgs => ({
  ...buildEnqueueArgs(kid, '{}', o, { maxPending: null, idempotencyMaxBytes: 1024, batchId }),
  ...extra,
});
const finalizerArgs = (): EnqueueArgs =>
  buildEnqueueArgs(fin, '{}', {}, { maxPending: null, idempotencyMaxBytes: 1024 });

export function defineBatchContract(name: string, makeHarness: () => Promise<BatchContractHarness>): void {
  describe(`Backend batch contract: ${name}`, () => {
    let h: BatchContractHarness;
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

    const claim = (limit = 100, leaseMs = 60_000, startNow?: number): Promise<ClaimedJob[]> =>
      h.backend.dispatchBatch({
        workerId: W1,
        queues: ['default'],
        actors: ACTORS,
        limit,
        leaseMs,
        oversample: 2,
        ...(startNow === undefined ? {} : { startNow }),
      });
    const ok = (jobId: string): Settlement => ({
      ...base,
      kind: 'succeeded',
      jobId,
      resultJson: null,
      resultSizeBytes: null,
      fallbackResultTtlMs: null,
    });
    const fail = (jobId: string): Settlement => ({
      ...base,
      kind: 'failed',
      jobId,
      retryDelayMs: null,
      error: boom,
    });
    const settle1 = async (s: Settlement): Promise<void> => {
      const [r] = await h.backend.settle([s]);
      expect(r?.status).not.toBe('noop');
    };

    /** Creates a batch of `n` children (sealed unless told), with `threshold`. */
    async function batchOf(
      n: number,
      o: { threshold?: number | null; seal?: boolean; finalizer?: boolean; options?: EnqueueOptions[] } = {},
    ): Promise<{ batchId: string; ids: string[]; batch: BatchRow; finalizerId: string | null }> {
      const batchId = newJobId();
      const children = Array.from({ length: n }, (_, i) => childArgs(batchId, o.options?.[i] ?? {}));
      const out = await h.backend.writeBatch({
        batchId,
        create: {
          queue: 'default',
          failureThreshold: o.threshold ?? null,
          finalizer: o.finalizer ? finalizerArgs() : null,
        },
        children,
        seal: o.seal ?? true,
      });
      return {
        batchId,
        ids: out.rows.map((r) => r.id),
        batch: out.batch,
        finalizerId: out.finalizer?.id ?? null,
      };
    }

    /** The batch row, which must exist. */
    const row = async (batchId: string): Promise<BatchRow> => {
      const b = await h.backend.getBatch(batchId);
      expect(b).not.toBeNull();
      return b!;
    };

    /** The row's counters equal the children's statuses in the jobs table. */
    async function expectCountersMatch(batchId: string, ids: readonly string[]): Promise<void> {
      const by: Record<string, number> = {};
      for (const id of ids) {
        const s = (await h.backend.get(id))!.status;
        by[s] = (by[s] ?? 0) + 1;
      }
      const n = (s: JobStatus): number => by[s] ?? 0;
      expect((await row(batchId)).counts).toEqual({
        total: ids.length,
        pending: n('pending') + n('scheduled') + n('running'),
        succeeded: n('succeeded'),
        failed: n('failed'),
        cancelled: n('cancelled'),
        crashed: n('crashed'),
        abandoned: n('abandoned'),
      });
    }

    describe('writeBatch', () => {
      it('creates the row, the finalizer and the children together; the finalizer is not a child', async () => {
        const { batchId, ids, batch, finalizerId } = await batchOf(3, { threshold: 2, finalizer: true });
        expect(ids).toHaveLength(3);
        expect(batch).toMatchObject({
          id: batchId,
          queue: 'default',
          status: 'active',
          expectedSize: 3,
          sealed: true,
          consecutiveFailures: 0,
          failureThreshold: 2,
          finalizerJobId: finalizerId,
          originatingActor: null,
          completedAt: null,
          counts: { total: 3, pending: 3, succeeded: 0, failed: 0, cancelled: 0, crashed: 0, abandoned: 0 },
        });
        expect(await h.backend.getBatch(batchId)).toEqual(batch);
        const f = (await h.backend.get(finalizerId!))!;
        expect(f).toMatchObject({ actor: 'bc_final', status: 'pending' });
        expect(f.metadata.batch_id).toBeUndefined();
        for (const id of ids) expect((await h.backend.get(id))!.metadata.batch_id).toBe(batchId);
        // The finalizer's outcome is not counted.
        const claimed = await claim();
        await settle1(ok(claimed.find((c) => c.id === finalizerId)!.id));
        await expectCountersMatch(batchId, ids);
        expect((await h.backend.batchCounts(batchId)).counts.total).toBe(3);
      });

      it('adds a later chunk to an open batch and seals it; a sealed or missing batch refuses, writing nothing', async () => {
        const { batchId, ids } = await batchOf(2, { seal: false });
        expect((await row(batchId)).sealed).toBe(false);
        const more = [childArgs(batchId), childArgs(batchId)];
        const out = await h.backend.writeBatch({ batchId, children: more, seal: false });
        expect(out.rows.map((r) => r.id)).toEqual(more.map((a) => a.id));
        expect(out.batch).toMatchObject({ expectedSize: 4, sealed: false, status: 'active' });
        const sealed = await h.backend.writeBatch({ batchId, children: [], seal: true });
        expect(sealed.batch).toMatchObject({ expectedSize: 4, sealed: true, status: 'active' });
        await expectCountersMatch(batchId, [...ids, ...more.map((a) => a.id)]);

        const late = childArgs(batchId);
        const err = await h.backend
          .writeBatch({ batchId, children: [late], seal: true })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BatchNotOpenError);
        expect(err).toMatchObject({ batchId, reason: 'sealed' });
        expect(await h.backend.get(late.id)).toBeNull();
        expect((await row(batchId)).expectedSize).toBe(4);

        const nowhere = newJobId();
        const orphan = childArgs(nowhere);
        await expect(
          h.backend.writeBatch({ batchId: nowhere, children: [orphan], seal: true }),
        ).rejects.toMatchObject({ reason: 'missing', batchId: nowhere });
        expect(await h.backend.get(orphan.id)).toBeNull();
        expect(await h.backend.getBatch(nowhere)).toBeNull();
      });

      it('refuses children for an aborted open batch, writing nothing; sealing it still works', async () => {
        const { batchId, ids } = await batchOf(1, { threshold: 1, seal: false });
        await claim(1);
        await settle1(fail(ids[0]!));
        expect((await row(batchId)).status).toBe('aborted');
        const late = childArgs(batchId);
        await expect(h.backend.writeBatch({ batchId, children: [late], seal: false })).rejects.toBeInstanceOf(
          BatchAbortedError,
        );
        expect(await h.backend.get(late.id)).toBeNull();
        const sealed = await h.backend.writeBatch({ batchId, children: [], seal: true });
        expect(sealed.batch).toMatchObject({ status: 'aborted', sealed: true, expectedSize: 1 });
      });

      it('writes nothing when a gate refuses: no row, no finalizer, no child', async () => {
        const batchId = newJobId();
        const capped = (): EnqueueArgs => childArgs(batchId, {}, { maxPending: 1 });
        const w: BatchWrite = {
          batchId,
          create: { queue: 'default', failureThreshold: 1, finalizer: finalizerArgs() },
          children: [capped(), capped()],
          seal: true,
        };
        await expect(h.backend.writeBatch(w)).rejects.toBeInstanceOf(MaxPendingExceededError);
        expect(await h.backend.getBatch(batchId)).toBeNull();
        expect(await h.backend.get(w.create!.finalizer!.id)).toBeNull();
        for (const c of w.children) expect(await h.backend.get(c.id)).toBeNull();
        expect((await h.backend.listBatches(batchFilter())).batches).toEqual([]);
      });

      it('does not count an idempotency hit on an existing job as a child', async () => {
        const existing = await client.enqueue(kid, {}, { idempotencyKey: 'k1' });
        const batchId = newJobId();
        const hit = childArgs(batchId, { idempotencyKey: 'k1' });
        const fresh = childArgs(batchId);
        const out = await h.backend.writeBatch({
          batchId,
          create: { queue: 'default', failureThreshold: null, finalizer: null },
          children: [hit, fresh],
          seal: true,
        });
        expect(out.rows.map((r) => r.id)).toEqual([existing.jobId, fresh.id]);
        expect(out.batch.expectedSize).toBe(1);
        // The existing job's outcome does not count toward the batch.
        const claimed = await claim();
        await settle1(ok(existing.jobId));
        expect((await row(batchId)).counts).toMatchObject({ total: 1, pending: 1, succeeded: 0 });
        await settle1(ok(claimed.find((c) => c.id === fresh.id)!.id));
        expect(await row(batchId)).toMatchObject({
          status: 'complete',
          counts: { succeeded: 1, pending: 0 },
        });
      });

      it("inside the caller's transaction: nothing visible until commit, nothing left after rollback", async () => {
        const tx = await h.begin();
        const batchId = newJobId();
        const kids = [childArgs(batchId), childArgs(batchId)];
        const out = await h.backend.writeBatch(
          {
            batchId,
            create: { queue: 'default', failureThreshold: 1, finalizer: null },
            children: kids,
            seal: true,
          },
          { connection: tx.conn },
        );
        expect(out.batch.expectedSize).toBe(2);
        expect(await h.backend.getBatch(batchId)).toBeNull();
        await tx.rollback();
        expect(await h.backend.getBatch(batchId)).toBeNull();
        expect(await h.backend.get(kids[0]!.id)).toBeNull();

        const tx2 = await h.begin();
        await h.backend.writeBatch(
          {
            batchId,
            create: { queue: 'default', failureThreshold: 1, finalizer: null },
            children: kids,
            seal: true,
          },
          { connection: tx2.conn },
        );
        await tx2.commit();
        expect(await row(batchId)).toMatchObject({ expectedSize: 2, sealed: true, status: 'active' });
        await claim();
        await settle1(fail(kids[0]!.id));
        expect(await row(batchId)).toMatchObject({ status: 'aborted', counts: { failed: 1 } });
      });
    });

    describe('accounting', () => {
      it('counts settled outcomes; a success resets the failure streak', async () => {
        const { batchId, ids } = await batchOf(5, { threshold: 3 });
        await claim();
        await settle1(fail(ids[0]!));
        await settle1(fail(ids[1]!));
        expect((await row(batchId)).consecutiveFailures).toBe(2);
        await settle1(ok(ids[2]!));
        expect((await row(batchId)).consecutiveFailures).toBe(0);
        await settle1(fail(ids[3]!));
        await settle1({ ...base, kind: 'cancelled', jobId: ids[4]!, error: null });
        expect(await row(batchId)).toMatchObject({
          status: 'complete',
          consecutiveFailures: 1,
          counts: { total: 5, pending: 0, succeeded: 1, failed: 3, cancelled: 1 },
        });
        expect((await row(batchId)).completedAt).not.toBeNull();
        await expectCountersMatch(batchId, ids);
      });

      it('aborts at the threshold: pending and scheduled children cancelled, running ones still counted', async () => {
        const { batchId, ids } = await batchOf(5, {
          threshold: 2,
          options: [{}, {}, {}, {}, { delay: '1h' }],
        });
        const running = (await claim(3)).map((c) => c.id);
        expect(running).toEqual(ids.slice(0, 3));
        await settle1(fail(ids[0]!));
        expect((await row(batchId)).status).toBe('active');
        await settle1(fail(ids[1]!));
        const aborted = await row(batchId);
        expect(aborted).toMatchObject({
          status: 'aborted',
          consecutiveFailures: 2,
          counts: { total: 5, pending: 1, failed: 2, cancelled: 2 },
        });
        expect(aborted.completedAt).not.toBeNull();
        for (const [id, from] of [
          [ids[3]!, 'pending'],
          [ids[4]!, 'scheduled'],
        ] as const) {
          const j = (await h.backend.get(id))!;
          expect(j).toMatchObject({
            status: 'cancelled',
            errorClass: 'BatchAborted',
            errorMessage: 'Batch aborted due to consecutive failures',
          });
          expect(j.finishedAt).not.toBeNull();
          expect(j.cancelRequestedAt).not.toBeNull();
          expect((await h.backend.getEvents(id)).at(-1)).toMatchObject({
            kind: 'state_change',
            detail: { from_state: from, to_state: 'cancelled', reason: 'batch_aborted', batch_id: batchId },
          });
        }
        expect((await h.backend.get(ids[2]!))!.status).toBe('running');
        await settle1(ok(ids[2]!));
        expect(await row(batchId)).toMatchObject({
          status: 'aborted',
          consecutiveFailures: 0,
          counts: { pending: 0, succeeded: 1, failed: 2, cancelled: 2 },
        });
        await expectCountersMatch(batchId, ids);
      });

      it('cancels children claimed but not started on abort, their attempt given back', async () => {
        const { batchId, ids } = await batchOf(3, { threshold: 1 });
        expect((await claim(1)).map((c) => c.id)).toEqual([ids[0]]);
        // Two more claimed into the local queue: running, not started.
        expect((await claim(2, 60_000, 0)).map((c) => c.id)).toEqual(ids.slice(1));
        await settle1(fail(ids[0]!));
        expect(await row(batchId)).toMatchObject({
          status: 'aborted',
          counts: { total: 3, pending: 0, failed: 1, cancelled: 2 },
        });
        for (const id of ids.slice(1)) {
          expect(await h.backend.get(id)).toMatchObject({
            status: 'cancelled',
            attempt: 0,
            lockedByWorker: null,
            errorClass: 'BatchAborted',
          });
        }
        expect(await h.backend.markStarted(W1, ids.slice(1))).toEqual([]);
        await expectCountersMatch(batchId, ids);
      });

      it('completes only once sealed, and at the seal when every child already ended', async () => {
        const { batchId, ids } = await batchOf(2, { seal: false });
        await claim();
        await settle1(ok(ids[0]!));
        await settle1(ok(ids[1]!));
        expect(await row(batchId)).toMatchObject({ status: 'active', counts: { pending: 0, succeeded: 2 } });
        const out = await h.backend.writeBatch({ batchId, children: [], seal: true });
        expect(out.batch).toMatchObject({ status: 'complete', sealed: true });
        expect(out.batch.completedAt).not.toBeNull();
        expect((await row(batchId)).status).toBe('complete');
      });

      it('counts cancels: a direct one, cancelWhere, and a running child once it settles', async () => {
        const { batchId, ids } = await batchOf(4);
        const [first] = await claim(1);
        expect(first!.id).toBe(ids[0]);
        expect(await h.backend.writeCancelRequest(ids[0]!, 'stop')).toBe(true);
        expect(await h.backend.writeCancelRequest(ids[1]!, 'stop')).toBe(true);
        expect((await row(batchId)).counts).toMatchObject({ cancelled: 1, pending: 3 });
        const res = await h.backend.cancelWhere(
          normalizeJobFilter({ actor: 'bc_child' }, 'cancelWhere'),
          'all',
        );
        expect(res).toMatchObject({ cancelledDirectly: 2, cancelRequested: 0 });
        expect((await row(batchId)).counts).toMatchObject({ cancelled: 3, pending: 1 });
        await settle1({ ...base, kind: 'cancelled', jobId: ids[0]!, error: null });
        expect(await row(batchId)).toMatchObject({
          status: 'complete',
          counts: { cancelled: 4, pending: 0 },
        });
        await expectCountersMatch(batchId, ids);
      });

      it('uncounts the children a bulk retry re-runs, reopening the batch', async () => {
        const { batchId, ids } = await batchOf(2);
        await claim();
        for (const id of ids) await settle1(fail(id));
        expect(await row(batchId)).toMatchObject({ status: 'complete', counts: { failed: 2 } });
        const res = await h.backend.retryWhere(normalizeJobFilter({ batchId }, 'retryWhere'));
        expect(res.retried).toBe(2);
        expect(await row(batchId)).toMatchObject({
          status: 'active',
          completedAt: null,
          counts: { failed: 0, pending: 2 },
        });
        await expectCountersMatch(batchId, ids);
      });

      it('uncounts a child an admin retry re-runs and reopens the complete batch', async () => {
        const { batchId, ids } = await batchOf(1);
        await claim();
        await settle1(fail(ids[0]!));
        expect(await row(batchId)).toMatchObject({ status: 'complete', counts: { failed: 1 } });
        expect(await h.backend.retryJob(ids[0]!)).toBe(true);
        const reopened = await row(batchId);
        expect(reopened).toMatchObject({
          status: 'active',
          completedAt: null,
          consecutiveFailures: 1,
          counts: { failed: 0, pending: 1 },
        });
        await claim();
        await settle1(ok(ids[0]!));
        expect(await row(batchId)).toMatchObject({
          status: 'complete',
          consecutiveFailures: 0,
          counts: { succeeded: 1 },
        });
      });

      it('counts a reclaimed crash (the streak unchanged) and an abandonment', async () => {
        const { batchId, ids } = await batchOf(3, { threshold: 2 });
        await claim(100, 1000);
        await settle1(fail(ids[0]!));
        await h.backend.writeCancelRequest(ids[2]!, null);
        expect(await h.backend.writeCancelEscalation(ids[2]!, W1)).toBe(true);
        expect(await h.backend.markAbandoned(ids[2]!, W1)).toBe(true);
        expect((await row(batchId)).counts).toMatchObject({ abandoned: 1, failed: 1 });
        await h.timeTravel(2000);
        expect(await h.backend.reclaimExpiredLocks(0, 0)).toEqual({ reclaimed: 1, retried: 0 });
        expect(await row(batchId)).toMatchObject({
          status: 'complete',
          consecutiveFailures: 1,
          counts: { crashed: 1, failed: 1, abandoned: 1, pending: 0 },
        });
        await expectCountersMatch(batchId, ids);
      });

      it('counts a drained child whose cancel was requested; a plain drain changes no counter', async () => {
        const { batchId, ids } = await batchOf(2);
        await claim();
        await h.backend.writeCancelRequest(ids[0]!, 'stop');
        expect(await h.backend.repend(W1, ids)).toBe(2);
        expect(await row(batchId)).toMatchObject({
          status: 'active',
          counts: { cancelled: 1, pending: 1 },
        });
        await expectCountersMatch(batchId, ids);
      });

      it('counts the deadline sweep as failures, which can abort the batch', async () => {
        const batchId = newJobId();
        const dl = { scheduleToCloseIntervalMs: 3_600_000 };
        const kids = [
          childArgs(batchId, {}, dl),
          childArgs(batchId, { delay: '30m' }, dl),
          childArgs(batchId),
        ];
        await h.backend.writeBatch({
          batchId,
          create: { queue: 'default', failureThreshold: 2, finalizer: null },
          children: kids,
          seal: true,
        });
        await h.timeTravel(2 * 3_600_000);
        expect(await h.backend.deadlineSweep()).toBe(2);
        expect(await row(batchId)).toMatchObject({
          status: 'aborted',
          consecutiveFailures: 2,
          counts: { failed: 2, cancelled: 1, pending: 0 },
        });
        expect((await h.backend.get(kids[2]!.id))!.errorClass).toBe('BatchAborted');
        await expectCountersMatch(
          batchId,
          kids.map((k) => k.id),
        );
      });
    });

    describe('batchCounts', () => {
      it('counts a batch without a row from its jobs, leaving excludeJobId out', async () => {
        const handle = await client.enqueueBatch([
          { actor: kid, payload: {} },
          { actor: kid, payload: {} },
          { actor: kid, payload: {} },
        ]);
        const [a, b] = handle.jobHandles.map((j) => j.jobId);
        expect(await h.backend.getBatch(handle.batchId)).toBeNull();
        await claim(1);
        await settle1(ok(a!));
        expect(await h.backend.batchCounts(handle.batchId)).toEqual({
          batch: null,
          counts: { total: 3, pending: 2, succeeded: 1, failed: 0, cancelled: 0, crashed: 0, abandoned: 0 },
        });
        expect((await h.backend.batchCounts(handle.batchId, b!)).counts).toMatchObject({
          total: 2,
          pending: 1,
        });
        expect(await h.backend.batchCounts(newJobId())).toMatchObject({ batch: null, counts: { total: 0 } });
      });

      it("answers a batch with a row from the row's counters", async () => {
        const { batchId, ids } = await batchOf(2, { threshold: 5 });
        await claim(1);
        await settle1(fail(ids[0]!));
        const out = await h.backend.batchCounts(batchId, ids[1]!);
        expect(out.batch).toMatchObject({ id: batchId, consecutiveFailures: 1 });
        expect(out.counts).toEqual({
          total: 2,
          pending: 1,
          succeeded: 0,
          failed: 1,
          cancelled: 0,
          crashed: 0,
          abandoned: 0,
        });
      });
    });

    const batchFilter = (
      o: Partial<{ queue: string; active: boolean; batchId: string; limit: number; cursor: string }> = {},
    ) => ({
      queue: o.queue ?? null,
      active: o.active ?? null,
      batchId: o.batchId ?? null,
      limit: o.limit ?? 100,
      cursor: o.cursor ?? null,
    });

    describe('getBatch and listBatches', () => {
      it('filters by queue, activity and id, newest first, and pages with a keyset cursor', async () => {
        const a = await batchOf(1);
        const b = await batchOf(0); // sealed and empty: complete at once
        const c = await batchOf(1);
        const emails = newJobId();
        await h.backend.writeBatch({
          batchId: emails,
          create: { queue: 'emails', failureThreshold: null, finalizer: null },
          children: [],
          seal: false,
        });
        expect((await row(b.batchId)).status).toBe('complete');
        const ids = async (f: ReturnType<typeof batchFilter>): Promise<string[]> =>
          (await h.backend.listBatches(f)).batches.map((x) => x.id);
        expect(await ids(batchFilter())).toEqual([emails, c.batchId, b.batchId, a.batchId]);
        expect(await ids(batchFilter({ queue: 'emails' }))).toEqual([emails]);
        expect(await ids(batchFilter({ active: true }))).toEqual([emails, c.batchId, a.batchId]);
        expect(await ids(batchFilter({ active: false }))).toEqual([b.batchId]);
        expect(await ids(batchFilter({ batchId: c.batchId }))).toEqual([c.batchId]);
        expect(await ids(batchFilter({ limit: 0 }))).toEqual([]);

        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page = await h.backend.listBatches(batchFilter({ limit: 1, ...(cursor ? { cursor } : {}) }));
          seen.push(...page.batches.map((x) => x.id));
          cursor = page.nextCursor;
          pages++;
        } while (cursor !== null && pages < 10);
        expect(seen).toEqual([emails, c.batchId, b.batchId, a.batchId]);
        const two = await h.backend.listBatches(batchFilter({ limit: 2 }));
        expect(two.nextCursor).not.toBeNull();
        const rest = await h.backend.listBatches(batchFilter({ limit: 2, cursor: two.nextCursor! }));
        expect(rest.batches.map((x) => x.id)).toEqual([b.batchId, a.batchId]);
        expect(rest.nextCursor).toBeNull();
        expect(await h.backend.getBatch(newJobId())).toBeNull();
      });

      it('refuses a cursor it did not produce, naming the field', async () => {
        for (const bad of ['nope', 'b1.garbage', 'b1.' + Buffer.from('x|y').toString('base64url')]) {
          const err = await h.backend.listBatches(batchFilter({ cursor: bad })).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(InvalidArgumentError);
          expect(err).toMatchObject({ field: 'filter.cursor' });
        }
      });
    });

    describe('the finalizer when its batch ends', () => {
      const HOUR = 3_600_000;
      const snooze = (jobId: string): Settlement => ({
        ...base,
        kind: 'reschedule',
        jobId,
        delayMs: HOUR,
        consumeBudget: false,
        outcome: 'snoozed',
        error: null,
      });

      /** A batch of `n` children whose finalizer has run once and snoozed for an hour. */
      async function snoozedBatch(
        n: number,
        o: { threshold?: number; seal?: boolean } = {},
      ): Promise<{ batchId: string; ids: string[]; finalizerId: string }> {
        const b = await batchOf(n, { ...o, finalizer: true });
        const claimed = await claim();
        expect(claimed.map((c) => c.id)).toContain(b.finalizerId);
        await settle1(snooze(b.finalizerId!));
        expect((await h.backend.get(b.finalizerId!))!.status).toBe('scheduled');
        return { batchId: b.batchId, ids: b.ids, finalizerId: b.finalizerId! };
      }

      /** The finalizer is pending now, with the event that says why. */
      async function expectWoken(finalizerId: string, batchId: string): Promise<void> {
        const f = (await h.backend.get(finalizerId))!;
        expect(f.status).toBe('pending');
        expect(f.scheduledAt.getTime()).toBeLessThan(Date.now() + HOUR / 2);
        expect((await h.backend.getEvents(finalizerId)).at(-1)).toMatchObject({
          kind: 'state_change',
          detail: { from_state: 'scheduled', to_state: 'pending', reason: 'batch_ended', batch_id: batchId },
        });
        const [again] = await claim();
        expect(again?.id).toBe(finalizerId);
      }

      it('a snoozed finalizer is pending as soon as the last child ends, not when its snooze runs out', async () => {
        const { batchId, ids, finalizerId } = await snoozedBatch(2);
        await settle1(ok(ids[0]!));
        expect((await h.backend.get(finalizerId))!.status).toBe('scheduled');
        await settle1(fail(ids[1]!));
        expect((await row(batchId)).status).toBe('complete');
        await expectWoken(finalizerId, batchId);
      });

      it('the write that seals a batch whose children have all ended wakes it', async () => {
        const { batchId, ids, finalizerId } = await snoozedBatch(1, { seal: false });
        await settle1(ok(ids[0]!));
        expect((await h.backend.get(finalizerId))!.status).toBe('scheduled');
        await h.backend.writeBatch({ batchId, children: [], seal: true });
        await expectWoken(finalizerId, batchId);
      });

      it('an aborted batch wakes it once the children still running have ended', async () => {
        const { batchId, ids, finalizerId } = await snoozedBatch(3, { threshold: 1 });
        await settle1(fail(ids[0]!));
        expect((await row(batchId)).status).toBe('aborted');
        // ids[1] and ids[2] were claimed with the finalizer and started: the abort leaves them.
        expect((await h.backend.get(finalizerId))!.status).toBe('scheduled');
        await settle1(ok(ids[1]!));
        expect((await h.backend.get(finalizerId))!.status).toBe('scheduled');
        await settle1(ok(ids[2]!));
        await expectWoken(finalizerId, batchId);
      });

      it('a finalizer waiting out a retry backoff keeps it', async () => {
        const b = await batchOf(1, { finalizer: true });
        await claim();
        await settle1({ ...base, kind: 'failed', jobId: b.finalizerId!, retryDelayMs: HOUR, error: boom });
        await settle1(ok(b.ids[0]!));
        expect((await row(b.batchId)).status).toBe('complete');
        const f = (await h.backend.get(b.finalizerId!))!;
        expect(f.status).toBe('scheduled');
        expect(f.scheduledAt.getTime()).toBeGreaterThan(Date.now() + HOUR / 2);
      });
    });

    describe('maintenance', () => {
      it('completeStaleBatches completes only an active sealed batch with no child left to end', async () => {
        const done = await batchOf(1);
        const live = await batchOf(1);
        const open = await batchOf(1, { seal: false });
        const [c1, c2, c3] = await claim();
        expect([c1!.id, c2!.id, c3!.id]).toEqual([done.ids[0], live.ids[0], open.ids[0]]);
        await settle1(ok(done.ids[0]!));
        await settle1(ok(open.ids[0]!));
        expect(await h.backend.completeStaleBatches()).toEqual([]);
        await h.reopenBatch(done.batchId);
        expect((await row(done.batchId)).status).toBe('active');
        const session = await h.backend.openLeaderSession(LEADER, 'host', { leaseMs: 10_000 });
        expect(await session.tryAcquire()).toBe(true);
        const fence = session.fence!;
        expect(await h.backend.completeStaleBatches(100, fence)).toEqual([done.batchId]);
        expect((await row(done.batchId)).status).toBe('complete');
        expect((await row(live.batchId)).status).toBe('active');
        expect((await row(open.batchId)).status).toBe('active');
        await session.release();
        await expect(h.backend.completeStaleBatches(100, fence)).rejects.toBeInstanceOf(LeadershipLostError);
        await expect(h.backend.pruneBatches(0, 100, fence)).rejects.toBeInstanceOf(LeadershipLostError);
        await session.close();
      });

      it('pruneBatches deletes finished batches past the age whose children are gone', async () => {
        const finished = await batchOf(1);
        const active = await batchOf(1);
        await claim();
        await settle1(ok(finished.ids[0]!));
        await h.timeTravel(2 * DAY);
        // Its child still in the jobs table: kept.
        expect(await h.backend.pruneBatches(DAY)).toBe(0);
        const retention = {
          succeededMs: DAY,
          failedMs: DAY,
          cancelledMs: DAY,
          abandonedMs: DAY,
          archiveMs: DAY,
        };
        expect((await h.backend.pruneJobs(retention, 100)).archived).toBe(1);
        expect(await h.backend.pruneBatches(3 * DAY)).toBe(0);
        expect(await h.backend.pruneBatches(DAY)).toBe(1);
        expect(await h.backend.getBatch(finished.batchId)).toBeNull();
        expect((await row(active.batchId)).status).toBe('active');
      });
    });
  });
}
