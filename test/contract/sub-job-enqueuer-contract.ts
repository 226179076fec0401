/**
 * `ctx.jobs` of one attempt (`AttemptSubJobs`), on both backends: what is checked at the call (each
 * bad input, and the gates an empty store would refuse), buffering and sealing, the autonomous and
 * connection modes, `PartialBatchError`, tag inheritance and the per-call gate overrides. The
 * worker's side (the buffer written with the success) is in test/worker/sub-jobs.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { batchItem } from '../../src/client/batch-items.js';
import { actor } from '../../src/core/actor.js';
import {
  IdempotencyKeyConflict,
  InvalidArgumentError,
  JobNotFoundError,
  MaxPendingExceededError,
  PartialBatchError,
  PayloadValidationError,
  SingletonCollisionError,
  SubJobsUnavailableError,
} from '../../src/errors/index.js';
import { silentLogger } from '../../src/obs/logger.js';
import { MAX_BUFFERED_SUB_JOBS } from '../../src/worker/sub-job-buffer.js';
import { SubJobEnvironment } from '../../src/worker/sub-job-environment.js';
import type { AttemptSubJobs } from '../../src/worker/sub-jobs.js';
import { limited, lonely, plain, sendEmail } from '../helpers/actors.js';
import { ACTORS, type WorkerContractContext } from './worker-contract-context.js';

const kid = actor({ name: 'sj_kid', payload: z.object({ i: z.number().int() }) }, async () => undefined);

export function defineSubJobEnqueuerContract(t: WorkerContractContext): void {
  describe('ctx.jobs (AttemptSubJobs)', () => {
    const envs: SubJobEnvironment[] = [];
    afterEach(async () => {
      for (const env of envs.splice(0)) await env.close();
    });

    /** A claimed parent (tags `p1`, `p2` unless given) and its attempt's `ctx.jobs`. */
    async function attempt(tags: string[] = ['p1', 'p2']): Promise<AttemptSubJobs> {
      const parent = await t.client.enqueue(plain, { n: 0 }, { tags });
      const [row] = await t.claim(1, ACTORS);
      expect(row?.id).toBe(parent.jobId);
      const env = new SubJobEnvironment(
        t.h.backend,
        { payloadMaxBytes: 1024 * 1024, idempotencyKeyMaxBytes: 1024, otelEnabled: true },
        silentLogger,
      );
      envs.push(env);
      return env.open(row!);
    }

    const count = async (actorName: string): Promise<number> =>
      (await t.h.backend.countPendingJobs([actorName])).get(actorName) ?? 0;

    it('buffers children (nothing written) with handles whose jobs do not exist yet', async () => {
      const jobs = await attempt();
      const one = await jobs.enqueue(kid, { i: 1 });
      const many = await jobs.enqueueBatch([batchItem(kid, { i: 2 }), batchItem(kid, { i: 3 })]);
      expect(jobs.pendingCount).toBe(3);
      expect(one.row.status).toBe('pending');
      expect(many.map((h) => h.row.metadata.batch_id)).toEqual([
        many[0]!.row.metadata.batch_id,
        many[0]!.row.metadata.batch_id,
      ]);
      expect(await count('sj_kid')).toBe(0);
      await expect(one.status()).rejects.toBeInstanceOf(JobNotFoundError);
      const sealed = await jobs.seal();
      expect(sealed.map((a) => a.id)).toEqual([one.jobId, ...many.map((h) => h.jobId)]);
      await expect(jobs.enqueue(kid, { i: 4 })).rejects.toBeInstanceOf(SubJobsUnavailableError);
    });

    it('includes a call still in progress when the attempt is sealed, and refuses calls after', async () => {
      const jobs = await attempt();
      const late = jobs.enqueue(kid, { i: 1 });
      const sealed = jobs.seal();
      expect((await sealed).length).toBe(1);
      expect((await late).jobId).toBe((await sealed)[0]!.id);
      const discarded = await attempt();
      await discarded.enqueue(kid, { i: 1 });
      discarded.discard();
      expect(discarded.pendingCount).toBe(0);
      await expect(discarded.enqueueBatch([batchItem(kid, { i: 2 })])).rejects.toMatchObject({
        code: 'TASKQ_SUB_JOBS_UNAVAILABLE',
      });
    });

    it('merges the parent’s tags by default, and not with inheritTags: false', async () => {
      const jobs = await attempt();
      const merged = await jobs.enqueue(kid, { i: 1 }, { tags: ['c', 'p1'] });
      const own = await jobs.enqueue(kid, { i: 2 }, { tags: ['c'], inheritTags: false });
      const batch = await jobs.enqueueBatch([batchItem(kid, { i: 3 }, { tags: ['b'] })]);
      const bare = await jobs.enqueueBatch([batchItem(kid, { i: 4 })], { inheritTags: false });
      expect(merged.row.tags).toEqual(['p1', 'p2', 'c']);
      expect(own.row.tags).toEqual(['c']);
      expect(batch[0]!.row.tags).toEqual(['p1', 'p2', 'b']);
      expect(bare[0]!.row.tags).toEqual([]);
      const crowded = await attempt(Array.from({ length: 60 }, (_, i) => `t${i}`));
      await expect(crowded.enqueue(kid, { i: 5 }, { tags: ['a', 'b', 'c', 'd', 'e'] })).rejects.toMatchObject(
        { field: 'ctx.jobs.enqueue.tags' },
      );
      expect(crowded.pendingCount).toBe(0);
    });

    it('writes at once with autonomous: true, and reports every failed item of a batch together', async () => {
      const jobs = await attempt();
      const h = await jobs.enqueue(kid, { i: 1 }, { autonomous: true });
      expect((await t.h.backend.get(h.jobId))?.status).toBe('pending');
      expect(jobs.pendingCount).toBe(0);
      // `limited` allows 2 pending: items 0 and 2 fill it, item 3 is refused; the others are written.
      const err = await jobs
        .enqueueBatch(
          [
            batchItem(limited, { n: 1 }),
            batchItem(sendEmail, { to: 'x@example.com' }, { idempotencyKey: 'taken' }),
            batchItem(limited, { n: 2 }),
            batchItem(limited, { n: 3 }),
          ],
          { autonomous: true },
        )
        .catch((e: unknown) => e);
      await t.client.enqueue(plain, { n: 9 }, { idempotencyKey: 'other' });
      expect(err).toBeInstanceOf(PartialBatchError);
      const partial = err as PartialBatchError;
      expect(partial.total).toBe(4);
      expect(partial.succeededCount).toBe(3);
      expect(partial.failedItems.map((f) => f.index)).toEqual([3]);
      expect(partial.failedItems[0]!.error).toBeInstanceOf(MaxPendingExceededError);
      expect(partial.handles.map((x) => x === null)).toEqual([false, false, false, true]);
      expect(await count('limited')).toBe(2);
      // Every item was tried: an early failure does not stop the later ones.
      const again = await jobs
        .enqueueBatch(
          [
            batchItem(sendEmail, { to: 'y@example.com' }, { idempotencyKey: 'other' }),
            batchItem(kid, { i: 2 }),
          ],
          { autonomous: true },
        )
        .catch((e: unknown) => e as PartialBatchError);
      expect((again as PartialBatchError).failedItems.map((f) => f.index)).toEqual([0]);
      expect((again as PartialBatchError).failedItems[0]!.error).toBeInstanceOf(IdempotencyKeyConflict);
      expect((again as PartialBatchError).handles[1]?.row.status).toBe('pending');
    });

    it('writes in the caller’s transaction with connection: committed or rolled back with it', async () => {
      const jobs = await attempt();
      const rolled = await t.h.begin();
      const gone = await jobs.enqueue(kid, { i: 1 }, { connection: rolled.conn });
      const goneToo = await jobs.enqueueBatch([batchItem(kid, { i: 2 })], { connection: rolled.conn });
      await rolled.rollback();
      expect(await t.h.backend.get(gone.jobId)).toBeNull();
      expect(await t.h.backend.get(goneToo[0]!.jobId)).toBeNull();
      const kept = await t.h.begin();
      const stays = await jobs.enqueue(kid, { i: 3 }, { connection: kept.conn });
      await kept.commit();
      expect((await t.h.backend.get(stays.jobId))?.status).toBe('pending');
      expect(jobs.pendingCount).toBe(0);
    });

    it('applies per-call uniqueFor and uniqueStates overrides', async () => {
      const jobs = await attempt();
      const first = await jobs.enqueue(
        kid,
        { i: 1 },
        { identityKey: 'k', uniqueFor: '1h', autonomous: true },
      );
      const second = await jobs.enqueue(
        kid,
        { i: 2 },
        { identityKey: 'k', uniqueFor: '1h', autonomous: true },
      );
      expect(second.wasExisting).toBe(true);
      expect(second.jobId).toBe(first.jobId);
      // Only succeeded jobs count for this gate: the pending one does not.
      const third = await jobs.enqueue(
        kid,
        { i: 3 },
        { identityKey: 'k', uniqueFor: '1h', uniqueStates: ['succeeded'], autonomous: true },
      );
      expect(third.wasExisting).toBe(false);
      // Without the override the actor has no uniqueFor: a new job.
      const plainAgain = await jobs.enqueue(kid, { i: 4 }, { identityKey: 'k', autonomous: true });
      expect(plainAgain.wasExisting).toBe(false);
    });

    it('applies a per-call maxPending: alone when nothing is stored, the lower of the two otherwise', async () => {
      const jobs = await attempt();
      await jobs.enqueue(kid, { i: 1 }, { maxPending: 1, autonomous: true });
      await expect(jobs.enqueue(kid, { i: 2 }, { maxPending: 1, autonomous: true })).rejects.toBeInstanceOf(
        MaxPendingExceededError,
      );
      await jobs.enqueue(kid, { i: 3 }, { maxPending: 2, autonomous: true });
      await t.h.setStoredMaxPending('send_email', 1);
      const capped = await attempt();
      await capped.enqueue(sendEmail, { to: 'a@example.com' }, { maxPending: 5, autonomous: true });
      await expect(
        capped.enqueue(sendEmail, { to: 'b@example.com' }, { maxPending: 5, autonomous: true }),
      ).rejects.toMatchObject({ code: 'TASKQ_MAX_PENDING_EXCEEDED', maxPending: 1 });
    });

    it('refuses at the call what an empty store would refuse at the commit, buffering none of it', async () => {
      const jobs = await attempt();
      await jobs.enqueue(kid, { i: 1 }, { maxPending: 2 });
      await jobs.enqueue(kid, { i: 2 }, { maxPending: 2 });
      await expect(jobs.enqueue(kid, { i: 3 }, { maxPending: 2 })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      // A batch of 3 `limited` children (maxPending 2) can never fit: none of it is buffered.
      await expect(jobs.enqueueBatch([1, 2, 3].map((n) => batchItem(limited, { n })))).rejects.toMatchObject({
        code: 'TASKQ_INVALID_ARGUMENT',
        field: 'ctx.jobs.enqueueBatch',
      });
      await jobs.enqueue(lonely, null);
      await expect(jobs.enqueue(lonely, null)).rejects.toBeInstanceOf(SingletonCollisionError);
      await jobs.enqueue(kid, { i: 4 }, { idempotencyKey: 'shared' });
      await expect(
        jobs.enqueue(sendEmail, { to: 'a@example.com' }, { idempotencyKey: 'shared' }),
      ).rejects.toBeInstanceOf(IdempotencyKeyConflict);
      expect(jobs.pendingCount).toBe(4);
    });

    it(`refuses more than ${MAX_BUFFERED_SUB_JOBS} buffered children in one attempt`, async () => {
      const jobs = await attempt();
      const thousand = Array.from({ length: 1000 }, (_, i) => batchItem(kid, { i }));
      for (let k = 0; k < MAX_BUFFERED_SUB_JOBS / 1000; k++) await jobs.enqueueBatch(thousand);
      await expect(jobs.enqueue(kid, { i: 0 })).rejects.toMatchObject({
        code: 'TASKQ_INVALID_ARGUMENT',
        field: 'ctx.jobs.enqueue',
      });
      expect(jobs.pendingCount).toBe(MAX_BUFFERED_SUB_JOBS);
    });

    it('names the field, the value and the rule of every bad input, and buffers nothing', async () => {
      const jobs = await attempt();
      const conn = { query: async () => ({ rows: [], rowCount: 0 }) };
      const bad: [() => Promise<unknown>, string][] = [
        [() => jobs.enqueue(kid, { i: 1 }, { prioritty: 1 } as never), 'ctx.jobs.enqueue.prioritty'],
        [() => jobs.enqueue(kid, { i: 1 }, { queue: 'elsewhere' } as never), 'ctx.jobs.enqueue.queue'],
        [() => jobs.enqueue(kid, { i: 1 }, { traceId: 'abc' } as never), 'ctx.jobs.enqueue.traceId'],
        [() => jobs.enqueue(kid, { i: 1 }, { spanId: 'abc' } as never), 'ctx.jobs.enqueue.spanId'],
        [
          () => jobs.enqueue(kid, { i: 1 }, { autonomous: true, connection: conn }),
          'ctx.jobs.enqueue.autonomous',
        ],
        [() => jobs.enqueue(kid, { i: 1 }, { autonomous: 'yes' } as never), 'ctx.jobs.enqueue.autonomous'],
        [() => jobs.enqueue(kid, { i: 1 }, { inheritTags: 1 } as never), 'ctx.jobs.enqueue.inheritTags'],
        [() => jobs.enqueue(kid, { i: 1 }, { connection: {} } as never), 'ctx.jobs.enqueue.connection'],
        [() => jobs.enqueue(kid, { i: 1 }, { uniqueFor: 'soon' }), 'ctx.jobs.enqueue.uniqueFor'],
        [() => jobs.enqueue(kid, { i: 1 }, { uniqueStates: [] }), 'ctx.jobs.enqueue.uniqueStates'],
        [
          () => jobs.enqueue(kid, { i: 1 }, { uniqueStates: ['done'] } as never),
          'ctx.jobs.enqueue.uniqueStates',
        ],
        [() => jobs.enqueue(kid, { i: 1 }, { maxPending: -1 }), 'ctx.jobs.enqueue.maxPending'],
        [() => jobs.enqueue(kid, { i: 1 }, { maxPending: 1.5 }), 'ctx.jobs.enqueue.maxPending'],
        [() => jobs.enqueue(kid, { i: 1 }, { priority: 0.5 }), 'ctx.jobs.enqueue.priority'],
        [
          () => jobs.enqueue(kid, { i: 1 }, { metadata: { batch_id: 'x' } }),
          'ctx.jobs.enqueue.metadata.batch_id',
        ],
        [() => jobs.enqueue(kid, { i: 1 }, null as never), 'ctx.jobs.enqueue.options'],
        [() => jobs.enqueue({ name: 'nope' } as never, { i: 1 }), 'ctx.jobs.enqueue.actor'],
        [() => jobs.enqueueBatch([]), 'ctx.jobs.enqueueBatch.items'],
        [
          () => jobs.enqueueBatch(Array.from({ length: 1001 }, (_, i) => batchItem(kid, { i }))),
          'ctx.jobs.enqueueBatch.items',
        ],
        [
          () => jobs.enqueueBatch([batchItem(kid, { i: 1 })], { failurePolicy: 1 } as never),
          'ctx.jobs.enqueueBatch.options.failurePolicy',
        ],
        [
          () => jobs.enqueueBatch([batchItem(kid, { i: 1 })], { batchId: 'x' }),
          'ctx.jobs.enqueueBatch.batchId',
        ],
        [
          () => jobs.enqueueBatch([batchItem(kid, { i: 1 })], { autonomous: true, connection: conn }),
          'ctx.jobs.enqueueBatch.autonomous',
        ],
        [() => jobs.enqueueBatch([batchItem(kid, { i: 1 }, { queue: 'q' })]), 'items[0].options.queue'],
        [
          () => jobs.enqueueBatch([batchItem(kid, { i: 1 }, { maxPending: 1 } as never)]),
          'items[0].options.maxPending',
        ],
        [
          () => jobs.enqueueBatch([batchItem(kid, { i: 1 }, { autonomous: true } as never)]),
          'items[0].options.autonomous',
        ],
        [
          () => jobs.enqueueBatch([batchItem(kid, { i: 1 }, { priority: 'high' } as never)]),
          'items[0].options.priority',
        ],
        [() => jobs.enqueueBatch([{ actor: kid, payload: { i: 1 }, extra: 1 } as never]), 'items[0].extra'],
      ];
      for (const [call, field] of bad) {
        const err = await call().then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, field).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field, field).toBe(field);
        expect((err as InvalidArgumentError).rule.length, field).toBeGreaterThan(0);
      }
      await expect(jobs.enqueue(kid, { i: 'one' } as never)).rejects.toBeInstanceOf(PayloadValidationError);
      await expect(
        jobs.enqueueBatch([batchItem(kid, { i: 1 }), batchItem(kid, { i: 'two' } as never)]),
      ).rejects.toBeInstanceOf(PayloadValidationError);
      expect(jobs.pendingCount).toBe(0);
      expect(await count('sj_kid')).toBe(0);
    });
  });
}
