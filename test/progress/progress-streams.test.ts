/**
 * Live progress end to end: an in-process worker reports progress; `JobHandle.progressStream()` and
 * `TaskQ.stream()` consume it through Redis pub/sub and through Postgres (LISTEN + polling).
 * Real Postgres and real Redis; the schema is unique, so Redis channel names are too.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { TaskQStateError } from '../../src/errors/client-errors.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { JobNotFoundError } from '../../src/errors/job-errors.js';
import { newJobId } from '../../src/core/ids.js';
import { silentLogger } from '../../src/obs/logger.js';
import { progressGlobalChannel, progressJobChannel } from '../../src/progress/progress-channels.js';
import type { JobEvent, ProgressEvent } from '../../src/progress/progress-event.js';
import { MAX_EVENTS_PER_CALL, RedisProgressPublisher } from '../../src/progress/redis-progress-publisher.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const REDIS_URL = process.env.TASKQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Gates the actor waits on before reporting (the test opens them once its stream is subscribed). */
const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
function gate(name: string): () => void {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  gates.set(name, { open, opened });
  return open;
}

const handler = async (
  p: { n: number; delayMs: number; gate?: string | undefined; holdAfter?: number | undefined },
  ctx: { progress(u: { step?: string; percent?: number; data?: unknown }): Promise<void> },
): Promise<{ done: number }> => {
  if (p.gate) await gates.get(p.gate)?.opened;
  for (let i = 1; i <= p.n; i++) {
    await ctx.progress({ step: `step-${i}`, percent: (i * 100) / p.n, data: { i } });
    if (p.holdAfter === i && p.gate) await gates.get(`${p.gate}:hold`)?.opened;
    await new Promise((r) => setTimeout(r, p.delayMs));
  }
  return { done: p.n };
};
const payload = z.object({
  n: z.number().int(),
  delayMs: z.number().int(),
  gate: z.string().optional(),
  holdAfter: z.number().int().optional(),
});
const steps = actor({ name: 'steps', queue: 'progress', payload }, handler);
/** The same on its own queue (for a second worker). */
const stepsElsewhere = actor({ name: 'steps_elsewhere', queue: 'progress_elsewhere', payload }, handler);
let db: TestSchema;
let tqPg: TaskQ;
let tqRedis: TaskQ;
let publisher: RedisProgressPublisher;
let worker: Worker;
let redis: Redis;

beforeAll(async () => {
  db = await migratedSchema('prog');
  redis = new Redis(REDIS_URL);
  tqPg = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  tqRedis = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisUrl: REDIS_URL });
  publisher = new RedisProgressPublisher({ redisUrl: REDIS_URL, schema: db.schema, logger: silentLogger });
  worker = new Worker({
    actors: [steps],
    settings: {
      pgDsn: TEST_DSN,
      schema: db.schema,
      queues: ['progress'],
      maxConcurrency: 8,
      heartbeatInterval: '1s',
      lockLease: '10s',
      progressCoalesceInterval: '100ms',
      cancellationGracePeriod: '1s',
      cleanupGracePeriod: '1s',
      watchdogEnabled: false,
    },
    logger: silentLogger,
    progressPublisher: publisher,
  });
  await worker.start();
  await waitFor(() => publisher.stats.pending === 0 && redis.status === 'ready', 10_000, 'redis');
});
afterAll(async () => {
  for (const g of gates.values()) g.open();
  await worker?.stop();
  await publisher?.close();
  await tqPg?.close();
  await tqRedis?.close();
  redis?.disconnect();
  await db?.drop();
});

async function numsub(channel: string): Promise<number> {
  const reply = (await redis.pubsub('NUMSUB', channel)) as [string, number];
  return Number(reply[1]);
}

