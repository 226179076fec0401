/**
 * `ctx.progress` in a real (in-process) worker against real Postgres and Redis: the size cap
 * (`ProgressTooLarge`, nothing recorded, catchable), coalescing of many reports into few database
 * writes, and the `progressPublishGlobal` switch of the worker's own Redis publisher.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { ProgressTooLarge } from '../../src/errors/progress-errors.js';
import { silentLogger } from '../../src/obs/logger.js';
import { progressGlobalChannel, progressJobChannel } from '../../src/progress/progress-channels.js';
import type { ProgressEvent } from '../../src/progress/progress-event.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const REDIS_URL = process.env.TASKQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUEUE = 'progress_cap';
/** `progressDataMaxBytes` as documented (16 KiB); the worker below keeps the default. */
const DOCUMENTED_CAP = 16_384;

/** Gates handlers wait on; the test opens them once it has checked the running state. */
const gates = new Map<string, { open: () => void; opened: Promise<void>; isOpen: boolean }>();
function gate(name: string): () => void {
  let resolve!: () => void;
  const opened = new Promise<void>((r) => (resolve = r));
  const g = {
    opened,
    isOpen: false,
    open: () => {
      g.isOpen = true;
      resolve();
    },
  };
  gates.set(name, g);
  return g.open;
}

/** What the oversized handler caught (read by the test in this process). */
const caught = new Map<string, unknown>();

const Gated = z.object({ gate: z.string() });

const oversized = actor({ name: 'prog_oversized', queue: QUEUE, payload: Gated }, async (p, ctx) => {
  await ctx.progress({ step: 'before', data: { ok: 1 } });
  try {
    await ctx.progress({ step: 'too-big', data: { blob: 'x'.repeat(DOCUMENTED_CAP + 1) } });
  } catch (err) {
    caught.set(ctx.jobId, err);
  }
  await gates.get(p.gate)?.opened;
  await ctx.progress({ step: 'after' });
  return 'handled';
});

const uncaught = actor(
  { name: 'prog_oversized_uncaught', queue: QUEUE, retry: { maxAttempts: 1 } },
  async (_p, ctx) => {
    await ctx.progress({ data: 'y'.repeat(DOCUMENTED_CAP + 100) });
    return 'unreachable';
  },
);

const chatty = actor(
  { name: 'prog_chatty', queue: QUEUE, payload: z.object({ n: z.number().int(), gate: z.string() }) },
  async (p, ctx) => {
    // Every report within a few microseconds: far less than one coalesce interval (1 s here).
    for (let i = 1; i <= p.n; i++)
      await ctx.progress({ step: `step-${i}`, percent: (i * 100) / p.n, data: { i } });
    await gates.get(p.gate)?.opened;
    return p.n;
  },
);

/** Reports every 20 ms until its gate opens (so the publisher's connection has time to come up). */
const pulse = actor({ name: 'prog_pulse', queue: 'prog_pub', payload: Gated }, async (p, ctx) => {
  const g = gates.get(p.gate)!;
  for (let i = 1; !g.isOpen; i++) {
    await ctx.progress({ step: `beat-${i}`, data: { i } });
    await Promise.race([g.opened, new Promise((r) => setTimeout(r, 20))]);
  }
  return 'done';
});

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('progw');
  // Every change of progress_seq on a job is one progress write by the worker (flush or terminal
  // write): a trigger in this test's own schema logs them.
  await db.pool.query(`
    CREATE TABLE "${db.schema}".test_progress_writes (
      job_id uuid, seq int, state jsonb, at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE FUNCTION "${db.schema}".test_log_progress() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO "${db.schema}".test_progress_writes (job_id, seq, state)
        VALUES (NEW.id, NEW.progress_seq, NEW.progress_state);
      RETURN NULL;
    END $$;
    CREATE TRIGGER test_progress_writes AFTER UPDATE OF progress_seq ON "${db.schema}".jobs
      FOR EACH ROW WHEN (OLD.progress_seq IS DISTINCT FROM NEW.progress_seq)
      EXECUTE FUNCTION "${db.schema}".test_log_progress();
  `);
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = await startTestWorker([oversized, uncaught, chatty], db.schema, {
    queues: [QUEUE],
    progressCoalesceInterval: '1s',
  });
});
afterAll(async () => {
  for (const g of gates.values()) g.open();
  await worker?.stop();
  await tq?.close();
  await db?.drop();
});

