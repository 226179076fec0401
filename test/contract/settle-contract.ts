/**
 * The settle part of the worker-facing Backend contract (outcome writes: ownership guard, retries,
 * deadlines, cancels, history rows), run by {@link defineWorkerBackendContract} against both
 * backends.
 */
import { describe, expect, it } from 'vitest';

import type { Settlement } from '../../src/backend/worker-types.js';
import { budgeted, plain } from '../helpers/actors.js';
import { ACTORS, W1, W2, type WorkerContractContext } from './worker-contract-context.js';

export function defineSettleContract(t: WorkerContractContext): void {
  describe('settle', () => {
    async function running(
      ref = plain as typeof plain | typeof budgeted,
      payload: unknown = { n: 1 },
    ): Promise<string> {
      const handle = await t.client.enqueue(ref as typeof plain, payload as { n: number });
      const rows = await t.claim(10, ACTORS);
      expect(rows.map((r) => r.id)).toContain(handle.jobId);
      return handle.jobId;
    }

    /** A success of `jobId` by `workerId`, with `resultJson` as its result. */
    const success = (jobId: string, workerId = W1, resultJson: string | null = null): Settlement => ({
      ...t.base,
      workerId,
      kind: 'succeeded',
      jobId,
      resultJson,
      resultSizeBytes: resultJson === null ? null : resultJson.length,
      fallbackResultTtlMs: null,
    });

    /** A snooze of `jobId` (a reschedule at once that gives its attempt back). */
    const snooze = (jobId: string): Settlement => ({
      ...t.base,
      kind: 'reschedule',
      jobId,
      delayMs: 0,
      consumeBudget: false,
      outcome: 'snoozed',
      error: null,
    });

    it('writes success with its result, attempt row and event', async () => {
      const id = await running();
      const [res] = await t.h.backend.settle([
        {
          ...t.base,
          kind: 'succeeded',
          jobId: id,
          resultJson: '{"ok":true}',
          resultSizeBytes: 11,
          fallbackResultTtlMs: 3_600_000,
          progress: { seq: 4, state: { percent: 100 } },
        },
      ]);
      expect(res).toEqual({ jobId: id, status: 'succeeded', errorClass: null });
      const row = (await t.h.backend.get(id))!;
      expect(row).toMatchObject({
        status: 'succeeded',
        result: { ok: true },
        resultSizeBytes: 11,
        lockedByWorker: null,
        progressSeq: 4,
        progressState: { percent: 100 },
      });
      expect(row.finishedAt).not.toBeNull();
      expect(row.resultExpiresAt!.getTime() - row.finishedAt!.getTime()).toBeGreaterThan(3_590_000);
      const [attempt] = await t.h.backend.getAttempts(id);
      expect(attempt).toMatchObject({ attempt: 1, outcome: 'succeeded', workerId: W1, durationMs: 3 });
      expect((await t.h.backend.getEvents(id)).at(-1)?.detail).toMatchObject({
        from_state: 'running',
        to_state: 'succeeded',
        reason: 'succeeded',
      });
    });

    it('writes the same event details on every path: first attempts, retries, batches from several workers', async () => {
      // The usual details (first attempt, one worker per batch) are built once per statement in
      // Postgres; the others row by row. Both must read the same.
      const retried = await running();
      const first = await running();
      const err = { errorClass: 'Boom', message: 'boom', traceback: null };
      await t.h.backend.settle([{ ...t.base, kind: 'failed', jobId: retried, retryDelayMs: 0, error: err }]);
      await t.h.backend.settle([
        {
          ...t.base,
          kind: 'succeeded',
          jobId: first,
          resultJson: null,
          resultSizeBytes: null,
          fallbackResultTtlMs: null,
        },
      ]);
      expect((await t.claim()).map((r) => r.id)).toEqual([retried]);
      const other = await t.client.enqueue(plain, { n: 9 });
      expect((await t.claim(10, ACTORS, W2)).map((r) => r.id)).toEqual([other.jobId]);
      const ok = {
        kind: 'succeeded' as const,
        resultJson: null,
        resultSizeBytes: null,
        fallbackResultTtlMs: null,
      };
      await t.h.backend.settle([
        { ...t.base, ...ok, jobId: retried },
        { ...t.base, ...ok, jobId: other.jobId, workerId: W2 },
      ]);
      const details = async (id: string) => (await t.h.backend.getEvents(id)).map((e) => e.detail);
      const dispatched = (worker: string, attempt: number) => ({
        from_state: 'pending',
        to_state: 'running',
        reason: 'dispatched',
        worker_id: worker,
        attempt,
      });
      const succeeded = (worker: string, attempt: number) => ({
        from_state: 'running',
        to_state: 'succeeded',
        reason: 'succeeded',
        worker_id: worker,
        attempt,
      });
      expect(await details(first)).toEqual([dispatched(W1, 1), succeeded(W1, 1)]);
      expect(await details(retried)).toEqual([
        dispatched(W1, 1),
        {
          from_state: 'running',
          to_state: 'pending',
          reason: 'failed',
          worker_id: W1,
          attempt: 1,
          error_class: 'Boom',
        },
        dispatched(W1, 2),
        succeeded(W1, 2),
      ]);
      expect(await details(other.jobId)).toEqual([dispatched(W2, 1), succeeded(W2, 1)]);
    });

    it('lets a stored actor_config.result_ttl beat the actor literal', async () => {
      await t.h.setStoredResultTtl('plain', 60_000);
      const id = await running();
      await t.h.backend.settle([
        {
          ...t.base,
          kind: 'succeeded',
          jobId: id,
          resultJson: '1',
          resultSizeBytes: 1,
          fallbackResultTtlMs: 3_600_000,
        },
      ]);
      const row = (await t.h.backend.get(id))!;
      expect(row.resultExpiresAt!.getTime() - row.finishedAt!.getTime()).toBeLessThan(61_000);
    });

    it('fails for good, retries later, retries at once, and fails a retry past the deadline', async () => {
      const error = { errorClass: 'Boom', message: 'it broke', traceback: 'at handler' };
      const a = await running();
      const b = await running();
      const c = await running();
      const d = await running(budgeted, {});
      const results = await t.h.backend.settle([
        { ...t.base, kind: 'failed', jobId: a, error, retryDelayMs: null },
        { ...t.base, kind: 'failed', jobId: b, error, retryDelayMs: 30_000 },
        { ...t.base, kind: 'failed', jobId: c, error, retryDelayMs: 0 },
        { ...t.base, kind: 'failed', jobId: d, error, retryDelayMs: 2 * 3_600_000 },
      ]);
      expect(results.map((r) => [r.status, r.errorClass])).toEqual([
        ['failed', 'Boom'],
        ['scheduled', 'Boom'],
        ['pending', 'Boom'],
        ['failed', 'DeadlineExceeded'],
      ]);
      const rb = (await t.h.backend.get(b))!;
      expect(rb.scheduledAt.getTime() - rb.startedAt!.getTime()).toBeGreaterThanOrEqual(30_000);
      expect(rb).toMatchObject({
        attempt: 1,
        errorMessage: 'it broke',
        errorTraceback: 'at handler',
        finishedAt: null,
      });
      expect((await t.h.backend.get(a))!.finishedAt).not.toBeNull();
      expect((await t.h.backend.getAttempts(d))[0]).toMatchObject({ outcome: 'failed', errorClass: 'Boom' });
      expect((await t.claim()).map((r) => [r.id, r.attempt])).toEqual([[c, 2]]);
    });

    it('snoozes without using an attempt, and RetryAfter with a budget fails once attempts run out', async () => {
      const id = await running();
      const [s] = await t.h.backend.settle([snooze(id)]);
      expect(s?.status).toBe('pending');
      expect((await t.h.backend.get(id))!.attempt).toBe(0);
      expect((await t.h.backend.getAttempts(id))[0]).toMatchObject({ attempt: 1, outcome: 'snoozed' });
      // plain allows 3 attempts: use them with RetryAfter (budget consumed)
      for (let n = 1; n <= 3; n++) {
        const rows = await t.claim();
        expect(rows[0]?.attempt).toBe(n);
        const [r] = await t.h.backend.settle([
          {
            ...t.base,
            kind: 'reschedule',
            jobId: id,
            delayMs: 0,
            consumeBudget: true,
            outcome: 'retry_after',
            error: null,
          },
        ]);
        expect(r?.status).toBe(n < 3 ? 'pending' : 'failed');
        if (n === 3) expect(r?.errorClass).toBe('MaxAttemptsExceeded');
      }
    });

    it('is a no-op for a job the worker does not own', async () => {
      const id = await running();
      const foreign = success(id, W2);
      expect(await t.h.backend.settle([foreign])).toEqual([{ jobId: id, status: 'noop', errorClass: null }]);
      expect((await t.h.backend.get(id))!.status).toBe('running');
      await t.h.backend.settle([{ ...foreign, workerId: W1 }]);
      expect((await t.h.backend.settle([{ ...foreign, workerId: W1 }]))[0]?.status).toBe('noop');
      expect(await t.h.backend.getAttempts(id)).toHaveLength(1);
    });

    it('reports each item of a mixed batch: written successes, a lost job, a retry', async () => {
      // Postgres sends back no row for succeeded items when all of them were written; one lost
      // job among them must still come back as a no-op, and the others as succeeded.
      const [a, lost, b, retried] = [await running(), await running(), await running(), await running()];
      const ok = (jobId: string, workerId = W1) => success(jobId, workerId);
      const err = { errorClass: 'Boom', message: 'boom', traceback: null };
      expect(
        await t.h.backend.settle([
          ok(a),
          ok(lost, W2),
          { ...t.base, kind: 'failed', jobId: retried, retryDelayMs: 0, error: err },
          ok(b),
        ]),
      ).toEqual([
        { jobId: a, status: 'succeeded', errorClass: null },
        { jobId: lost, status: 'noop', errorClass: null },
        { jobId: retried, status: 'pending', errorClass: 'Boom' },
        { jobId: b, status: 'succeeded', errorClass: null },
      ]);
      expect((await t.h.backend.get(lost))!.status).toBe('running');
    });

    it('reports a lost job among a batch of successes only', async () => {
      // In Postgres such a batch is written by its own statement (settleSucceeded), which must
      // report the lost job the same way.
      const [a, lost, b] = [await running(), await running(), await running()];
      const ok = (jobId: string, workerId = W1) => success(jobId, workerId, '"done"');
      expect(await t.h.backend.settle([ok(a), ok(lost, W2), ok(b)])).toEqual([
        { jobId: a, status: 'succeeded', errorClass: null },
        { jobId: lost, status: 'noop', errorClass: null },
        { jobId: b, status: 'succeeded', errorClass: null },
      ]);
      expect((await t.h.backend.get(lost))!.status).toBe('running');
      expect((await t.h.backend.get(b))!.result).toBe('done');
      expect(await t.h.backend.getAttempts(lost)).toEqual([]);
    });

    it('ends cancelled instead of retrying when a cancel was requested during the attempt', async () => {
      const id = await running();
      expect(await t.h.backend.writeCancelRequest(id, 'stop')).toBe(true);
      const row = (await t.h.backend.get(id))!;
      expect(row).toMatchObject({ status: 'running', cancelPhase: 1 });
      expect((await t.h.backend.getEvents(id)).at(-1)).toMatchObject({
        kind: 'cancel_request',
        detail: { phase: 1, message: 'stop' },
      });
      const [r] = await t.h.backend.settle([
        {
          ...t.base,
          kind: 'failed',
          jobId: id,
          error: { errorClass: 'X', message: null, traceback: null },
          retryDelayMs: 1000,
        },
      ]);
      expect(r?.status).toBe('cancelled');
    });

    it('gives a snoozed attempt back even when a cancel requested meanwhile ends the job', async () => {
      const id = await running();
      await t.h.backend.writeCancelRequest(id, null);
      const [r] = await t.h.backend.settle([snooze(id)]);
      expect(r?.status).toBe('cancelled');
      expect((await t.h.backend.get(id))!.attempt).toBe(0);
      expect((await t.h.backend.getAttempts(id)).map((a) => a.outcome)).toEqual(['snoozed']);
    });

    it('release puts the job back to pending without using an attempt', async () => {
      const id = await running();
      const [r] = await t.h.backend.settle([
        {
          ...t.base,
          kind: 'release',
          jobId: id,
          error: { errorClass: 'WorkerShutdown', message: 'bye', traceback: null },
        },
      ]);
      expect(r?.status).toBe('pending');
      expect((await t.h.backend.get(id))!.attempt).toBe(0);
      expect((await t.h.backend.getAttempts(id))[0]?.outcome).toBe('interrupted');
    });
  });
}
