/**
 * The Backend contract: one suite, run unchanged against PostgresBackend and InMemoryBackend.
 * A case that only one backend passes is a bug in that backend, never a skip.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { Backend } from '../../src/backend/backend.js';
import type { ClientLike } from '../../src/db/driver.js';
import { TaskQ } from '../../src/client/taskq.js';
import {
  InvalidArgumentError,
  MaxPendingExceededError,
  PayloadValidationError,
  SingletonCollisionError,
  JobNotFoundError,
} from '../../src/errors/index.js';
import type { JobRow, JobStatus } from '../../src/backend/types.js';
import { defineNulCases } from './nul-contract.js';
import { defineFastBatchCases } from './fast-batch-contract.js';
import { defineGateCases } from './gates-contract.js';
import { budgeted, deduped, limited, lonely, plain, sendEmail } from '../helpers/actors.js';

/** What each backend's test harness provides. */
export interface ContractHarness {
  backend: Backend;
  /** Opens a transaction on a caller-owned connection. */
  begin(): Promise<{ conn: ClientLike; commit(): Promise<void>; rollback(): Promise<void> }>;
  /** Stores an operator override of actor_config.max_pending. */
  setStoredMaxPending(actor: string, value: number | null): Promise<void>;
  /** Stores an operator override of actor_config.max_concurrent. */
  setStoredMaxConcurrent(actor: string, value: number | null): Promise<void>;
  /** Stores an operator override of actor_config.result_ttl (ms). */
  setStoredResultTtl(actor: string, ms: number | null): Promise<void>;
  /** Sets a queue's dispatch mode. */
  setQueueMode(queue: string, mode: 'strict_fifo' | 'round_robin'): Promise<void>;
  /** Makes `ms` of time pass from the backend's point of view. */
  timeTravel(ms: number): Promise<void>;
  /** Removes every job (between cases). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export function defineBackendContract(name: string, makeHarness: () => Promise<ContractHarness>): void {
  describe(`Backend contract: ${name}`, () => {
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

    /** Every job, counted page by page (a page holds at most 1,000). */
    const count = async (): Promise<number> => {
      let n = 0;
      let cursor: string | null = null;
      do {
        const page = await client.list(cursor === null ? { limit: 1000 } : { limit: 1000, cursor });
        n += page.jobs.length;
        cursor = page.nextCursor;
      } while (cursor !== null);
      return n;
    };

    describe('enqueue', () => {
      it('inserts a pending job with the actor defaults and the given options', async () => {
        const h1 = await client.enqueue(
          sendEmail,
          { to: 'a@example.com' },
          {
            priority: 7,
            identityKey: 'user:1',
            fairnessKey: 'tenant-a',
            metadata: { source: 'test' },
            tags: ['welcome', 'mail'],
            traceId: 'abc123',
            spanId: 'def456',
            startToClose: '45s',
            heartbeatTimeout: 10_000,
          },
        );
        expect(h1.wasExisting).toBe(false);
        const row = h1.row;
        expect(row.status).toBe('pending');
        expect(row.actor).toBe('send_email');
        expect(row.queue).toBe('emails');
        expect(row.payload).toEqual({ to: 'a@example.com' });
        expect(row.priority).toBe(7);
        expect(row.attempt).toBe(0);
        expect(row.maxAttempts).toBe(5);
        expect(row.retryKind).toBe('transient');
        expect(row.identityKey).toBe('user:1');
        expect(row.fairnessKey).toBe('tenant-a');
        expect(row.metadata).toEqual({ source: 'test' });
        expect(row.tags).toEqual(['welcome', 'mail']);
        expect(row.traceId).toBe('abc123');
        expect(row.spanId).toBe('def456');
        expect(row.startToCloseMs).toBe(45_000);
        expect(row.heartbeatTimeoutMs).toBe(10_000);
        expect(row.cancelPhase).toBe(0);
        expect(row.idempotencyScope).toBe('');
        expect(row.scheduledAt.getTime()).toBe(row.createdAt.getTime());
        expect(await h.backend.get(row.id)).toEqual(row);
      });

      it('overrides the queue per job and keeps the actor priority by default', async () => {
        const h1 = await client.enqueue(plain, { n: 1 }, { queue: 'other' });
        expect(h1.row.queue).toBe('other');
        expect(h1.row.priority).toBe(0);
      });

      it('lands a future scheduledAt or delay as scheduled and a past one as pending', async () => {
        const future = await client.enqueue(
          plain,
          { n: 1 },
          { scheduledAt: new Date(Date.now() + 3_600_000) },
        );
        expect(future.row.status).toBe('scheduled');
        const delayed = await client.enqueue(plain, { n: 2 }, { delay: '10m' });
        expect(delayed.row.status).toBe('scheduled');
        expect(delayed.row.scheduledAt.getTime() - delayed.row.createdAt.getTime()).toBe(600_000);
        expect(await h.backend.get(delayed.row.id)).toEqual(delayed.row);
        const past = await client.enqueue(plain, { n: 3 }, { scheduledAt: new Date(Date.now() - 3_600_000) });
        expect(past.row.status).toBe('pending');
        const zero = await client.enqueue(plain, { n: 4 }, { delay: 0 });
        expect(zero.row.status).toBe('pending');
      });

      it('anchors retry.timeBudget as a deadline on the backend clock', async () => {
        const h1 = await client.enqueue(budgeted, {});
        expect(h1.row.scheduleToClose?.getTime()).toBe(h1.row.createdAt.getTime() + 3_600_000);
        expect(h1.row.retryKind).toBe('indefinite');
        expect(h1.row.startToCloseMs).toBe(30_000);
        expect(await h.backend.get(h1.row.id)).toEqual(h1.row);
        const earlier = new Date(h1.row.createdAt.getTime() + 60_000);
        const h2 = await client.enqueue(budgeted, {}, { scheduleToClose: earlier });
        expect(h2.row.scheduleToClose!.getTime()).toBeLessThanOrEqual(earlier.getTime());
      });

      it('deduplicates an idempotency key within its scope only', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { idempotencyKey: 'order:1' });
        const b = await client.enqueue(plain, { n: 2 }, { idempotencyKey: 'order:1' });
        expect(b.wasExisting).toBe(true);
        expect(b.jobId).toBe(a.jobId);
        expect(b.row.payload).toEqual({ n: 1 });
        const c = await client.enqueue(
          plain,
          { n: 3 },
          { idempotencyKey: 'order:1', idempotencyScope: 'run-2' },
        );
        expect(c.wasExisting).toBe(false);
        expect(c.jobId).not.toBe(a.jobId);
        const d = await client.enqueue(plain, { n: 4 }, { idempotencyKey: 'order:1', idempotencyScope: '' });
        expect(d.jobId).toBe(a.jobId);
        expect(await count()).toBe(2);
      });