async function progressWrites(jobId: string): Promise<{ seq: number; state: Record<string, unknown> }[]> {
  const { rows } = await db.pool.query<{ seq: number; state: Record<string, unknown> }>(
    `SELECT seq, state FROM "${db.schema}".test_progress_writes WHERE job_id = $1 ORDER BY at`,
    [jobId],
  );
  return rows;
}

describe('ctx.progress size cap', () => {
  it('throws ProgressTooLarge above the documented cap; the handler catches it and nothing was recorded', async () => {
    expect(worker.settings.progressDataMaxBytes).toBe(DOCUMENTED_CAP);
    const open = gate('oversized');
    const h = await tq.enqueue(oversized, { gate: 'oversized' });
    try {
      // The flush while the handler waits shows the stored progress: the report before the failed one.
      await waitFor(async () => (await tq.getRow(h.jobId))?.progressSeq === 1, 10_000, 'the first flush');
      const running = (await tq.getRow(h.jobId))!;
      expect(running.status).toBe('running');
      expect(running.progressState).toEqual({ step: 'before', data: { ok: 1 } });
    } finally {
      open();
    }
    expect(await h.wait({ timeout: '10s' })).toBe('handled');

    const err = caught.get(h.jobId);
    expect(err).toBeInstanceOf(ProgressTooLarge);
    expect(err).toMatchObject({ limit: DOCUMENTED_CAP });
    expect((err as ProgressTooLarge).actual).toBeGreaterThan(DOCUMENTED_CAP);
    expect((err as Error).message).toMatch(/progressDataMaxBytes/);
    // The rejected report used no seq and left no field behind: `after` is seq 2, and `data` is
    // still the one from `before`.
    const row = (await tq.getRow(h.jobId))!;
    expect(row.status).toBe('succeeded');
    expect(row.progressSeq).toBe(2);
    expect(row.progressState).toEqual({ step: 'after', data: { ok: 1 } });
    expect((await progressWrites(h.jobId)).map((w) => w.seq)).toEqual([1, 2]);
  });

  it('uncaught, it fails the attempt as ProgressTooLarge', async () => {
    const h = await tq.enqueue(uncaught, {});
    await waitFor(async () => (await tq.getRow(h.jobId))?.status === 'failed', 10_000, 'the failure');
    expect((await h.attempts()).map((a) => [a.outcome, a.errorClass])).toEqual([
      ['failed', 'ProgressTooLarge'],
    ]);
    expect((await tq.getRow(h.jobId))!.progressSeq).toBe(0);
  });
});

