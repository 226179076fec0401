/**
 * `settleWithChildren` (a success written with the sub-jobs its handler buffered), run by
 * {@link defineWorkerBackendContract} against both backends: atomicity, the ownership guard, every
 * gate on the children, chunks past 1,000, per-child `maxPending` limits.
 */
import { describe, expect, it } from 'vitest';

import type { EnqueueArgs } from '../../src/backend/types.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import { buildEnqueueArgs } from '../../src/client/enqueue-options.js';
import type { ActorRef } from '../../src/core/actor.js';
import { IdempotencyKeyConflict, MaxPendingExceededError } from '../../src/errors/index.js';
import { limited, lonely, plain, sendEmail } from '../helpers/actors.js';
import { ACTORS, W1, W2, type WorkerContractContext } from './worker-contract-context.js';

/** A child's enqueue arguments, as `ctx.jobs` builds them. */
function child(
  ref: ActorRef<unknown, unknown>,
  payload: unknown,
  options: Parameters<typeof buildEnqueueArgs>[2] = {},
  maxPending: number | null = ref.maxPending,
): EnqueueArgs {
  return buildEnqueueArgs(ref, JSON.stringify(payload), options, { maxPending, idempotencyMaxBytes: 1024 });
}

const asRef = (r: unknown): ActorRef<unknown, unknown> => r as ActorRef<unknown, unknown>;

export function defineSubJobSettleContract(t: WorkerContractContext): void {
  describe('settleWithChildren', () => {
    async function running(): Promise<string> {
      const handle = await t.client.enqueue(plain, { n: 1 });
      const rows = await t.claim(10, ACTORS);
      expect(rows.map((r) => r.id)).toContain(handle.jobId);
      return handle.jobId;
    }

    const success = (jobId: string, workerId = W1): Settlement => ({
      ...t.base,
      workerId,
      kind: 'succeeded',
      jobId,
      resultJson: '{"fanned":true}',
      resultSizeBytes: 15,
      fallbackResultTtlMs: null,
    });

    const count = async (actor: string): Promise<number> =>
      (await t.h.backend.countPendingJobs([actor])).get(actor) ?? 0;

    it('writes the success and every child together; each child comes back with its row', async () => {
      const id = await running();
      const children = [
        child(asRef(sendEmail), { to: 'a@example.com' }, { tags: ['fan'] }),
        child(asRef(plain), { n: 2 }, { delay: '1h' }),
      ];
      const out = await t.h.backend.settleWithChildren(success(id), children);
      expect(out.result).toEqual({ jobId: id, status: 'succeeded', errorClass: null });
      expect(out.children.map((r) => r.id)).toEqual(children.map((c) => c.id));
      expect(out.children.map((r) => r.status)).toEqual(['pending', 'scheduled']);
      expect(await t.h.backend.get(id)).toMatchObject({ status: 'succeeded', result: { fanned: true } });
      expect(await t.h.backend.get(children[0]!.id)).toMatchObject({ status: 'pending', tags: ['fan'] });
      expect((await t.h.backend.getAttempts(id)).map((a) => a.outcome)).toEqual(['succeeded']);
    });

    it('writes nothing, children included, when the job is no longer this worker’s', async () => {
      const id = await running();
      const children = [child(asRef(sendEmail), { to: 'a@example.com' })];
      const out = await t.h.backend.settleWithChildren(success(id, W2), children);
      expect(out).toEqual({ result: { jobId: id, status: 'noop', errorClass: null }, children: [] });
      expect((await t.h.backend.get(id))?.status).toBe('running');
      expect(await t.h.backend.get(children[0]!.id)).toBeNull();
    });

    it('rolls the success back when a gate refuses a child (maxPending full), leaving no child', async () => {
      await t.client.enqueue(limited, { n: 1 });
      await t.client.enqueue(limited, { n: 2 });
      const id = await running();
      const ok = child(asRef(sendEmail), { to: 'a@example.com' });
      const refused = child(asRef(limited), { n: 3 });
      await expect(t.h.backend.settleWithChildren(success(id), [ok, refused])).rejects.toBeInstanceOf(
        MaxPendingExceededError,
      );
      expect((await t.h.backend.get(id))?.status).toBe('running');
      expect((await t.h.backend.getAttempts(id)).length).toBe(0);
      expect(await t.h.backend.get(ok.id)).toBeNull();
      expect(await count('limited')).toBe(2);
      // The job is still owned: a later write of the same success (without the refused child) works.
      const out = await t.h.backend.settleWithChildren(success(id), [ok]);
      expect(out.result.status).toBe('succeeded');
      expect((await t.h.backend.get(ok.id))?.status).toBe('pending');
    });

    it('refuses a singleton child whose actor is busy, and a key held by another actor', async () => {
      await t.client.enqueue(lonely, null);
      const id = await running();
      await expect(
        t.h.backend.settleWithChildren(success(id), [child(asRef(lonely), null)]),
      ).rejects.toMatchObject({
        code: 'TASKQ_SINGLETON_COLLISION',
      });
      await t.client.enqueue(sendEmail, { to: 'k@example.com' }, { idempotencyKey: 'held' });
      await expect(
        t.h.backend.settleWithChildren(success(id), [
          child(asRef(plain), { n: 1 }, { idempotencyKey: 'held' }),
        ]),
      ).rejects.toBeInstanceOf(IdempotencyKeyConflict);
      expect((await t.h.backend.get(id))?.status).toBe('running');
    });

    it('resolves a child whose idempotency key is taken by its actor to the existing job', async () => {
      const existing = await t.client.enqueue(sendEmail, { to: 'k@example.com' }, { idempotencyKey: 'mine' });
      const id = await running();
      const dup = child(asRef(sendEmail), { to: 'k@example.com' }, { idempotencyKey: 'mine' });
      const out = await t.h.backend.settleWithChildren(success(id), [dup]);
      expect(out.children.map((r) => r.id)).toEqual([existing.jobId]);
      expect(await t.h.backend.get(dup.id)).toBeNull();
    });

    it('writes more than 1,000 children (in chunks, one transaction)', async () => {
      const id = await running();
      const children = Array.from({ length: 1204 }, (_, i) => child(asRef(plain), { n: i }));
      const out = await t.h.backend.settleWithChildren(success(id), children);
      expect(out.children.length).toBe(1204);
      expect(await count('plain')).toBe(1204);
    });

    it('holds each child to its own maxPending (per-call limits of one actor)', async () => {
      const id = await running();
      // A limit of 1 after a child already counted: refused whatever the other child's limit.
      const loose = child(asRef(sendEmail), { to: 'a@example.com' }, {}, 5);
      const tight = child(asRef(sendEmail), { to: 'b@example.com' }, {}, 1);
      await expect(t.h.backend.settleWithChildren(success(id), [loose, tight])).rejects.toMatchObject({
        code: 'TASKQ_MAX_PENDING_EXCEEDED',
        maxPending: 1,
      });
      // The tight one first: it is the only child counted against its limit.
      const out = await t.h.backend.settleWithChildren(success(id), [{ ...tight }, { ...loose }]);
      expect(out.result.status).toBe('succeeded');
      expect(await count('send_email')).toBe(2);
    });
  });
}
