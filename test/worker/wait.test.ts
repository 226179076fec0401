/**
 * `JobHandle.wait()` against real Postgres with an in-process worker (docs/retries.md, Results):
 * the timeout, a succeeded job without a stored result, and the wake-up by the "done" NOTIFY.
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { ResultUnavailable, WaitTimeoutError } from '../../src/errors/index.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const QUEUE = 'waits';
let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

/** Handlers of `gated` block until their job id is released here. */
const gates = new Map<string, () => void>();
const release = (jobId: string): void => {
  gates.get(jobId)?.();
  gates.delete(jobId);
};

const gated = actor(
  { name: 'gated', queue: QUEUE, result: z.object({ ok: z.boolean() }) },
  async (_p, ctx) => {
    await new Promise<void>((resolve) => gates.set(ctx.jobId, resolve));
    return { ok: true };
  },
);
/** Declares a result but returns nothing: a succeeded job with no stored result. */
const silent = actor(
  { name: 'silent', queue: QUEUE, result: z.object({ v: z.number() }).optional() },
  async () => undefined,
);
/** No result schema and no result: wait() returns undefined rather than throwing. */
const untyped = actor({ name: 'untyped', queue: QUEUE }, async () => undefined);
const expiring = actor(
  { name: 'expiring', queue: QUEUE, result: z.object({ v: z.number() }), resultTtl: '1h' },
  async () => ({ v: 7 }),
);

beforeAll(async () => {
  db = await migratedSchema('wait');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = await startTestWorker([gated, silent, untyped, expiring], db.schema, { queues: [QUEUE] });
});
afterAll(async () => {
  for (const id of [...gates.keys()]) release(id);
  await worker.stop();
  await tq.close();
  await db.drop();
});

const status = async (jobId: string): Promise<string | undefined> => (await tq.getRow(jobId))?.status;

describe('JobHandle.wait()', () => {
  it('throws WaitTimeoutError when the job does not finish within the timeout', async () => {
    const h = await tq.enqueue(gated, {});
    await waitFor(async () => gates.has(h.jobId), 10_000, 'the handler to start');
    try {
      const err = await h.wait({ timeout: '300ms' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WaitTimeoutError);
      expect((err as WaitTimeoutError).timeoutMs).toBe(300);
      expect((err as WaitTimeoutError).message).toContain(h.jobId);
      // The timeout is the caller's: the job itself is untouched and still running.
      expect(await status(h.jobId)).toBe('running');
    } finally {
      release(h.jobId);
    }
    expect(await h.wait({ timeout: '10s' })).toEqual({ ok: true });
  });

  it('throws ResultUnavailable for a succeeded job with no stored result when the actor declares one', async () => {
    const h = await tq.enqueue(silent, {});
    const err = await h.wait({ timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResultUnavailable);
    expect((err as ResultUnavailable).row).toMatchObject({ id: h.jobId, status: 'succeeded', result: null });
    // Without a result schema there is nothing to promise: wait() returns undefined.
    const u = await tq.enqueue(untyped, {});
    await expect(u.wait({ timeout: '10s' })).resolves.toBeUndefined();
  });

  it('throws ResultUnavailable once the result has expired and been swept', async () => {
    const h = await tq.enqueue(expiring, {});
    expect(await h.wait({ timeout: '10s' })).toEqual({ v: 7 });
    // Move the expiry into the past (on the database clock) instead of waiting an hour, then run
    // the leader's expired-results sweep once.
    await db.pool.query(
      `UPDATE "${db.schema}".jobs SET result_expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`,
      [h.jobId],
    );
    expect(await worker.jobsBackend.sweepExpiredResults()).toBeGreaterThanOrEqual(1);
    const fresh = await tq.get(h.jobId, expiring);
    const err = await fresh!.wait({ timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResultUnavailable);
    expect((err as ResultUnavailable).row.status).toBe('succeeded');
    await expect(h.wait({ timeout: '10s' })).rejects.toBeInstanceOf(ResultUnavailable);
  });

  it('is woken by the done NOTIFY, not by its poll', async () => {
    const h = await tq.enqueue(gated, {});
    await waitFor(async () => gates.has(h.jobId), 10_000, 'the handler to start');
    // The waiter's poll interval is not configurable, so its poll timers (and only those, found by
    // the calling function) are stretched to an hour: once the waiter sleeps, nothing but a
    // NOTIFY-driven wake-up can make it read the job again within this test's timeout.
    const realSetTimeout = globalThis.setTimeout;
    let stretched = 0;
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      fn: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 50;
      const fromWaiter = new Error().stack?.includes('waitForTerminal') ?? false;
      Error.stackTraceLimit = limit;
      if (!fromWaiter) return realSetTimeout(fn, ms, ...args);
      stretched++;
      return realSetTimeout(fn, 3_600_000, ...args);
    }) as unknown as typeof setTimeout);
    try {
      const result = h.wait();
      await waitFor(() => stretched > 0, 10_000, 'the waiter to sleep on its poll timer');
      expect(await status(h.jobId)).toBe('running');
      release(h.jobId);
      expect(await result).toEqual({ ok: true });
    } finally {
      spy.mockRestore();
    }
  }, 20_000);
});