      it('finds a job by idempotency key within its scope only', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { idempotencyKey: 'find:1' });
        const b = await client.enqueue(
          plain,
          { n: 2 },
          { idempotencyKey: 'find:1', idempotencyScope: 'run-2' },
        );
        expect((await h.backend.getByIdempotencyKey('find:1', ''))?.id).toBe(a.jobId);
        expect((await h.backend.getByIdempotencyKey('find:1', 'run-2'))?.id).toBe(b.jobId);
        expect(await h.backend.getByIdempotencyKey('find:1', 'run-3')).toBeNull();
        expect(await h.backend.getByIdempotencyKey('find:2', '')).toBeNull();
      });

      it('keeps deduplicating an idempotency key after the job finished', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { idempotencyKey: 'k' });
        await client.cancel(a.jobId);
        const b = await client.enqueue(plain, { n: 1 }, { idempotencyKey: 'k' });
        expect(b.jobId).toBe(a.jobId);
        expect(b.row.status).toBe('cancelled');
      });

      it('uniqueFor returns the existing job within the window, and bypasses maxPending', async () => {
        const a = await client.enqueue(deduped, {}, { identityKey: 'report:7' });
        // deduped has maxPending 1: a second distinct job would be refused ...
        await expect(client.enqueue(deduped, {}, { identityKey: 'report:8' })).rejects.toBeInstanceOf(
          MaxPendingExceededError,
        );
        // ... but a uniqueFor hit is returned before the maxPending check.
        const b = await client.enqueue(deduped, {}, { identityKey: 'report:7' });
        expect(b.wasExisting).toBe(true);
        expect(b.jobId).toBe(a.jobId);
        await h.timeTravel(11 * 60_000);
        await client.cancel(a.jobId);
        const c = await client.enqueue(deduped, {}, { identityKey: 'report:7' });
        expect(c.wasExisting).toBe(false);
      });

      it('uniqueFor ignores jobs outside its states and jobs without an identity key', async () => {
        const a = await client.enqueue(deduped, {}, { identityKey: 'x' });
        await client.cancel(a.jobId);
        const b = await client.enqueue(deduped, {}, { identityKey: 'x' });
        expect(b.wasExisting).toBe(false);
      });

      it('refuses a second active job of a singleton actor, naming the blocking job', async () => {
        const a = await client.enqueue(lonely, {});
        expect(a.row.metadata.singleton).toBe(true);
        const err = await client.enqueue(lonely, {}).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(SingletonCollisionError);
        expect((err as SingletonCollisionError).blockingJobId).toBe(a.jobId);
        expect((err as SingletonCollisionError).retryAfterMs).toBeNull();
        await client.cancel(a.jobId);
        const b = await client.enqueue(lonely, {});
        expect(b.row.status).toBe('pending');
      });

      it('enforces maxPending as count >= limit, and a duplicate idempotency key at the limit still raises', async () => {
        await client.enqueue(limited, { n: 1 }, { idempotencyKey: 'dup' });
        await client.enqueue(limited, { n: 2 });
        const err = await client
          .enqueue(limited, { n: 1 }, { idempotencyKey: 'dup' })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(MaxPendingExceededError);
        expect((err as MaxPendingExceededError).currentCount).toBe(2);
        expect((err as MaxPendingExceededError).maxPending).toBe(2);
        expect(await count()).toBe(2);
      });

      it('counts scheduled jobs toward maxPending and frees room when a job ends', async () => {
        await client.enqueue(limited, { n: 1 }, { delay: '1h' });
        const b = await client.enqueue(limited, { n: 2 });
        await expect(client.enqueue(limited, { n: 3 })).rejects.toBeInstanceOf(MaxPendingExceededError);
        await client.cancel(b.jobId);
        await expect(client.enqueue(limited, { n: 4 })).resolves.toBeDefined();
      });

      it('lets a stored actor_config.max_pending override the actor literal', async () => {
        await h.setStoredMaxPending('limited', 3);
        client.invalidateActorCapacityCache();
        for (let n = 0; n < 3; n++) await client.enqueue(limited, { n });
        await expect(client.enqueue(limited, { n: 9 })).rejects.toMatchObject({ maxPending: 3 });
        await h.setStoredMaxPending('limited', null);
        client.invalidateActorCapacityCache();
        await expect(client.enqueue(limited, { n: 9 })).rejects.toMatchObject({ maxPending: 2 });
      });

      it('validates the payload at enqueue and writes nothing when it fails', async () => {
        const err = await client.enqueue(sendEmail, { to: 'secret-not-an-email' }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PayloadValidationError);
        const pve = err as PayloadValidationError;
        expect(pve.actor).toBe('send_email');
        expect(pve.validationErrors[0]?.path).toEqual(['to']);
        expect(JSON.stringify(pve.validationErrors)).not.toContain('secret-not-an-email');
        expect(pve.message).not.toContain('secret-not-an-email');
        await expect(client.enqueue(sendEmail, { to: 42 } as never)).rejects.toBeInstanceOf(
          PayloadValidationError,
        );
        expect(await count()).toBe(0);
      });

      it.each([
        ['empty idempotency key', { idempotencyKey: '' }, 'enqueue.idempotencyKey'],
        ['whitespace idempotency key', { idempotencyKey: '   ' }, 'enqueue.idempotencyKey'],
        ['oversized idempotency key', { idempotencyKey: 'é'.repeat(513) }, 'enqueue.idempotencyKey'],
        [
          'oversized idempotency scope',
          { idempotencyKey: 'k', idempotencyScope: 'x'.repeat(1025) },
          'enqueue.idempotencyScope',
        ],
        ['NUL in identity key', { identityKey: 'a\u0000b' }, 'enqueue.identityKey'],
        ['NUL in fairness key', { fairnessKey: '\u0000' }, 'enqueue.fairnessKey'],
        ['NUL in a tag', { tags: ['ok', 'b\u0000d'] }, 'enqueue.tags[1]'],
        ['NUL in idempotency key', { idempotencyKey: 'k\u0000' }, 'enqueue.idempotencyKey'],
        ['bad queue name', { queue: 'has space' }, 'enqueue.queue'],
        ['non-integer priority', { priority: 1.5 }, 'enqueue.priority'],
        ['invalid date', { scheduledAt: new Date('nope') }, 'enqueue.scheduledAt'],
        ['both scheduledAt and delay', { scheduledAt: new Date(), delay: '1s' }, 'enqueue.delay'],
        ['negative delay', { delay: -5 }, 'enqueue.delay'],
        ['bad startToClose', { startToClose: '5 parsecs' }, 'enqueue.startToClose'],
        ['zero heartbeatTimeout', { heartbeatTimeout: 0 }, 'enqueue.heartbeatTimeout'],
        ['reserved metadata.singleton', { metadata: { singleton: true } }, 'enqueue.metadata.singleton'],
        ['reserved metadata.batch_id', { metadata: { batch_id: 'x' } }, 'enqueue.metadata.batch_id'],
        ['metadata not an object', { metadata: [1, 2] }, 'enqueue.metadata'],
        ['unknown option', { priorty: 3 }, 'enqueue.priorty'],
      ])('rejects %s with a named error and writes nothing', async (_label, opts, field) => {
        const err = await client.enqueue(plain, { n: 1 }, opts as never).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe(field);
        expect((err as InvalidArgumentError).message).toContain(field);
        expect(await count()).toBe(0);
      });

      it('bounds idempotency keys and scopes at exactly 1024 UTF-8 bytes', async () => {
        // 'é' is two UTF-8 bytes: the bound is on bytes, not characters.
        const key1024 = 'é'.repeat(512);
        const a = await client.enqueue(plain, { n: 1 }, { idempotencyKey: key1024 });
        expect(a.row.idempotencyKey).toBe(key1024);
        const b = await client.enqueue(
          plain,
          { n: 2 },
          { idempotencyKey: 'k', idempotencyScope: 's'.repeat(1024) },
        );
        expect(b.row.idempotencyScope).toBe('s'.repeat(1024));
        const err = await client
          .enqueue(plain, { n: 3 }, { idempotencyKey: `${key1024}x` })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe('enqueue.idempotencyKey');
        expect((err as InvalidArgumentError).rule).toBe('must be at most 1024 UTF-8 bytes (got 1025)');
        await expect(
          client.enqueue(plain, { n: 4 }, { idempotencyKey: 'k', idempotencyScope: 's'.repeat(1025) }),
        ).rejects.toThrow(/enqueue\.idempotencyScope.*at most 1024 UTF-8 bytes \(got 1025\)/);
        expect(await count()).toBe(2);
      });
    });

    describe('NUL characters inside JSON payloads and metadata', () => {
      defineNulCases(() => client, count);
    });

    describe('enqueueBatchFast', () => {
      defineFastBatchCases(
        () => client,
        count,
        () => h.begin(),
      );
    });

    describe('exact gates and keys across actors', () => {
      defineGateCases(
        () => client,
        count,
        () => h.begin(),
      );
    });

    describe('enqueueWithConn', () => {
      it('rolls back with the caller transaction', async () => {
        const tx = await h.begin();
        const handle = await client.enqueue(plain, { n: 1 }, { connection: tx.conn });
        expect(await h.backend.get(handle.jobId)).toBeNull();
        await tx.rollback();
        expect(await h.backend.get(handle.jobId)).toBeNull();
        expect(await count()).toBe(0);
      });

      it('commits with the caller transaction', async () => {
        const tx = await h.begin();
        const handle = await client.enqueue(plain, { n: 1 }, { connection: tx.conn });
        await tx.commit();
        expect((await h.backend.get(handle.jobId))?.status).toBe('pending');
      });

      it('applies the enqueue gates inside the transaction', async () => {
        await client.enqueue(limited, { n: 1 });
        const tx = await h.begin();
        await client.enqueue(limited, { n: 2 }, { connection: tx.conn });
        await expect(client.enqueue(limited, { n: 3 }, { connection: tx.conn })).rejects.toBeInstanceOf(
          MaxPendingExceededError,
        );
        await tx.commit();
        expect(await count()).toBe(2);
      });
    });

    describe('enqueueBatch', () => {
      it('inserts every item in one call, in order, with a shared batch id', async () => {
        const batch = await client.enqueueBatch([
          { actor: plain, payload: { n: 1 } },
          { actor: sendEmail, payload: { to: 'b@example.com' }, options: { priority: 3 } },
          { actor: plain, payload: { n: 3 }, options: { delay: '1h' } },
        ]);
        expect(batch.size).toBe(3);
        const rows = batch.jobHandles.map((j) => j.row);
        expect(rows.map((r) => r.actor)).toEqual(['plain', 'send_email', 'plain']);
        expect(rows.map((r) => r.status)).toEqual(['pending', 'pending', 'scheduled']);
        expect(rows[1]?.priority).toBe(3);
        for (const r of rows) expect(r.metadata.batch_id).toBe(batch.batchId);
        const listed = await client.list({ batchId: batch.batchId });
        expect(listed.jobs).toHaveLength(3);
      });

      it('returns each inserted row exactly as reading it back does', async () => {
        const batch = await client.enqueueBatch([
          { actor: plain, payload: { n: 1, nested: { b: [1, 2], a: 'x' } } },
          {
            actor: plain,
            payload: { n: 2 },
            options: {
              delay: '1h',
              identityKey: 'k',
              fairnessKey: 'f',
              idempotencyKey: 'idem',
              tags: ['t1', 't2'],
              metadata: { m: 1 },
              traceId: 'tr',
              startToClose: '5s',
              heartbeatTimeout: '2s',
              scheduleToClose: new Date(Date.now() + 86_400_000),
            },
          },
          // Text the array literal must quote: quotes, backslashes, braces, commas, "NULL", unicode.
          {
            actor: budgeted,
            payload: { s: 'a "q" \\ {x,y} NULL é 😀', n: null, list: ['NULL', ''] },
            options: {
              identityKey: 'NULL',
              tags: ['{a}', 'b"c'],
              scheduledAt: new Date(Date.now() + 60_000),
            },
          },
        ]);
        for (const h of batch.jobHandles) {
          const read = await client.getRow(h.jobId);
          expect(h.row).toEqual(read);
        }
      });

      it('returns the existing job for idempotency collisions, including within the batch', async () => {
        const first = await client.enqueue(plain, { n: 0 }, { idempotencyKey: 'a' });
        const batch = await client.enqueueBatch([
          { actor: plain, payload: { n: 1 }, options: { idempotencyKey: 'a' } },
          { actor: plain, payload: { n: 2 }, options: { idempotencyKey: 'b' } },
          { actor: plain, payload: { n: 3 }, options: { idempotencyKey: 'b' } },
        ]);
        const [h0, h1, h2] = batch.jobHandles;
        expect(h0?.jobId).toBe(first.jobId);
        expect(h0?.wasExisting).toBe(true);
        expect(h1?.wasExisting).toBe(false);
        expect(h2?.jobId).toBe(h1?.jobId);
        expect(h2?.wasExisting).toBe(true);
        expect(await count()).toBe(2);
      });

      it('validates every item before writing anything', async () => {
        const err = await client
          .enqueueBatch([
            { actor: plain, payload: { n: 1 } },
            { actor: sendEmail, payload: { to: 'nope' } },
          ])
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PayloadValidationError);
        expect((err as Error).message).toContain('items[1]');
        const err2 = await client
          .enqueueBatch([
            { actor: plain, payload: { n: 1 } },
            { actor: plain, payload: { n: 2 }, options: { idempotencyKey: ' ' } },
          ])
          .catch((e: unknown) => e);
        expect((err2 as InvalidArgumentError).field).toBe('items[1].options.idempotencyKey');
        expect(await count()).toBe(0);
      });

      it('rejects empty and oversized batches', async () => {
        await expect(client.enqueueBatch([])).rejects.toBeInstanceOf(InvalidArgumentError);
        const many = Array.from({ length: 1001 }, (_, n) => ({ actor: plain, payload: { n } }));
        await expect(client.enqueueBatch(many)).rejects.toThrow(/at most 1000/);
        expect(await count()).toBe(0);
      });

      it('names the slip when an actor is passed where the items go, and writes nothing', async () => {
        const slip = client.enqueueBatch as unknown as (a: unknown, b: unknown) => Promise<unknown>;
        const err = await slip.call(client, plain, [{ payload: { n: 1 } }]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe('enqueueBatch.items');
        expect((err as InvalidArgumentError).rule).toContain(`not the actor '${plain.name}'`);
        expect((err as InvalidArgumentError).rule).toContain('[{ actor, payload }]');
        expect(await count()).toBe(0);
      });

      it('accepts exactly 1000 items', async () => {
        const many = Array.from({ length: 1000 }, (_, n) => ({ actor: plain, payload: { n } }));
        const batch = await client.enqueueBatch(many);
        expect(new Set(batch.jobHandles.map((j) => j.jobId)).size).toBe(1000);
        expect(batch.jobHandles[999]?.row.payload).toEqual({ n: 999 });
      });

      it('checks maxPending as existing + batch > limit (a batch exactly filling the limit is admitted)', async () => {
        await client.enqueueBatch([
          { actor: limited, payload: { n: 1 } },
          { actor: limited, payload: { n: 2 } },
        ]);
        await expect(client.enqueueBatch([{ actor: limited, payload: { n: 3 } }])).rejects.toBeInstanceOf(
          MaxPendingExceededError,
        );
        expect(await count()).toBe(2);
      });

      it('commits and rolls back with a caller transaction', async () => {
        const tx = await h.begin();
        await client.enqueueBatch([{ actor: plain, payload: { n: 1 } }], { connection: tx.conn });
        await tx.rollback();
        expect(await count()).toBe(0);
        const tx2 = await h.begin();
        await client.enqueueBatch([{ actor: plain, payload: { n: 1 } }], { connection: tx2.conn });
        await tx2.commit();
        expect(await count()).toBe(1);
      });
    });

    describe('reads', () => {
      it('get returns null for an unknown job and rejects a non-UUID id', async () => {
        expect(await client.getRow('018f0000-0000-7000-8000-000000000000')).toBeNull();
        expect(await client.get('018f0000-0000-7000-8000-000000000000')).toBeNull();
        await expect(client.getRow('not-a-uuid')).rejects.toBeInstanceOf(InvalidArgumentError);
      });

      it('filters by queue, actor, identity key, tags, batch and status', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { identityKey: 'i1', tags: ['x', 'y'] });
        const b = await client.enqueue(plain, { n: 2 }, { queue: 'q2', tags: ['x'] });
        const c = await client.enqueue(sendEmail, { to: 'c@example.com' }, { delay: '1h' });
        await client.cancel(b.jobId);
        const ids = async (f: Parameters<TaskQ['list']>[0]): Promise<string[]> =>
          (await client.list(f)).jobs.map((j) => j.id).sort();
        expect(await ids({ queue: 'default' })).toEqual([a.jobId]);
        expect(await ids({ actor: 'plain' })).toEqual([a.jobId, b.jobId].sort());
        expect(await ids({ identityKey: 'i1' })).toEqual([a.jobId]);
        expect(await ids({ tags: ['x'] })).toEqual([a.jobId, b.jobId].sort());
        expect(await ids({ tags: ['x', 'y'] })).toEqual([a.jobId]);
        expect(await ids({ tags: [] })).toEqual([a.jobId, b.jobId, c.jobId].sort());
        expect(await ids({ status: 'scheduled' })).toEqual([c.jobId]);
        expect(await ids({ status: ['pending', 'cancelled'] })).toEqual([a.jobId, b.jobId].sort());
        expect(await ids({ status: [] })).toEqual([]);
        expect(await ids({ active: true })).toEqual([a.jobId, c.jobId].sort());
        expect(await ids({ active: false })).toEqual([b.jobId]);
        expect(await ids({ batchId: '018f0000-0000-7000-8000-000000000000' })).toEqual([]);
      });

      it.each([
        ['status with active', { status: 'pending', active: true }, 'filter.status'],
        ['unknown status', { status: 'snoozed' }, 'filter.status'],
        ['unknown status in a list', { status: ['pending', 'done'] }, 'filter.status'],
        ['negative limit', { limit: -1 }, 'filter.limit'],
        ['NUL in queue', { queue: 'a\u0000' }, 'filter.queue'],
        ['NUL in actor', { actor: '\u0000' }, 'filter.actor'],
        ['NUL in identity key', { identityKey: 'x\u0000' }, 'filter.identityKey'],
        ['NUL in a tag', { tags: ['\u0000'] }, 'filter.tags[0]'],
        ['bad batch id', { batchId: 'nope' }, 'filter.batchId'],
        ['unknown ordering', { orderBy: 'random' }, 'filter.orderBy'],
        ['garbage cursor', { cursor: 'garbage' }, 'filter.cursor'],
      ])('rejects a filter with %s', async (_label, filter, field) => {
        const err = await client.list(filter as never).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe(field);
      });

      it('pages every ordering with cursors over rows sharing a timestamp, without gaps or repeats', async () => {
        // One batch: every row gets the same created_at and scheduled_at.
        const batch = await client.enqueueBatch(
          Array.from({ length: 25 }, (_, n) => ({
            actor: plain,
            payload: { n },
            options: { priority: n % 3 },
          })),
        );
        for (const h of batch.jobHandles.slice(0, 10)) await client.cancel(h.jobId);
        for (const orderBy of ['scheduled_at_asc', 'created_at_desc', 'finished_at_desc'] as const) {
          const seen: JobRow[] = [];
          let cursor: string | undefined;
          let pages = 0;
          for (;;) {
            const page = await client.list({ orderBy, limit: 4, cursor });
            seen.push(...page.jobs);
            pages++;
            if (!page.nextCursor) break;
            cursor = page.nextCursor;
          }
          expect(seen.map((r) => r.id).sort()).toEqual(batch.jobHandles.map((h) => h.jobId).sort());
          expect(pages).toBe(7);
          const all = await client.list({ orderBy, limit: 100 });
          expect(seen.map((r) => r.id)).toEqual(all.jobs.map((r) => r.id));
        }
        const byPriority = (await client.list({ limit: 100 })).jobs.map((r) => r.priority);
        expect(byPriority).toEqual([...byPriority].sort((x, y) => y - x));
        const finished = (await client.list({ orderBy: 'finished_at_desc', limit: 100 })).jobs;
        expect(finished.slice(0, 10).every((r) => r.finishedAt !== null)).toBe(true);
        expect(finished.slice(10).every((r) => r.finishedAt === null)).toBe(true);
      });

      it('pages finished and live jobs interleaved, filtered or not, in each ordering', async () => {
        // Postgres reads finished and live jobs through different indexes and merges them: here
        // the two alternate in every ordering, so each page takes rows from both parts.
        const handles = [];
        for (let n = 0; n < 12; n++)
          handles.push(
            await client.enqueue(
              plain,
              { n },
              { priority: n % 2, tags: n % 3 === 0 ? ['t'] : [], ...(n % 4 === 3 ? { delay: `${n}m` } : {}) },
            ),
          );
        for (const h of handles.filter((_, n) => n % 3 === 1)) await client.cancel(h.jobId);
        const ms = (d: Date | null) => (d === null ? null : d.getTime());
        // Ids grow with creation, and the cancels ran in creation order: sorting by the
        // millisecond and then the id is the database's order at the microsecond.
        const compare: Record<string, (a: JobRow, b: JobRow) => number> = {
          scheduled_at_asc: (a, b) =>
            b.priority - a.priority ||
            ms(a.scheduledAt)! - ms(b.scheduledAt)! ||
            (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
          created_at_desc: (a, b) => ms(b.createdAt)! - ms(a.createdAt)! || (a.id < b.id ? 1 : -1),
          finished_at_desc: (a, b) =>
            (a.finishedAt === null ? 1 : 0) - (b.finishedAt === null ? 1 : 0) ||
            (ms(b.finishedAt) ?? 0) - (ms(a.finishedAt) ?? 0) ||
            (a.id < b.id ? 1 : -1),
        };
        const filters = [
          {},
          { tags: ['t'] },
          { status: ['pending', 'cancelled'] as JobStatus[] },
          { actor: 'plain' },
        ];
        for (const orderBy of ['scheduled_at_asc', 'created_at_desc', 'finished_at_desc'] as const) {
          for (const filter of filters) {
            const all = (await client.list({ ...filter, orderBy, limit: 1000 })).jobs;
            expect(all.length).toBeGreaterThan(2);
            expect(all.map((r) => r.id)).toEqual([...all].sort(compare[orderBy]).map((r) => r.id));
            const seen: string[] = [];
            let cursor: string | undefined;
            do {
              const page = await client.list({ ...filter, orderBy, limit: 2, cursor });
              seen.push(...page.jobs.map((r) => r.id));
              cursor = page.nextCursor ?? undefined;
            } while (cursor !== undefined);
            expect(seen).toEqual(all.map((r) => r.id));
          }
        }
      });

      it('pages over the whole range of dates, at microsecond precision past the year 2255', async () => {
        // scheduled_at in µs exceeds a safe integer after 2255: cursors keep it exact (bigint).
        const dates = [
          '0001-01-01T00:00:00.000Z',
          '1969-12-31T23:59:59.999Z',
          '2300-06-01T00:00:00.001Z',
          '2300-06-01T00:00:00.002Z',
          '9999-12-31T23:59:59.999Z',
        ];
        const ids = [];
        for (const d of dates)
          ids.push((await client.enqueue(plain, { n: 1 }, { scheduledAt: new Date(d) })).jobId);
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.list({ limit: 1, ...(cursor === undefined ? {} : { cursor }) });
          seen.push(...page.jobs.map((j) => j.id));
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        expect(seen).toEqual(ids);
      });

      it('refuses a page larger than 1,000 rows and unknown filter fields, naming the nearest', async () => {
        const big = await client.list({ limit: 1001 }).catch((e: unknown) => e);
        expect((big as InvalidArgumentError).field).toBe('filter.limit');
        const typo = await client.list({ actors: 'plain' } as never).catch((e: unknown) => e);
        expect((typo as InvalidArgumentError).rule).toBe('is not a filter field (did you mean actor?)');
        expect((await client.list({ limit: 1000 })).jobs).toEqual([]);
      });

      it('returns no cursor when the last page is exactly full', async () => {
        await client.enqueueBatch(Array.from({ length: 4 }, (_, n) => ({ actor: plain, payload: { n } })));
        const p1 = await client.list({ limit: 2 });
        const p2 = await client.list({ limit: 2, cursor: p1.nextCursor ?? undefined });
        expect(p2.jobs).toHaveLength(2);
        expect(p2.nextCursor).toBeNull();
        expect((await client.list({ limit: 0 })).jobs).toEqual([]);
      });

      it('rejects a cursor used with another ordering', async () => {
        await client.enqueueBatch(Array.from({ length: 3 }, (_, n) => ({ actor: plain, payload: { n } })));
        const p1 = await client.list({ limit: 1, orderBy: 'created_at_desc' });
        const err = await client
          .list({ limit: 1, cursor: p1.nextCursor!, orderBy: 'finished_at_desc' })
          .catch((e: unknown) => e);
        expect((err as InvalidArgumentError).rule).toMatch(/created_at_desc/);
      });

      it('counts pending+scheduled per actor and active jobs per queue', async () => {
        await client.enqueue(plain, { n: 1 });
        await client.enqueue(plain, { n: 2 }, { delay: '1h' });
        const c = await client.enqueue(plain, { n: 3 }, { queue: 'other' });
        await client.enqueue(sendEmail, { to: 'x@example.com' });
        await client.cancel(c.jobId);
        const counts = await h.backend.countPendingJobs(['plain', 'send_email', 'nobody']);
        expect(counts.get('plain')).toBe(2);
        expect(counts.get('send_email')).toBe(1);
        expect(counts.has('nobody')).toBe(false);
        expect(await client.countActiveJobs(['default', 'emails'])).toBe(3);
        expect(await client.countActiveJobs(['other'])).toBe(0);
        expect(await client.countActiveJobs([])).toBe(0);
      });
    });

    describe('cancel and retry', () => {
      it('cancels pending and scheduled jobs at once and records the event', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        const b = await client.enqueue(plain, { n: 2 }, { delay: '1h' });
        const ra = await client.cancel(a.jobId, 'no longer needed');
        expect(ra).toEqual({
          jobId: a.jobId,
          previousStatus: 'pending',
          newStatus: 'cancelled',
          cancellationInitiated: true,
        });
        const rb = await b.cancel();
        expect(rb.previousStatus).toBe('scheduled');
        expect(rb.newStatus).toBe('cancelled');
        const row = await a.refresh();
        expect(row.finishedAt).not.toBeNull();
        expect(row.cancelRequestedAt).not.toBeNull();
        expect(row.errorMessage).toBe('no longer needed');
        const events = await a.events();
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({
          jobId: a.jobId,
          kind: 'state_change',
          detail: { from_state: 'pending', to_state: 'cancelled', reason: 'cancel_requested' },
        });
      });

      it('leaves terminal jobs alone and raises for unknown jobs', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await client.cancel(a.jobId);
        const again = await client.cancel(a.jobId);
        expect(again.cancellationInitiated).toBe(false);
        expect(again.newStatus).toBe('cancelled');
        expect((await a.events()).length).toBe(1);
        await expect(client.cancel('018f0000-0000-7000-8000-000000000000')).rejects.toBeInstanceOf(
          JobNotFoundError,
        );
      });

      it('retryJob sends a terminal job back to pending with a fresh budget, and refuses active jobs', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        expect(await client.retryJob(a.jobId)).toBe(false);
        await client.cancel(a.jobId, 'oops');
        expect(await client.retryJob(a.jobId)).toBe(true);
        const row = await a.refresh();
        expect(row).toMatchObject({
          status: 'pending',
          attempt: 0,
          errorClass: null,
          errorMessage: null,
          finishedAt: null,
          cancelPhase: 0,
          cancelRequestedAt: null,
        });
        const events = await a.events();
        expect(events.map((e) => e.detail.to_state)).toEqual(['cancelled', 'pending']);
        expect(events[1]?.detail.reason).toBe('admin_retry');
        expect(await a.status()).toBe('pending');
      });

      it('retryJob of a singleton job refuses while another is active', async () => {
        const a = await client.enqueue(lonely, {});
        await client.cancel(a.jobId);
        await client.enqueue(lonely, {});
        await expect(client.retryJob(a.jobId)).rejects.toBeInstanceOf(SingletonCollisionError);
      });

      it('retryWhere retries every retryable job the filter matches, and previews the count', async () => {
        const a = await client.enqueue(plain, { n: 1 }, { tags: ['outage'] });
        const b = await client.enqueue(plain, { n: 2 }, { tags: ['outage'] });
        const other = await client.enqueue(plain, { n: 3 });
        const waiting = await client.enqueue(plain, { n: 4 }, { tags: ['outage'] });
        for (const j of [a, b, other]) await client.cancel(j.jobId, 'outage');
        const waitingEvents = (await waiting.events()).length;
        expect(await client.retryWhere({ tags: ['outage'] }, { dryRun: true })).toEqual({
          dryRun: true,
          retried: 2,
        });
        expect(await a.status()).toBe('cancelled');
        const result = await client.retryWhere({ tags: ['outage'] });
        expect(result).toEqual({ retried: 2, retriedIds: [a.jobId, b.jobId].sort() });
        for (const j of [a, b]) {
          expect(await j.refresh()).toMatchObject({
            status: 'pending',
            attempt: 0,
            errorClass: null,
            finishedAt: null,
          });
          expect((await j.events()).at(-1)?.detail).toMatchObject({
            to_state: 'pending',
            reason: 'admin_retry',
          });
        }
        expect(await other.status()).toBe('cancelled');
        expect(await waiting.status()).toBe('pending');
        expect((await waiting.events()).length).toBe(waitingEvents);
        expect(await client.retryWhere({ tags: ['outage'] }, { dryRun: true })).toEqual({
          dryRun: true,
          retried: 0,
        });
        expect(await client.retryWhere({ status: ['failed', 'cancelled'], actor: plain.name })).toMatchObject(
          {
            retried: 1,
            retriedIds: [other.jobId],
          },
        );
      });

      it('retryWhere refuses filters that retry nothing or everything, writing nothing', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        await client.cancel(a.jobId);
        await expect(client.retryWhere({})).rejects.toThrow(/retryWhere\(\) needs at least one predicate/);
        await expect(client.retryWhere({ status: ['cancelled', 'pending'] })).rejects.toThrow(
          /"pending" is invalid: cannot be retried/,
        );
        await expect(client.retryWhere({ active: true })).rejects.toThrow(
          /matches no job retryWhere can retry/,
        );
        await expect(client.retryWhere({ actor: plain.name, limit: 5 })).rejects.toThrow(
          /is not accepted by retryWhere/,
        );
        await expect(
          client.retryWhere({ actor: plain.name }, { dryRun: 'yes' as unknown as boolean }),
        ).rejects.toThrow(/retryWhere\.options\.dryRun/);
        expect(await a.status()).toBe('cancelled');
        expect(await client.retryWhere({}, { allowEmptyFilter: true })).toMatchObject({ retried: 1 });
      });

      it('retryWhere of two singleton jobs of one actor refuses and retries nothing', async () => {
        const a = await client.enqueue(lonely, {});
        await client.cancel(a.jobId);
        const b = await client.enqueue(lonely, {});
        await client.cancel(b.jobId);
        await expect(client.retryWhere({ actor: lonely.name })).rejects.toBeInstanceOf(
          SingletonCollisionError,
        );
        expect([await a.status(), await b.status()]).toEqual(['cancelled', 'cancelled']);
        expect(await client.retryWhere({ actor: lonely.name }, { dryRun: true })).toMatchObject({
          retried: 2,
        });
      });
    });

    describe('attempts and events', () => {
      it('stores attempt rows in order', async () => {
        const a = await client.enqueue(plain, { n: 1 });
        const t0 = new Date(Date.now() - 1000);
        await h.backend.writeAttempt({
          jobId: a.jobId,
          attempt: 1,
          workerId: '018f0000-0000-7000-8000-0000000000aa',
          startedAt: t0,
          finishedAt: new Date(),
          durationMs: 12.5,
          outcome: 'failed',
          errorClass: 'Boom',
          errorMessage: 'it broke',
          errorTraceback: 'at x',
        });
        await h.backend.writeAttempt({
          jobId: a.jobId,
          attempt: 2,
          workerId: null,
          startedAt: null,
          finishedAt: new Date(),
          durationMs: null,
          outcome: 'succeeded',
          errorClass: null,
          errorMessage: null,
          errorTraceback: null,
        });
        const attempts = await a.attempts();
        expect(attempts.map((x) => [x.attempt, x.outcome])).toEqual([
          [1, 'failed'],
          [2, 'succeeded'],
        ]);
        expect(attempts[0]).toMatchObject({
          errorClass: 'Boom',
          errorMessage: 'it broke',
          durationMs: 12.5,
          workerId: '018f0000-0000-7000-8000-0000000000aa',
        });
        expect(attempts[0]?.startedAt?.getTime()).toBe(t0.getTime());
      });
    });
  });
}
