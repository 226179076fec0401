/**
 * enqueueBatchStreaming on Postgres: sync and async inputs chunked, the batch row created with the
 * first chunk and sealed with the last, errors naming items by their global index, what is written
 * (and sealed) when the stream stops, the policy counting children from the first chunk, progress,
 * and the caller's transaction.
 */
import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem, type EnqueueItem } from '../../src/client/batch-items.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { PayloadValidationError } from '../../src/errors/payload-validation-error.js';
import { MaxPendingExceededError } from '../../src/errors/backpressure-errors.js';
import { BatchAbortedError } from '../../src/errors/batch-errors.js';
import { StreamingBatchError } from '../../src/errors/streaming-batch-error.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const child = actor(
  {
    name: 'st_child',
    payload: z.object({ n: z.number(), fail: z.boolean().optional() }),
    retry: { kind: 'nonRetryable' },
  },
  async (p) => {
    if (p.fail) throw new Error('planned failure');
    return null;
  },
);
const limited = actor(
  { name: 'st_limited', payload: z.object({ n: z.number() }), maxPending: 1500 },
  async () => null,
);
const finalizer = actor({ name: 'st_final' }, async () => null);

/** `n` valid items; the item at `bad` (if any) has a payload the schema refuses. */
function* items(n: number, bad = -1): Generator<EnqueueItem> {
  for (let i = 0; i < n; i++)
    yield i === bad
      ? { actor: child, payload: { n: 'not a number' } }
      : batchItem(child, { n: i }, { delay: '1h' });
}

async function* asyncItems(n: number): AsyncGenerator<EnqueueItem> {
  for (let i = 0; i < n; i++) {
    if (i % 100 === 0) await new Promise((r) => setImmediate(r));
    yield batchItem(child, { n: i }, { delay: '1h' });
  }
}