describe('ctx.progress coalescing', () => {
  it('200 reports within one coalesce interval cost a few writes; the stored state is the last report', async () => {
    const calls = 200;
    const open = gate('chatty');
    const h = await tq.enqueue(chatty, { n: calls, gate: 'chatty' });
    try {
      await waitFor(async () => (await tq.getRow(h.jobId))?.progressSeq === calls, 10_000, 'the flush');
      const running = (await tq.getRow(h.jobId))!;
      expect(running.status).toBe('running');
      expect(running.progressState).toEqual({ step: `step-${calls}`, percent: 100, data: { i: calls } });
    } finally {
      open();
    }
    expect(await h.wait({ timeout: '10s' })).toBe(calls);

    const writes = await progressWrites(h.jobId);
    console.log(`${calls} ctx.progress calls → ${writes.length} progress write(s) to Postgres`);
    // One flush normally; two if the burst happened to straddle a flush tick. Never one per call.
    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect(writes.length).toBeLessThanOrEqual(3);
    const seqs = writes.map((w) => w.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(writes.at(-1)).toEqual({
      seq: calls,
      state: { step: `step-${calls}`, percent: 100, data: { i: calls } },
    });
    const final = (await tq.getRow(h.jobId))!;
    expect(final).toMatchObject({ status: 'succeeded', progressSeq: calls });
    expect(final.progressState).toEqual({ step: `step-${calls}`, percent: 100, data: { i: calls } });
  });
});

describe('progressPublishGlobal', () => {
  /**
   * Runs one pulse job on a worker with its own Redis publisher and returns what reached the job's
   * channel and the schema-wide channel. Completeness: the worker's stop waits for its publishes,
   * and a sentinel published afterwards on the global channel must arrive last.
   */
  async function publishedWith(publishGlobal: boolean): Promise<{
    jobId: string;
    perJob: ProgressEvent[];
    global: ProgressEvent[];
  }> {
    const sub = new Redis(REDIS_URL);
    const pub = new Redis(REDIS_URL);
    const byChannel = new Map<string, string[]>();
    const push = (channel: string, message: string): void => {
      byChannel.set(channel, [...(byChannel.get(channel) ?? []), message]);
    };
    sub.on('pmessage', (_pattern: string, channel: string, message: string) => push(channel, message));
    sub.on('message', (channel: string, message: string) => push(channel, message));
    const globalChannel = progressGlobalChannel(db.schema);
    const queue = publishGlobal ? 'prog_pub_on' : 'prog_pub_off';
    const w = new Worker({
      actors: [pulse],
      settings: {
        pgDsn: TEST_DSN,
        schema: db.schema,
        queues: [queue],
        maxConcurrency: 2,
        redisUrl: REDIS_URL,
        progressPublishGlobal: publishGlobal,
        watchdogEnabled: false,
      },
      logger: silentLogger,
    });
    try {
      await sub.psubscribe(`${globalChannel}:*`);
      await sub.subscribe(globalChannel);
      await w.start();
      const name = `pulse-${queue}`;
      const open = gate(name);
      const h = await tq.enqueue(pulse, { gate: name }, { queue });
      const jobChannel = progressJobChannel(db.schema, h.jobId);
      try {
        await waitFor(() => (byChannel.get(jobChannel)?.length ?? 0) >= 3, 15_000, 'live progress on Redis');
      } finally {
        open();
      }
      expect(await h.wait({ timeout: '10s' })).toBe('done');
      await waitFor(
        () => (byChannel.get(jobChannel) ?? []).some((m) => (JSON.parse(m) as ProgressEvent).terminal),
        10_000,
        'the terminal event',
      );
      await w.stop();
      await pub.publish(globalChannel, 'sentinel');
      await waitFor(() => (byChannel.get(globalChannel) ?? []).includes('sentinel'), 10_000, 'the sentinel');
      const decode = (ms: string[] | undefined): ProgressEvent[] =>
        (ms ?? []).filter((m) => m !== 'sentinel').map((m) => JSON.parse(m) as ProgressEvent);
      return {
        jobId: h.jobId,
        perJob: decode(byChannel.get(jobChannel)),
        global: decode(byChannel.get(globalChannel)),
      };
    } finally {
      await w.stop();
      sub.disconnect();
      pub.disconnect();
    }
  }

  it('false: the job channel gets every event, the schema-wide channel nothing', async () => {
    const { jobId, perJob, global } = await publishedWith(false);
    expect(perJob.filter((e) => e.kind === 'progress').length).toBeGreaterThanOrEqual(3);
    expect(perJob.every((e) => e.jobId === jobId)).toBe(true);
    expect(perJob.at(-1)).toMatchObject({ terminal: true, status: 'succeeded' });
    expect(global).toEqual([]);
  });

  it('true: the schema-wide channel gets the same events as the job channel', async () => {
    const { jobId, perJob, global } = await publishedWith(true);
    expect(perJob.filter((e) => e.kind === 'progress').length).toBeGreaterThanOrEqual(3);
    expect(global.length).toBeGreaterThanOrEqual(3);
    expect(global.every((e) => e.jobId === jobId)).toBe(true);
    expect(global.map((e) => [e.kind, e.seq, e.terminal])).toEqual(
      perJob.map((e) => [e.kind, e.seq, e.terminal]),
    );
    expect(global.at(-1)).toMatchObject({ terminal: true, status: 'succeeded' });
  });
});