/** Connections of this schema's job streams (their last statement is the LISTEN on the progress channel). */
async function listenConnections(): Promise<number> {
  const r = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name LIKE 'taskq-listen%' AND query LIKE $1`,
    [`%taskq_progress_${db.schema}%`],
  );
  return r.rows[0]!.n;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const e of it) out.push(e);
  return out;
}

/** The invariants every progress stream keeps. */
function checkProgressEvents(events: ProgressEvent[], finalSeq: number): ProgressEvent[] {
  expect(events.length).toBeGreaterThan(0);
  const last = events.at(-1)!;
  expect(last).toMatchObject({ terminal: true, kind: 'state_change', status: 'succeeded', seq: finalSeq });
  expect(last.percent).toBe(100);
  expect(last.step).toBe(`step-${finalSeq}`);
  expect(events.filter((e) => e.terminal)).toHaveLength(1);
  for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThanOrEqual(events[i - 1]!.seq);
  const progress = events.filter((e) => e.kind === 'progress');
  for (let i = 1; i < progress.length; i++) expect(progress[i]!.seq).toBeGreaterThan(progress[i - 1]!.seq);
  for (const e of progress) {
    expect(e.v).toBe(1);
    expect(e.step).toBe(`step-${e.seq}`);
    expect(e.data).toEqual({ i: e.seq });
  }
  return progress;
}

function checkJobEvents(events: JobEvent[], jobId: string, finalSeq: number): void {
  expect(events.length).toBeGreaterThan(1);
  const last = events.at(-1)!;
  expect(last).toMatchObject({ jobId, terminal: true, status: 'succeeded', progressSeq: finalSeq });
  expect(last.progressState).toMatchObject({ step: `step-${finalSeq}`, percent: 100 });
  expect(events.filter((e) => e.terminal)).toHaveLength(1);
  for (let i = 1; i < events.length; i++) {
    const [a, b] = [events[i - 1]!, events[i]!];
    expect(b.progressSeq).toBeGreaterThanOrEqual(a.progressSeq);
    // Never the same snapshot twice.
    expect(b.status !== a.status || b.progressSeq > a.progressSeq || b.terminal).toBe(true);
  }
}

describe('JobHandle.progressStream()', () => {
  it('with Redis: every report in seq order, no duplicates, then the terminal event', async () => {
    const open = gate('redis-ps');
    const h = await tqRedis.enqueue(steps, { n: 20, delayMs: 10, gate: 'redis-ps' });
    const done = collect(h.progressStream());
    try {
      await waitFor(
        async () => (await numsub(progressJobChannel(db.schema, h.jobId))) >= 1,
        10_000,
        'subscribe',
      );
    } finally {
      open();
    }
    const events = await done;
    const progress = checkProgressEvents(events, 20);
    // Pub/sub delivers each report (Postgres alone would coalesce them into a few flushes).
    expect(progress.length).toBeGreaterThanOrEqual(15);
    expect(progress.every((e) => e.status === 'running')).toBe(true);
    await waitFor(
      async () => (await numsub(progressJobChannel(db.schema, h.jobId))) === 0,
      5000,
      'unsubscribe',
    );
  });

  it('without Redis: Postgres polling and NOTIFY, in seq order, no duplicates, then the terminal event', async () => {
    const h = await tqPg.enqueue(steps, { n: 10, delayMs: 60 });
    const events = await collect(h.progressStream());
    const progress = checkProgressEvents(events, 10);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    // Status changes seen by the reads are reported, never reordering seq.
    for (const e of events.filter((x) => x.kind === 'state_change' && !x.terminal))
      expect(['running', 'pending']).toContain(e.status);
  });

  it('a finished job yields only its terminal event (with and without Redis)', async () => {
    const h = await tqPg.enqueue(steps, { n: 3, delayMs: 1 });
    await h.wait({ timeout: '10s' });
    const viaPg = await collect(h.progressStream());
    expect(viaPg).toHaveLength(1);
    expect(viaPg[0]).toMatchObject({ kind: 'state_change', terminal: true, status: 'succeeded', seq: 3 });
    expect(viaPg[0]).toMatchObject({ step: 'step-3', percent: 100, data: { i: 3 }, actor: 'steps' });
    const handle = (await tqRedis.get(h.jobId))!;
    const viaRedis = await collect(handle.progressStream());
    expect(viaRedis).toHaveLength(1);
    expect(viaRedis[0]).toMatchObject({ terminal: true, status: 'succeeded', seq: 3 });
  });

  it('breaking out of the loop releases the LISTEN connection', async () => {
    // A client keeps its LISTEN a moment after its last wait or stream: let earlier tests' go.
    await waitFor(async () => (await listenConnections()) === 0, 10_000, 'earlier LISTENs to close');
    const open = gate('break-pg');
    gate('break-pg:hold');
    const h = await tqPg.enqueue(steps, { n: 3, delayMs: 1, gate: 'break-pg', holdAfter: 1 });
    const seen: ProgressEvent[] = [];
    const loop = (async () => {
      for await (const e of h.progressStream()) {
        seen.push(e);
        expect(await listenConnections()).toBe(1);
        if (e.kind === 'progress') break;
      }
    })();
    try {
      await waitFor(async () => (await listenConnections()) === 1, 10_000, 'LISTEN');
    } finally {
      open();
    }
    await loop;
    expect(seen.at(-1)).toMatchObject({ kind: 'progress', seq: 1 });
    await waitFor(async () => (await listenConnections()) === 0, 5000, 'the LISTEN connection to close');
    gates.get('break-pg:hold')!.open();
    await h.wait({ timeout: '10s' });
  });

  it('breaking out of the loop releases the Redis subscription; return() while waiting does too', async () => {
    const open = gate('break-redis');
    gate('break-redis:hold');
    const h = await tqRedis.enqueue(steps, { n: 3, delayMs: 1, gate: 'break-redis', holdAfter: 1 });
    const channel = progressJobChannel(db.schema, h.jobId);
    const it1 = h.progressStream();
    const it2 = h.progressStream({ pollTimeout: '1h' });
    try {
      const first = it1.next();
      await waitFor(async () => (await numsub(channel)) === 1, 10_000, 'subscribe');
      open();
      // A status change (pending → running) may come first, depending on when the worker claimed it.
      let r = await first;
      while (!r.done && r.value.kind !== 'progress') r = await it1.next();
      expect(r.value).toMatchObject({ kind: 'progress', seq: 1 });
      await it1.return!();
      await waitFor(async () => (await numsub(channel)) === 0, 5000, 'unsubscribe after return()');

      // A pending next() is ended at once by return() (the job is held: nothing would come).
      await waitFor(async () => (await h.refresh()).progressSeq === 1, 10_000, 'the flush');
      // The snapshot read delivers seq 1 (no subscription yet); the next call subscribes and waits.
      expect((await it2.next()).value).toMatchObject({ kind: 'progress', seq: 1 });
      const waiting = it2.next();
      await waitFor(async () => (await numsub(channel)) === 1, 10_000, 'subscribe again');
      await it2.return!();
      expect(await waiting).toEqual({ done: true, value: undefined });
      await waitFor(async () => (await numsub(channel)) === 0, 5000, 'unsubscribe after return() mid-wait');
    } finally {
      await it1.return!();
      await it2.return!();
      gates.get('break-redis')!.open();
      gates.get('break-redis:hold')!.open();
    }
    await h.wait({ timeout: '10s' });
  });

  it('an unknown job fails with JobNotFoundError; a closed client ends open streams with TaskQStateError', async () => {
    await expect(collect(tqPg.stream(newJobId()))).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(collect(tqRedis.stream(newJobId()))).rejects.toBeInstanceOf(JobNotFoundError);

    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisUrl: REDIS_URL });
    const open = gate('closing');
    const h = await tq.enqueue(steps, { n: 2, delayMs: 1, gate: 'closing' });
    const consumed = (async () => {
      for await (const e of h.progressStream()) expect(e.terminal).toBe(false);
    })().then(
      () => null,
      (err: unknown) => err,
    );
    await waitFor(
      async () => (await numsub(progressJobChannel(db.schema, h.jobId))) === 1,
      10_000,
      'subscribe',
    );
    await tq.close();
    expect(await consumed).toBeInstanceOf(TaskQStateError);
    expect(await numsub(progressJobChannel(db.schema, h.jobId))).toBe(0);
    expect(() => tq.stream(h.jobId)).toThrow(TaskQStateError);
    open();
    await (await tqPg.get(h.jobId))!.wait({ timeout: '10s' });
  });
});

describe('TaskQ.open() Redis options', () => {
  it('uses a caller-owned ioredis client without closing it; rejects bad options', async () => {
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redis });
    expect(tq.redis).toBe(redis);
    const open = gate('caller-redis');
    const h = await tq.enqueue(steps, { n: 12, delayMs: 5, gate: 'caller-redis' });
    const done = collect(h.progressStream());
    try {
      await waitFor(
        async () => (await numsub(progressJobChannel(db.schema, h.jobId))) === 1,
        10_000,
        'subscribe',
      );
    } finally {
      open();
    }
    const progress = checkProgressEvents(await done, 12);
    expect(progress.length).toBeGreaterThanOrEqual(9);
    await tq.close();
    expect(redis.status).toBe('ready');
    expect(await redis.ping()).toBe('PONG');

    await expect(
      TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redis, redisUrl: REDIS_URL }),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisUrl: ' ' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(
      TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisUrl: 'http://127.0.0.1:6379' }),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => new RedisProgressPublisher({ schema: db.schema })).toThrow(InvalidArgumentError);
  });
});

describe('TaskQ.stream()', () => {
  it('with LISTEN: the snapshot first, then updates in seq order, ending with the terminal one', async () => {
    const open = gate('stream-pg');
    const h = await tqPg.enqueue(steps, { n: 10, delayMs: 80, gate: 'stream-pg' });
    const it = tqPg.stream(h.jobId);
    const first = await it.next();
    // Claimed or not yet: the worker waits on the gate either way.
    expect(first.value).toEqual({
      jobId: h.jobId,
      status: expect.stringMatching(/^(pending|running)$/),
      progressState: {},
      progressSeq: 0,
      terminal: false,
    });
    const rest = collect(it);
    try {
      await waitFor(async () => (await listenConnections()) === 1, 10_000, 'LISTEN');
    } finally {
      open();
    }
    const events = [first.value as JobEvent, ...(await rest)];
    checkJobEvents(events, h.jobId, 10);
    // Flushes every 100 ms over ~800 ms: several intermediate updates arrive through NOTIFY.
    expect(events.filter((e) => !e.terminal && e.progressSeq > 0).length).toBeGreaterThanOrEqual(2);
    await waitFor(async () => (await listenConnections()) === 0, 5000, 'the LISTEN connection to close');
  });

  it('with Redis: every report as a snapshot, ending with the terminal one', async () => {
    const open = gate('stream-redis');
    const h = await tqRedis.enqueue(steps, { n: 20, delayMs: 10, gate: 'stream-redis' });
    const events: JobEvent[] = [];
    const done = (async () => {
      for await (const e of tqRedis.stream(h.jobId)) events.push(e);
    })();
    try {
      await waitFor(
        async () => (await numsub(progressJobChannel(db.schema, h.jobId))) >= 1,
        10_000,
        'subscribe',
      );
    } finally {
      open();
    }
    await done;
    checkJobEvents(events, h.jobId, 20);
    expect(events[0]).toMatchObject({ progressSeq: 0, terminal: false });
    expect(events.filter((e) => !e.terminal && e.progressSeq > 0).length).toBeGreaterThanOrEqual(15);
  });

  it('a finished job yields one terminal snapshot; break releases the Redis subscription', async () => {
    const h = await tqRedis.enqueue(steps, { n: 2, delayMs: 1 });
    await h.wait({ timeout: '10s' });
    const only = await collect(tqRedis.stream(h.jobId));
    expect(only).toEqual([
      {
        jobId: h.jobId,
        status: 'succeeded',
        progressState: { step: 'step-2', percent: 100, data: { i: 2 } },
        progressSeq: 2,
        terminal: true,
      },
    ]);

    const open = gate('stream-break');
    const h2 = await tqRedis.enqueue(steps, { n: 2, delayMs: 1, gate: 'stream-break' });
    const channel = progressJobChannel(db.schema, h2.jobId);
    for await (const e of tqRedis.stream(h2.jobId)) {
      expect(['pending', 'running']).toContain(e.status);
      // The snapshot comes before any subscription; ask for the next one to subscribe.
      break;
    }
    expect(await numsub(channel)).toBe(0);
    const it = tqRedis.stream(h2.jobId);
    try {
      await it.next();
      const next = it.next();
      await waitFor(async () => (await numsub(channel)) === 1, 10_000, 'subscribe');
      await it.return!();
      // Ended at once — unless a status change (the worker claiming it) was already on its way.
      const r = await next;
      if (!r.done) expect(r.value.terminal).toBe(false);
      expect(await it.next()).toEqual({ done: true, value: undefined });
      await waitFor(async () => (await numsub(channel)) === 0, 5000, 'unsubscribe');
    } finally {
      await it.return!();
      open();
    }
    await h2.wait({ timeout: '10s' });
  });
});

/** A running job's progress event, as a publisher is given it. */
const runningEvent = (jobId: string, seq: number, actor = 'steps'): ProgressEvent => ({
  v: 1,
  kind: 'progress',
  jobId,
  actor,
  ts: new Date().toISOString(),
  seq,
  status: 'running',
  terminal: false,
});

describe('RedisProgressPublisher', () => {
  it('publishes to the job channel and the schema-wide channel', async () => {
    const sub = redis.duplicate();
    const got: { channel: string; message: string }[] = [];
    sub.on('message', (channel: string, message: string) => got.push({ channel, message }));
    const jobId = newJobId();
    await sub.subscribe(progressJobChannel(db.schema, jobId), progressGlobalChannel(db.schema));
    const pub = new RedisProgressPublisher({ redisUrl: REDIS_URL, schema: db.schema });
    await waitFor(async () => {
      pub.publishTerminal(jobId, 'steps', 'succeeded', 4, { step: 'x', percent: 100, other: 1 });
      return got.length >= 2;
    }, 10_000);
    await pub.close();
    sub.disconnect();
    expect(new Set(got.map((g) => g.channel))).toEqual(
      new Set([progressJobChannel(db.schema, jobId), progressGlobalChannel(db.schema)]),
    );
    const event = JSON.parse(got[0]!.message) as ProgressEvent;
    expect(event).toMatchObject({
      v: 1,
      kind: 'state_change',
      jobId,
      actor: 'steps',
      seq: 4,
      status: 'succeeded',
      step: 'x',
      percent: 100,
      terminal: true,
    });
    expect(event).not.toHaveProperty('detail');
    expect(event).not.toHaveProperty('other');
    expect(progressJobChannel(db.schema, jobId)).toBe(`taskq:${db.schema}:progress:${jobId}`);
  });

  it('never throws when Redis is down: failures are counted and close() is prompt', async () => {
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
    const pub = new RedisProgressPublisher({
      redisUrl: 'redis://127.0.0.1:1',
      schema: db.schema,
      logger: { ...logger, child: () => logger },
    });
    const jobId = newJobId();
    for (let seq = 1; seq <= 100; seq++) {
      expect(() => pub.publish(runningEvent(jobId, seq))).not.toThrow();
    }
    expect(() => pub.publishTerminal(jobId, 'steps', 'failed', 100, {})).not.toThrow();
    await waitFor(() => pub.stats.failed === 101, 10_000, 'the failures to be counted');
    expect(pub.stats.published).toBe(0);
    // Rate-limited: one warning for 101 failures.
    expect(warnings.filter((w) => w === 'progress-publish-failed')).toHaveLength(1);
    // close() returns with Redis still down: it does not wait for a reconnection that never comes.
    await pub.close();
    pub.publish(runningEvent(jobId, 101));
    expect(pub.stats.failed).toBe(102);
  });

  it('counts an event once per event, whatever its channels did, and survives a client that throws', async () => {
    const jobId = newJobId();
    const event = runningEvent(jobId, 1);
    // A client you pass in that throws at once (as ioredis does after `quit()`).
    const throwing = {
      publish: () => {
        throw new Error('Connection is closed.');
      },
    };
    const broken = new RedisProgressPublisher({ redis: throwing as never, schema: db.schema });
    expect(() => broken.publish(event)).not.toThrow();
    // Sent at the end of this turn of the event loop.
    expect(broken.stats).toEqual({ published: 0, failed: 0, pending: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(broken.stats).toEqual({ published: 0, failed: 1, pending: 0 });
    // One channel answers, the other fails: the event failed, counted once.
    let calls = 0;
    const halfBroken = {
      publish: (_c: string, _m: string, cb: (err: Error | null, n?: number) => void) => {
        const ok = calls++ % 2 === 0;
        setImmediate(() => (ok ? cb(null, 0) : cb(new Error('LOADING'))));
      },
    };
    const half = new RedisProgressPublisher({ redis: halfBroken as never, schema: db.schema });
    half.publish(event);
    half.publish({ ...event, seq: 2 });
    expect(half.stats.pending).toBe(2);
    await half.close();
    expect(half.stats).toEqual({ published: 0, failed: 2, pending: 0 });
    // Only the job's channel (no global one): one answer completes the event.
    const single = new RedisProgressPublisher({
      redis: {
        publish: (_c: string, _m: string, cb: (err: null, n: number) => void) =>
          setImmediate(() => cb(null, 1)),
      } as never,
      schema: db.schema,
      publishGlobal: false,
    });
    single.publish(event);
    await single.close();
    expect(single.stats).toEqual({ published: 1, failed: 0, pending: 0 });
  });

  it('sends the events of one turn together, in order, split into script calls of MAX_EVENTS_PER_CALL', async () => {
    const sub = redis.duplicate();
    const global: string[] = [];
    const perJob = new Map<string, number>();
    sub.on('message', (channel: string, message: string) => {
      if (channel === progressGlobalChannel(db.schema)) global.push(message);
      else perJob.set(channel, (perJob.get(channel) ?? 0) + 1);
    });
    const jobIds = Array.from({ length: 3 }, () => newJobId());
    await sub.subscribe(
      progressGlobalChannel(db.schema),
      ...jobIds.map((id) => progressJobChannel(db.schema, id)),
    );
    const pub = new RedisProgressPublisher({ redisUrl: REDIS_URL, schema: db.schema });
    const count = MAX_EVENTS_PER_CALL * 2 + 7;
    const sent = (seq: number) => runningEvent(jobIds[seq % 3]!, seq);
    // Wait for the connection, so that every event of the burst is sent rather than refused.
    await waitFor(async () => {
      pub.publish(sent(0));
      return global.length > 0;
    }, 10_000);
    await waitFor(() => pub.stats.pending === 0, 10_000, 'the probes to be answered');
    const stats0 = pub.stats;
    for (let seq = 1; seq <= count; seq++) pub.publish(sent(seq));
    expect(pub.stats.pending).toBe(count);
    const burst = () => global.map((m) => (JSON.parse(m) as ProgressEvent).seq).filter((seq) => seq > 0);
    await waitFor(() => burst().length === count, 10_000, 'every event on the global channel');
    await pub.close();
    sub.disconnect();
    expect(burst()).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    const jobTotal = [...perJob.values()].reduce((a, b) => a + b, 0);
    expect(jobTotal).toBe(global.length);
    expect(pub.stats).toEqual({ failed: stats0.failed, pending: 0, published: stats0.published + count });
  });

  it('counts every event of a failed script call as failed, once', async () => {
    const warnings: object[] = [];
    const logger = { ...silentLogger, warn: (o: object) => void warnings.push(o) };
    const scripted: Record<string, unknown> = {
      publish: () => {
        throw new Error('not used for a batch');
      },
      defineCommand(name: string) {
        scripted[name] = (...args: unknown[]) => {
          const cb = args.at(-1) as (err: Error) => void;
          setImmediate(() => cb(new Error('BUSY Redis is busy running a script')));
        };
      },
    };
    const pub = new RedisProgressPublisher({
      redis: scripted as never,
      schema: db.schema,
      logger: { ...logger, child: () => logger },
    });
    const jobId = newJobId();
    for (let seq = 1; seq <= 5; seq++) pub.publish(runningEvent(jobId, seq));
    await pub.close();
    expect(pub.stats).toEqual({ published: 0, failed: 5, pending: 0 });
    expect(warnings).toEqual([expect.objectContaining({ events: 5, failed: 5, jobId })]);
  });

  it('a worker with an unreachable TASKQ_REDIS_URL still runs jobs; streams fall back to Postgres', async () => {
    const w = new Worker({
      actors: [stepsElsewhere],
      settings: {
        pgDsn: TEST_DSN,
        schema: db.schema,
        queues: ['progress_elsewhere'],
        maxConcurrency: 2,
        redisUrl: 'redis://127.0.0.1:1',
        progressCoalesceInterval: '100ms',
        watchdogEnabled: false,
      },
      logger: silentLogger,
    });
    await w.start();
    try {
      const h = await tqRedis.enqueue(stepsElsewhere, { n: 5, delayMs: 20 });
      const events = await collect(h.progressStream());
      checkProgressEvents(events, 5);
    } finally {
      await w.stop();
    }
  });
});

describe('in-memory backend', () => {
  it('progressStream() polls (no Redis) and ends with the terminal event', async () => {
    const backend = new InMemoryBackend();
    const client = new TaskQ(backend);
    const w = new Worker({
      actors: [steps],
      backend,
      settings: {
        schema: db.schema,
        queues: ['progress'],
        progressCoalesceInterval: '100ms',
        watchdogEnabled: false,
        notifyEnabled: true,
      },
      logger: silentLogger,
    });
    await w.start();
    try {
      const h = await client.enqueue(steps, { n: 6, delayMs: 40 });
      const events = await collect(h.progressStream({ pollInterval: '50ms' }));
      const progress = checkProgressEvents(events, 6);
      expect(progress.length).toBeGreaterThanOrEqual(1);
      const snapshots = await collect(client.stream(h.jobId));
      expect(snapshots).toHaveLength(1);
    } finally {
      await w.stop();
      await client.close();
    }
  });
});
