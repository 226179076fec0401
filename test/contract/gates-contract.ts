/**
 * Contract cases for the exact enqueue gates and idempotency keys across actors (issue 62, points 1
 * and 6): `uniqueFor` in batches (a repeated identity key makes one job), `maxPending` in batches
 * (the whole batch or nothing), gate locks held by a caller's transaction, and a key reused for
 * another actor (a typed error, nothing written). Run inside the Backend contract
 * (backend-contract.ts), against its client and harness. The concurrency itself is proven on
 * Postgres by test/client/exact-gates.test.ts, from several processes.
 */
import { describe, expect, it } from 'vitest';

import type { TaskQ } from '../../src/client/taskq.js';
import type { ClientLike } from '../../src/db/driver.js';
import { IdempotencyKeyConflict, MaxPendingExceededError } from '../../src/errors/index.js';
import { deduped, limited, plain, sendEmail } from '../helpers/actors.js';
import { holdsFor } from '../helpers/wait.js';

interface Tx {
  conn: ClientLike;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export function defineGateCases(
  client: () => TaskQ,
  count: () => Promise<number>,
  begin: () => Promise<Tx>,
): void {
  describe('uniqueFor in batches', () => {
    it('makes one job for an identity key repeated in a batch, and returns a stored one', async () => {
      const stored = await client().enqueue(deduped, {}, { identityKey: 'r:1' });
      const batch = await client().enqueueBatch([
        { actor: deduped, payload: {}, options: { identityKey: 'r:1' } },
        { actor: plain, payload: { n: 1 } },
      ]);
      expect(batch.jobHandles[0]?.jobId).toBe(stored.jobId);
      expect(batch.jobHandles[0]?.wasExisting).toBe(true);
      await client().cancel(stored.jobId);
      const again = await client().enqueueBatch([
        { actor: deduped, payload: {}, options: { identityKey: 'r:2' } },
        { actor: deduped, payload: {}, options: { identityKey: 'r:2' } },
      ]);
      const [a, b] = again.jobHandles;
      expect(a?.wasExisting).toBe(false);
      expect(b?.jobId).toBe(a?.jobId);
      expect(b?.wasExisting).toBe(true);
      // One job per key: deduped's maxPending of 1 admits the batch, whose repeat bypasses it.
      expect((await client().list({ actor: 'deduped', status: ['pending'] })).jobs).toHaveLength(1);
      expect(await count()).toBe(3);
    });
  });

  describe('maxPending in batches', () => {
    it('refuses a batch that would pass the limit as a whole, writing nothing', async () => {
      await client().enqueue(limited, { n: 0 });
      const err = await client()
        .enqueueBatch([
          { actor: plain, payload: { n: 1 } },
          { actor: limited, payload: { n: 1 } },
          { actor: limited, payload: { n: 2 } },
        ])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MaxPendingExceededError);
      expect(err).toMatchObject({ actor: 'limited', currentCount: 1, maxPending: 2 });
      expect(await count()).toBe(1);
      const ok = await client().enqueueBatch([
        { actor: plain, payload: { n: 1 } },
        { actor: limited, payload: { n: 1 } },
      ]);
      expect(ok.size).toBe(2);
      expect(await count()).toBe(3);
    });

    it('counts a batch inside a caller transaction against the limit, and a later caller waits for it', async () => {
      const tx = await begin();
      await client().enqueueBatch(
        [
          { actor: limited, payload: { n: 1 } },
          { actor: limited, payload: { n: 2 } },
        ],
        { connection: tx.conn },
      );
      // The transaction holds limited's gate: a caller outside it waits (an ungated actor and
      // another gated actor do not), and then sees the committed jobs.
      let settled = false;
      const later = client()
        .enqueue(limited, { n: 3 })
        .finally(() => (settled = true));
      later.catch(() => undefined);
      await client().enqueue(plain, { n: 1 });
      await client().enqueue(deduped, {}, { identityKey: 'other' });
      await holdsFor(() => !settled, 200, 'the gated enqueue waiting for the transaction');
      await tx.commit();
      await expect(later).rejects.toBeInstanceOf(MaxPendingExceededError);
      expect((await client().list({ actor: 'limited' })).jobs).toHaveLength(2);
    });

    it('does not count a rolled-back transaction', async () => {
      const tx = await begin();
      await client().enqueue(limited, { n: 1 }, { connection: tx.conn });
      await client().enqueue(limited, { n: 2 }, { connection: tx.conn });
      const later = client().enqueue(limited, { n: 3 });
      await tx.rollback();
      await expect(later).resolves.toBeDefined();
      expect(await count()).toBe(1);
    });
  });

  describe('idempotency keys across actors', () => {
    it("refuses another actor's key on a single enqueue, naming both actors, and writes nothing", async () => {
      const held = await client().enqueue(plain, { n: 1 }, { idempotencyKey: 'order:9' });
      const err = await client()
        .enqueue(sendEmail, { to: 'secret@example.com' }, { idempotencyKey: 'order:9' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(IdempotencyKeyConflict);
      expect(err).toMatchObject({
        code: 'TASKQ_IDEMPOTENCY_KEY_CONFLICT',
        idempotencyKey: 'order:9',
        idempotencyScope: '',
        existingActor: 'plain',
        requestedActor: 'send_email',
        existingJobId: held.jobId,
      });
      expect((err as Error).message).toContain('order:9');
      expect((err as Error).message).not.toContain('secret@example.com');
      expect(await count()).toBe(1);
      // The same actor keeps getting its job back.
      const same = await client().enqueue(plain, { n: 2 }, { idempotencyKey: 'order:9' });
      expect(same.jobId).toBe(held.jobId);
      expect(same.wasExisting).toBe(true);
      // Another scope is another key.
      await expect(
        client().enqueue(
          sendEmail,
          { to: 'a@example.com' },
          { idempotencyKey: 'order:9', idempotencyScope: 'mail' },
        ),
      ).resolves.toBeDefined();
    });

    it("refuses a batch holding another actor's stored key, or one key for two actors, and writes nothing", async () => {
      const held = await client().enqueue(plain, { n: 1 }, { idempotencyKey: 'k1' });
      const err = await client()
        .enqueueBatch([
          { actor: plain, payload: { n: 2 } },
          { actor: plain, payload: { n: 3 }, options: { idempotencyKey: 'k1' } },
          { actor: sendEmail, payload: { to: 'a@example.com' }, options: { idempotencyKey: 'k1' } },
        ])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(IdempotencyKeyConflict);
      expect(err).toMatchObject({ existingActor: 'plain', requestedActor: 'send_email' });
      expect(await count()).toBe(1);
      const err2 = await client()
        .enqueueBatch([
          { actor: plain, payload: { n: 2 }, options: { idempotencyKey: 'k2' } },
          { actor: sendEmail, payload: { to: 'a@example.com' }, options: { idempotencyKey: 'k2' } },
        ])
        .catch((e: unknown) => e);
      expect(err2).toBeInstanceOf(IdempotencyKeyConflict);
      expect(err2).toMatchObject({
        existingActor: 'plain',
        requestedActor: 'send_email',
        existingJobId: null,
      });
      expect(await count()).toBe(1);
      const tx = await begin();
      await expect(
        client().enqueueBatch(
          [{ actor: sendEmail, payload: { to: 'a@example.com' }, options: { idempotencyKey: 'k1' } }],
          {
            connection: tx.conn,
          },
        ),
      ).rejects.toBeInstanceOf(IdempotencyKeyConflict);
      await tx.commit();
      expect(await count()).toBe(1);
      expect((await client().getRow(held.jobId))?.actor).toBe('plain');
    });
  });
}
