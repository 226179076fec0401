/**
 * Contract cases for `enqueueBatchFast` (the COPY path on Postgres): the same jobs as `enqueueBatch`
 * writes, all or nothing, no conflict handling, `maxPending` for the whole batch. Run inside the Backend contract
 * (backend-contract.ts), against its client and harness.
 */
import { expect, it } from 'vitest';

import type { TaskQ } from '../../src/client/taskq.js';
import type { ClientLike } from '../../src/db/driver.js';
import {
  DuplicateIdempotencyKeyError,
  InvalidArgumentError,
  MaxPendingExceededError,
  PayloadValidationError,
  SingletonCollisionError,
} from '../../src/errors/index.js';
import type { JobRow } from '../../src/backend/types.js';
import { budgeted, deduped, limited, lonely, plain, sendEmail } from '../helpers/actors.js';

interface Tx {
  conn: ClientLike;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** Items that exercise every column and the COPY text escapes (tab, newline, CR, backslash, \N). */
function variedItems(): Parameters<TaskQ['enqueueBatchFast']>[0] {
  return [
    { actor: plain, payload: { n: 1 } },
    { actor: sendEmail, payload: { to: 'b@example.com' }, options: { priority: 3 } },
    {
      actor: plain,
      payload: { n: 2 },
      options: {
        delay: '1h',
        identityKey: 'k\tey',
        fairnessKey: 'f\\air',
        tags: ['t1', 'tab\there', 'line\nbreak', '\\N', 'NULL', '{a}', 'b"c'],
        metadata: { m: 'cr\rhere', nested: { q: '"' } },
        traceId: 'tr',
        spanId: 'sp',
        startToClose: '5s',
        heartbeatTimeout: '2s',
        scheduleToClose: new Date(Date.now() + 86_400_000),
      },
    },
    {
      actor: budgeted,
      payload: { s: 'a "q" \\ \t \n \r \\N {x,y} NULL é 😀', n: null, list: ['NULL', ''] },
      options: { scheduledAt: new Date(Date.now() + 60_000), idempotencyKey: 'idem\\key' },
    },
  ];
}

/** A row without what differs between two enqueues of the same item (id, batch, times). */
function comparable(r: JobRow): Partial<JobRow> {
  const { id, createdAt, scheduledAt, scheduleToClose, metadata, idempotencyKey, ...rest } = r;
  void id;
  void createdAt;
  void scheduledAt;
  void scheduleToClose;
  void idempotencyKey;
  const { batch_id, ...meta } = metadata;
  void batch_id;
  return { ...rest, metadata: meta };
}

/** JSON with object keys sorted (Postgres jsonb does not keep the caller's key order). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}

/**
 * Defines the cases; `client()` is the contract's client of the current case, `count()` its job
 * count, `begin()` opens a caller transaction.
 */
export function defineFastBatchCases(
  client: () => TaskQ,
  count: () => Promise<number>,
  begin: () => Promise<Tx>,
): void {
  const rowsOfBatch = async (batchId: string): Promise<JobRow[]> =>
    (await client().list({ batchId, limit: 1000 })).jobs;

  it('writes every item with a shared batch id and returns the count', async () => {
    const batchId = '01900000-0000-7000-8000-00000000fa57';
    const n = await client().enqueueBatchFast(variedItems(), { batchId });
    expect(n).toBe(4);
    const rows = await rowsOfBatch(batchId);
    expect(rows).toHaveLength(4);
    for (const r of rows) expect(r.metadata.batch_id).toBe(batchId);
    const byActor = (a: string): JobRow[] => rows.filter((r) => r.actor === a);
    expect(
      byActor('plain')
        .map((r) => r.status)
        .sort(),
    ).toEqual(['pending', 'scheduled']);
    expect(byActor('send_email')[0]?.priority).toBe(3);
    expect(byActor('budgeted')[0]?.status).toBe('scheduled');
  });

  it('stores each job exactly as enqueueBatch does (every column, text with COPY escapes)', async () => {
    const viaBatch = await client().enqueueBatch(
      variedItems().map((item) =>
        item.options?.idempotencyKey
          ? { ...item, options: { ...item.options, idempotencyKey: 'other' } }
          : item,
      ),
    );
    const batchId = '01900000-0000-7000-8000-00000000fa58';
    await client().enqueueBatchFast(variedItems(), { batchId });
    const fast = await rowsOfBatch(batchId);
    for (const h of viaBatch.jobHandles) {
      const expected = comparable(h.row);
      const twin = fast.find((r) => canonical(r.payload) === canonical(h.row.payload));
      expect(twin, `no fast twin of ${canonical(h.row.payload)}`).toBeDefined();
      expect(comparable(twin!)).toEqual(expected);
      // Deadlines and run times come from the database clock at enqueue: both set, or both not.
      expect(twin!.scheduleToClose === null).toBe(h.row.scheduleToClose === null);
    }
    const keyed = fast.find((r) => r.actor === 'budgeted');
    expect(keyed?.idempotencyKey).toBe('idem\\key');
  });

  it('decides pending and scheduled with the database clock, and anchors deadlines at enqueue', async () => {
    const before = Date.now();
    const batchId = '01900000-0000-7000-8000-00000000fa59';
    await client().enqueueBatchFast(
      [
        { actor: plain, payload: { n: 1 }, options: { scheduledAt: new Date(Date.now() - 60_000) } },
        { actor: plain, payload: { n: 2 }, options: { delay: '10m' } },
        // The retry time budget (1 h) is a schedule-to-close interval from the enqueue.
        { actor: budgeted, payload: { n: 3 } },
      ],
      { batchId },
    );
    const rows = await rowsOfBatch(batchId);
    const byN = (n: number): JobRow => rows.find((r) => (r.payload as { n: number }).n === n)!;
    // A time in the past runs now (clamped to the insert time), as enqueueBatch does.
    expect(byN(1).status).toBe('pending');
    expect(byN(1).scheduledAt.getTime()).toBeGreaterThanOrEqual(byN(1).createdAt.getTime() - 1);
    expect(byN(2).status).toBe('scheduled');
    expect(byN(2).scheduledAt.getTime() - byN(2).createdAt.getTime()).toBeGreaterThanOrEqual(599_000);
    const stc = byN(3).scheduleToClose!.getTime() - byN(3).createdAt.getTime();
    expect(stc).toBeGreaterThanOrEqual(3_599_000);
    expect(stc).toBeLessThanOrEqual(3_601_000);
    expect(byN(3).createdAt.getTime()).toBeGreaterThanOrEqual(before - 60_000);
  });

  it('refuses the whole batch when two items share an idempotency key; nothing is written', async () => {
    const err = await client()
      .enqueueBatchFast([
        { actor: plain, payload: { n: 1 }, options: { idempotencyKey: 'a' } },
        { actor: plain, payload: { n: 2 } },
        { actor: plain, payload: { n: 3 }, options: { idempotencyKey: 'a' } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DuplicateIdempotencyKeyError);
    const e = err as DuplicateIdempotencyKeyError;
    expect(e.where).toBe('batch');
    expect(e.idempotencyKey).toBe('a');
    expect(e.actor).toBe('plain');
    expect(e.code).toBe('TASKQ_DUPLICATE_IDEMPOTENCY_KEY');
    expect(await count()).toBe(0);
  });

  it('refuses the whole batch when a key is already stored; nothing more is written', async () => {
    await client().enqueue(plain, { n: 0 }, { idempotencyKey: 'taken' });
    const err = await client()
      .enqueueBatchFast([
        { actor: plain, payload: { n: 1 } },
        { actor: plain, payload: { n: 2 }, options: { idempotencyKey: 'taken' } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DuplicateIdempotencyKeyError);
    const e = err as DuplicateIdempotencyKeyError;
    expect(e.where).toBe('stored');
    expect(e.idempotencyKey).toBe('taken');
    expect(e.idempotencyScope).toBe('');
    expect(await count()).toBe(1);
    // The same key under another scope is a different key.
    await expect(
      client().enqueueBatchFast([
        { actor: plain, payload: { n: 3 }, options: { idempotencyKey: 'taken', idempotencyScope: 's' } },
      ]),
    ).resolves.toBe(1);
  });

  it('refuses a second active job of a singleton actor; nothing is written', async () => {
    await client().enqueue(lonely, {});
    await expect(
      client().enqueueBatchFast([
        { actor: plain, payload: { n: 1 } },
        { actor: lonely, payload: {} },
      ]),
    ).rejects.toBeInstanceOf(SingletonCollisionError);
    expect(await count()).toBe(1);
  });

  it('validates every item and the options before writing anything', async () => {
    const bad = await client()
      .enqueueBatchFast([
        { actor: plain, payload: { n: 1 } },
        { actor: sendEmail, payload: { to: 'nope' } },
      ])
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(PayloadValidationError);
    expect((bad as Error).message).toContain('items[1]');
    const badKey = await client()
      .enqueueBatchFast([{ actor: plain, payload: { n: 1 }, options: { idempotencyKey: ' ' } }])
      .catch((e: unknown) => e);
    expect((badKey as InvalidArgumentError).field).toBe('items[0].options.idempotencyKey');
    const badId = await client()
      .enqueueBatchFast([{ actor: plain, payload: { n: 1 } }], { batchId: 'nope' })
      .catch((e: unknown) => e);
    expect((badId as InvalidArgumentError).field).toBe('enqueueBatchFast.batchId');
    expect(await count()).toBe(0);
  });

  it('rejects empty batches and batches over 50,000 items', async () => {
    const empty = await client()
      .enqueueBatchFast([])
      .catch((e: unknown) => e);
    expect((empty as InvalidArgumentError).field).toBe('enqueueBatchFast.items');
    const many = Array.from({ length: 50_001 }, (_, n) => ({ actor: plain, payload: { n } }));
    const over = await client()
      .enqueueBatchFast(many)
      .catch((e: unknown) => e);
    expect(over).toBeInstanceOf(InvalidArgumentError);
    expect((over as InvalidArgumentError).rule).toContain('at most 50000 items (got 50001)');
    expect(await count()).toBe(0);
  });

  it('writes thousands of jobs in one call', async () => {
    const many = Array.from({ length: 5000 }, (_, n) => ({ actor: plain, payload: { n } }));
    expect(await client().enqueueBatchFast(many)).toBe(5000);
    expect(await count()).toBe(5000);
  });

  it('checks maxPending as enqueueBatch does: the whole batch or nothing', async () => {
    const items = Array.from({ length: 3 }, (_, n) => ({ actor: limited, payload: { n } }));
    await expect(client().enqueueBatchFast(items)).rejects.toBeInstanceOf(MaxPendingExceededError);
    expect(await count()).toBe(0);
    expect(await client().enqueueBatchFast(items.slice(0, 2))).toBe(2);
    expect(await count()).toBe(2);
  });

  it('refuses an item with a uniqueFor identity key (it cannot return the existing job)', async () => {
    const err = await client()
      .enqueueBatchFast([
        { actor: plain, payload: { n: 1 } },
        { actor: deduped, payload: {}, options: { identityKey: 'r' } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe('items[1].options.identityKey');
    expect(await count()).toBe(0);
  });

  it('commits and rolls back with a caller transaction, twice in one transaction', async () => {
    const tx = await begin();
    await client().enqueueBatchFast([{ actor: plain, payload: { n: 1 } }], { connection: tx.conn });
    await tx.rollback();
    expect(await count()).toBe(0);
    const tx2 = await begin();
    await client().enqueueBatchFast([{ actor: plain, payload: { n: 1 } }], { connection: tx2.conn });
    await client().enqueueBatchFast(
      [
        { actor: plain, payload: { n: 2 } },
        { actor: plain, payload: { n: 3 } },
      ],
      { connection: tx2.conn },
    );
    await tx2.commit();
    expect(await count()).toBe(3);
  });
}