/** The error `p` rejects with. */
async function failureOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('enqueueBatchStreaming (Postgres)', () => {
  let s: TestSchema;
  let tq: TaskQ;

  /** Jobs carrying `batchId`, counted in the table. */
  const jobsOf = async (batchId: string): Promise<number> =>
    Number(
      (
        await s.pool.query(
          `SELECT count(*)::int AS n FROM "${s.schema}".jobs WHERE metadata->>'batch_id' = $1`,
          [batchId],
        )
      ).rows[0].n,
    );

  beforeAll(async () => {
    s = await migratedSchema('bst');
    tq = new TaskQ(new PostgresBackend(s.driver, { schema: s.schema }), { capacityCacheTtl: 0 });
  });
  afterAll(async () => {
    await tq.close();
    await s.drop();
  });

  it('writes a sync generator in chunks without a row, reporting progress after each', async () => {
    const progress: { written: number; batchId: string }[] = [];
    const h = await tq.enqueueBatchStreaming(items(2500), { onProgress: (p) => void progress.push(p) });
    expect(h.size).toBe(2500);
    expect(h.jobHandles).toEqual([]);
    expect(h.row).toBeNull();
    expect(progress).toEqual([1000, 2000, 2500].map((written) => ({ written, batchId: h.batchId })));
    expect(await jobsOf(h.batchId)).toBe(2500);
    expect(await tq.getBatch(h.batchId)).toBeNull();
    expect(await h.status()).toMatchObject({ total: 2500, pending: 2500 });
  });

  it('writes an async generator into a row created with the first chunk and sealed with the last', async () => {
    const progress: number[] = [];
    const h = await tq.enqueueBatchStreaming(asyncItems(21), {
      chunkSize: 7,
      failurePolicy: new AbortBatchAfter(3),
      finalizer: batchItem(finalizer, {}),
      onProgress: async ({ written }) => {
        await new Promise((r) => setImmediate(r));
        progress.push(written);
      },
    });
    // 21 is a multiple of 7: the stream learns it ended after the third chunk and seals with an empty write.
    expect(progress).toEqual([7, 14, 21]);
    expect(h.size).toBe(21);
    expect(h.finalizerHandle).not.toBeNull();
    expect(await tq.getBatch(h.batchId)).toMatchObject({
      expectedSize: 21,
      sealed: true,
      status: 'active',
      failureThreshold: 3,
      finalizerJobId: h.finalizerHandle!.jobId,
    });
    expect(await jobsOf(h.batchId)).toBe(21);
    const fin = await tq.getRow(h.finalizerHandle!.jobId);
    expect(fin!.metadata.batch_id).toBeUndefined();
  });

  it('takes a plain array, and seals with the last (short) chunk', async () => {
    const h = await tq.enqueueBatchStreaming([...items(5)], {
      chunkSize: 2,
      finalizer: batchItem(finalizer, {}),
    });
    expect(await tq.getBatch(h.batchId)).toMatchObject({
      expectedSize: 5,
      sealed: true,
      failureThreshold: null,
    });
  });

  it('counts an item that deduplicated to an existing job as written, not as a new child', async () => {
    const key = `k-${randomUUID()}`;
    const h = await tq.enqueueBatchStreaming(
      [0, 1, 2].map((n) =>
        batchItem(child, { n }, { delay: '1h', ...(n > 0 ? { idempotencyKey: key } : {}) }),
      ),
      { chunkSize: 2, failurePolicy: new AbortBatchAfter(1) },
    );
    expect(h.size).toBe(3);
    expect(await tq.getBatch(h.batchId)).toMatchObject({ expectedSize: 2, sealed: true });
    expect(await jobsOf(h.batchId)).toBe(2);
  });

  it('refuses bad options and empty input before anything is written', async () => {
    const batchId = randomUUID();
    const cases: [unknown, unknown, string][] = [
      [items(3), { batchId, chunkSize: 0 }, 'enqueueBatchStreaming.chunkSize'],
      [items(3), { batchId, chunkSize: 1001 }, 'enqueueBatchStreaming.chunkSize'],
      [items(3), { batchId, chunkSize: 1.5 }, 'enqueueBatchStreaming.chunkSize'],
      [items(3), { batchId, onProgress: 'x' }, 'enqueueBatchStreaming.onProgress'],
      [items(3), { batchId, chunksize: 10 }, 'enqueueBatchStreaming.options.chunksize'],
      [items(3), { batchId: 'nope' }, 'enqueueBatchStreaming.batchId'],
      [items(3), { batchId, failurePolicy: 3 }, 'enqueueBatchStreaming.failurePolicy'],
      [items(3), { batchId, connection: {} }, 'enqueueBatchStreaming.connection'],
      [42, { batchId }, 'enqueueBatchStreaming.items'],
      [items(0), { batchId, failurePolicy: new AbortBatchAfter(1) }, 'enqueueBatchStreaming.items'],
      [[], { batchId }, 'enqueueBatchStreaming.items'],
      [
        items(3),
        { batchId, finalizer: { actor: finalizer, payload: 1n } },
        'enqueueBatchStreaming.finalizer.payload',
      ],
    ];
    for (const [input, options, field] of cases) {
      const err = await failureOf(tq.enqueueBatchStreaming(input as never, options as never));
      const kind = field.endsWith('.payload') ? PayloadValidationError : InvalidArgumentError;
      expect(err, field).toBeInstanceOf(kind);
      expect((err as Error).message, field).toContain(field);
    }
    expect(await jobsOf(batchId)).toBe(0);
    expect(await tq.getBatch(batchId)).toBeNull();
  });

  it('throws an invalid first chunk as itself, naming the item, with nothing written', async () => {
    const batchId = randomUUID();
    const err = await failureOf(
      tq.enqueueBatchStreaming(items(3000, 5), { batchId, failurePolicy: new AbortBatchAfter(2) }),
    );
    expect(err).toBeInstanceOf(PayloadValidationError);
    expect((err as Error).message).toMatch(/^items\[5\]\.payload/);
    expect(await jobsOf(batchId)).toBe(0);
    expect(await tq.getBatch(batchId)).toBeNull();
  });

  it('stops at an invalid item of a later chunk, naming its global index, and seals the batch', async () => {
    const batchId = randomUUID();
    const err = await failureOf(
      tq.enqueueBatchStreaming(items(5000, 2345), { batchId, failurePolicy: new AbortBatchAfter(2) }),
    );
    expect(err).toBeInstanceOf(StreamingBatchError);
    const e = err as StreamingBatchError;
    expect(e).toMatchObject({ batchId, written: 2000, failedIndex: 2345, sealed: true });
    expect(e.cause).toBeInstanceOf(PayloadValidationError);
    expect((e.cause as Error).message).toMatch(/^items\[2345\]\.payload/);
    expect(e.message).toContain('items[2345]');
    expect(await jobsOf(batchId)).toBe(2000);
    expect(await tq.getBatch(batchId)).toMatchObject({ expectedSize: 2000, sealed: true });
  });

  it('names the global index in item-shape errors too', async () => {
    function* shapes(): Generator<EnqueueItem> {
      yield* items(1003);
      yield { actor: child, payload: { n: 1 }, extra: true } as unknown as EnqueueItem;
    }
    const err = (await failureOf(tq.enqueueBatchStreaming(shapes()))) as StreamingBatchError;
    expect(err).toMatchObject({ written: 1000, failedIndex: 1003, sealed: null });
    expect(err.cause).toBeInstanceOf(InvalidArgumentError);
    expect((err.cause as InvalidArgumentError).field).toBe('items[1003].extra');
  });

  it('stops when the input throws: what was written stays, the batch is sealed', async () => {
    const batchId = randomUUID();
    const boom = new Error('source broke');
    async function* broken(): AsyncGenerator<EnqueueItem> {
      yield* asyncItems(1500);
      throw boom;
    }
    const err = (await failureOf(
      tq.enqueueBatchStreaming(broken(), { batchId, finalizer: batchItem(finalizer, {}) }),
    )) as StreamingBatchError;
    expect(err).toBeInstanceOf(StreamingBatchError);
    expect(err).toMatchObject({ written: 1000, failedIndex: 1500, sealed: true });
    expect(err.cause).toBe(boom);
    expect(await jobsOf(batchId)).toBe(1000);
    expect(await tq.getBatch(batchId)).toMatchObject({ expectedSize: 1000, sealed: true });
  });

  it('stops when onProgress throws, and lets the input generator clean up', async () => {
    const batchId = randomUUID();
    let cleanedUp = false;
    function* source(): Generator<EnqueueItem> {
      try {
        yield* items(10_000);
      } finally {
        cleanedUp = true;
      }
    }
    const err = (await failureOf(
      tq.enqueueBatchStreaming(source(), {
        batchId,
        failurePolicy: new AbortBatchAfter(5),
        onProgress: ({ written }) => {
          if (written === 2000) throw new Error('stop here');
        },
      }),
    )) as StreamingBatchError;
    expect(err).toMatchObject({ written: 2000, failedIndex: 2000, sealed: true });
    expect((err.cause as Error).message).toBe('stop here');
    expect(cleanedUp).toBe(true);
    expect(await jobsOf(batchId)).toBe(2000);
  });

  it('enforces maxPending per chunk: a chunk that would go over it is refused', async () => {
    const batchId = randomUUID();
    function* many(): Generator<EnqueueItem> {
      for (let i = 0; i < 2500; i++) yield batchItem(limited, { n: i }, { delay: '1h' });
    }
    const err = (await failureOf(tq.enqueueBatchStreaming(many(), { batchId }))) as StreamingBatchError;
    expect(err).toMatchObject({ written: 1000, failedIndex: 1000, sealed: null });
    expect(err.cause).toBeInstanceOf(MaxPendingExceededError);
    expect(await jobsOf(batchId)).toBe(1000);
  });

  it('counts a child of the first chunk that fails before the next chunk is written', async () => {
    const batchId = randomUUID();
    const row = () => tq.getBatch(batchId);
    let yieldedAfterAbort = 0;
    async function* paced(): AsyncGenerator<EnqueueItem> {
      yield batchItem(child, { n: 0, fail: true });
      // Chunk 2 is not read until the first child's failure is counted on the row.
      await waitFor(async () => (await row())?.counts.failed === 1, 15_000, 'the first failure counted');
      yield batchItem(child, { n: 1, fail: true });
      await waitFor(async () => (await row())?.status === 'aborted', 15_000, 'the abort');
      yield batchItem(child, { n: 2 }, { delay: '1h' });
      yieldedAfterAbort++;
      yield batchItem(child, { n: 3 }, { delay: '1h' });
      yieldedAfterAbort++;
    }
    const worker = await startTestWorker([child, finalizer], s.schema, { maxConcurrency: 1 });
    let err: StreamingBatchError;
    try {
      err = (await failureOf(
        tq.enqueueBatchStreaming(paced(), { batchId, chunkSize: 1, failurePolicy: new AbortBatchAfter(2) }),
      )) as StreamingBatchError;
    } finally {
      await worker.stop();
    }
    // The third child's write found the batch aborted (the abort came between writes) and was
    // refused: nothing is added to a batch that is over; the stream stopped there.
    expect(err).toBeInstanceOf(StreamingBatchError);
    expect(err.cause).toBeInstanceOf(BatchAbortedError);
    expect(err).toMatchObject({ written: 2, failedIndex: 2, sealed: true });
    expect(yieldedAfterAbort).toBeLessThanOrEqual(2);
    expect(await row()).toMatchObject({
      status: 'aborted',
      consecutiveFailures: 2,
      expectedSize: 2,
      sealed: true,
    });
    expect((await row())!.counts).toMatchObject({ failed: 2 });
  });

  it('writes every chunk in the caller transaction: a rollback leaves nothing', async () => {
    const batchId = randomUUID();
    const c = await s.pool.connect();
    try {
      await c.query('BEGIN');
      const h = await tq.enqueueBatchStreaming(items(2500), {
        batchId,
        connection: c,
        failurePolicy: new AbortBatchAfter(2),
        finalizer: batchItem(finalizer, {}),
      });
      const inside = await c.query(
        `SELECT count(*)::int AS n FROM "${s.schema}".jobs WHERE metadata->>'batch_id' = $1`,
        [batchId],
      );
      expect(inside.rows[0].n).toBe(2500);
      expect(h.row).toMatchObject({ expectedSize: 2500, sealed: true });
      expect(await jobsOf(batchId)).toBe(0);
      await c.query('ROLLBACK');
    } finally {
      c.release();
    }
    expect(await jobsOf(batchId)).toBe(0);
    expect(await tq.getBatch(batchId)).toBeNull();
  });

  it('in the caller transaction, a mid-stream failure seals what was written, to commit or roll back', async () => {
    const batchId = randomUUID();
    const c = await s.pool.connect();
    try {
      await c.query('BEGIN');
      const err = (await failureOf(
        tq.enqueueBatchStreaming(items(2500, 1200), {
          batchId,
          connection: c,
          failurePolicy: new AbortBatchAfter(2),
        }),
      )) as StreamingBatchError;
      expect(err).toMatchObject({ written: 1000, failedIndex: 1200, sealed: true });
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    expect(await jobsOf(batchId)).toBe(1000);
    expect(await tq.getBatch(batchId)).toMatchObject({ expectedSize: 1000, sealed: true });
  });
});
