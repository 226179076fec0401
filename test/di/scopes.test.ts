/**
 * Injected values in a running worker, against real Postgres: job-scoped values made per attempt
 * and torn down after it in reverse order (all of them, even when one teardown throws, the job's
 * outcome unaffected; also when the job is cancelled), a failing factory failing the attempt,
 * worker-scoped values shared across jobs and torn down at stop, process-scoped values shared by
 * the Workers of the process and torn down with the last one, and a start that fails half-way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { Providers } from '../../src/di/providers.js';
import { token } from '../../src/di/token.js';
import { DependencyResolutionError, JobFailed } from '../../src/errors/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { Snooze } from '../../src/retry/control-flow.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { testWorkerSettings } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const QUEUE = 'di';
/** Every make and teardown, in order: `make Conn#3`, `close Conn#3`, ... */
const events: string[] = [];
const logs: { msg: string | undefined; fields: Record<string, unknown> }[] = [];
let serial = 0;

function recordingLogger(bindings: Record<string, unknown> = {}): Logger {
  const keep = (obj: object, msg?: string): void =>
    void logs.push({ msg, fields: { ...bindings, ...(obj as Record<string, unknown>) } });
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: keep,
    error: keep,
    child: (b) => recordingLogger({ ...bindings, ...b }),
  };
}

interface Named {
  id: string;
}
const made = (kind: string): Named => {
  const id = `${kind}#${++serial}`;
  events.push(`make ${id}`);
  return { id };
};

const Pool = token<Named>('Pool');
const Cache = token<Named & AsyncDisposable>('Cache');
const Conn = token<Named>('Conn');
const Tx = token<Named>('Tx');
const Audit = token<Named>('Audit');
const Broken = token<Named>('Broken');

function providers(): Providers {
  return new Providers()
    .factory(Pool, { scope: 'process', dispose: (p) => void events.push(`dispose ${p.id}`) }, () =>
      made('Pool'),
    )
    .factory(Cache, { scope: 'worker', inject: { pool: Pool } }, () => {
      const c = made('Cache');
      return { ...c, [Symbol.asyncDispose]: async () => void events.push(`dispose ${c.id}`) };
    })
    .factory(
      Conn,
      { scope: 'job', inject: { cache: Cache }, dispose: (c) => void events.push(`close ${c.id}`) },
      () => made('Conn'),
    )
    .factory(
      Tx,
      { scope: 'job', inject: { conn: Conn }, dispose: async (t) => void events.push(`close ${t.id}`) },
      async () => made('Tx'),
    )
    .factory(
      Audit,
      {
        scope: 'job',
        dispose: () => {
          throw new Error('audit teardown broke');
        },
      },
      () => made('Audit'),
    )
    .factory(Broken, { scope: 'job', inject: { conn: Conn } }, async () => {
      throw new Error('connection refused');
    });
}

const ordered = actor(
  { name: 'di_ordered', queue: QUEUE, inject: { conn: Conn, tx: Tx, audit: Audit, cache: Cache } },
  async (_p, _c, { conn, tx, audit, cache }) => [conn.id, tx.id, audit.id, cache.id],
);
const retried = actor(
  {
    name: 'di_retried',
    queue: QUEUE,
    retry: { maxAttempts: 2, base: 10, jitter: 0 },
    inject: { conn: Conn },
  },
  async (_p, ctx, { conn }) => {
    if (ctx.attempt === 1) throw new Error(`first attempt had ${conn.id}`);
    return conn.id;
  },
);
const started = new Set<string>();
const cancellable = actor(
  { name: 'di_cancellable', queue: QUEUE, inject: { conn: Conn } },
  async (_p, ctx, { conn }) => {
    started.add(ctx.jobId);
    await new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error)),
    );
    return conn.id;
  },
);
const broken = actor(
  { name: 'di_broken', queue: QUEUE, retry: { maxAttempts: 1 }, inject: { broken: Broken } },
  async () => 'never',
);

/** Ignores its signal: it settles only when the test opens the gate (after its timeout failed it). */
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));
const deaf = actor(
  { name: 'di_deaf', queue: QUEUE, startToClose: 200, retry: { maxAttempts: 1 }, inject: { conn: Conn } },
  async (_p, ctx, { conn }) => {
    started.add(ctx.jobId);
    await gate;
    return conn.id;
  },
);

/** Its first make snoozes the job (a factory may defer it, e.g. while a pool is exhausted). */
const Slot = token<Named>('Slot');
let slotTries = 0;
const deferred = actor(
  { name: 'di_deferred', queue: QUEUE, retry: { maxAttempts: 1 }, inject: { conn: Conn, slot: Slot } },
  async (_p, ctx, { slot }) => ({ slot: slot.id, attempt: ctx.attempt }),
);

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('di');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = new Worker({
    actors: [ordered, retried, cancellable, broken, deaf, deferred],
    providers: providers().factory(Slot, { scope: 'job', inject: { conn: Conn } }, () => {
      if (slotTries++ === 0) throw new Snooze(20);
      return made('Slot');
    }),
    settings: testWorkerSettings(db.schema, { queues: [QUEUE], maxConcurrency: 4 }),
    logger: recordingLogger(),
  });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await tq?.close();
  await db?.drop();
});

describe('job-scoped values', () => {
  it('are made per attempt and torn down last first, every one even when one throws', async () => {
    const [conn, tx, audit, cache] = await (await tq.enqueue(ordered, null)).wait({ timeout: '10s' });
    // The job succeeded although Audit's teardown threw; Tx (made from Conn) went before Conn.
    await waitFor(() => events.includes(`close ${conn}`), 5000, 'the teardowns');
    const teardowns = events.filter((e) => e.startsWith('close') && [conn, tx].some((id) => e.endsWith(id!)));
    expect(teardowns).toEqual([`close ${tx}`, `close ${conn}`]);
    expect(events.indexOf(`make ${conn}`)).toBeLessThan(events.indexOf(`make ${tx}`));
    expect(events.indexOf(`make ${tx}`)).toBeLessThan(events.indexOf(`make ${audit}`));
    expect(logs).toContainEqual({
      msg: 'di-teardown-failed',
      fields: expect.objectContaining({
        token: 'Audit',
        scope: 'job',
        actor: 'di_ordered',
        err: expect.objectContaining({ message: 'audit teardown broke' }),
      }),
    });
    // The worker-scoped Cache is the same for every job.
    const [, , , again] = await (await tq.enqueue(ordered, null)).wait({ timeout: '10s' });
    expect(again).toBe(cache);
  });

  it('are new for each attempt, and each attempt’s are torn down', async () => {
    const h = await tq.enqueue(retried, null);
    const second = await h.wait({ timeout: '10s' });
    const { rows } = await db.pool.query<{ error_message: string | null }>(
      `SELECT error_message FROM "${db.schema}".job_attempts WHERE job_id = $1 ORDER BY attempt`,
      [h.jobId],
    );
    const firstConn = /had (Conn#\d+)/.exec(rows[0]?.error_message ?? '')?.[1];
    expect(firstConn).toBeDefined();
    expect(firstConn).not.toBe(second);
    expect(events).toContain(`close ${firstConn}`);
    await waitFor(() => events.includes(`close ${second}`), 5000, 'the second attempt’s teardown');
  });

  it('are torn down when the job is cancelled', async () => {
    const h = await tq.enqueue(cancellable, null);
    await waitFor(() => started.has(h.jobId), 10_000, 'the handler to start');
    const conn = events
      .filter((e) => e.startsWith('make Conn'))
      .at(-1)!
      .slice('make '.length);
    await tq.cancel(h.jobId, 'test');
    await waitFor(async () => (await h.refresh()).status === 'cancelled', 10_000, 'the job to end cancelled');
    expect(events).toContain(`close ${conn}`);
  });

  it('outlive a timed-out handler that ignores its signal, torn down once it settles', async () => {
    const h = await tq.enqueue(deaf, null);
    await waitFor(() => started.has(h.jobId), 10_000, 'the handler to start');
    const conn = events
      .filter((e) => e.startsWith('make Conn'))
      .at(-1)!
      .slice('make '.length);
    await waitFor(async () => (await h.refresh()).status === 'failed', 10_000, 'the timeout to fail the job');
    expect((await h.refresh()).errorClass).toBe('StartToCloseTimeout');
    // The handler still runs (it may still use its connection): nothing is torn down yet.
    expect(events).not.toContain(`close ${conn}`);
    openGate();
    await waitFor(() => events.includes(`close ${conn}`), 5000, 'the teardown after the handler settled');
  });

  it('a factory’s Snooze defers the job as the handler’s would, without using an attempt', async () => {
    const h = await tq.enqueue(deferred, null);
    const result = await h.wait({ timeout: '10s' });
    expect(result.slot).toMatch(/^Slot#\d+$/);
    expect(result.attempt).toBe(1);
    const { rows } = await db.pool.query<{ outcome: string }>(
      `SELECT outcome FROM "${db.schema}".job_attempts WHERE job_id = $1 ORDER BY started_at`,
      [h.jobId],
    );
    expect(rows.map((r) => r.outcome)).toEqual(['snoozed', 'succeeded']);
  });

  it('a failing factory fails the attempt, after tearing down what was made', async () => {
    const h = await tq.enqueue(broken, null);
    const err = await h.wait({ timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobFailed);
    const row = await h.refresh();
    expect(row.status).toBe('failed');
    expect(row.errorClass).toBe('DependencyResolutionError');
    expect(row.errorMessage).toBe(
      `the provider of Broken failed while making actor "di_broken"'s dependencies: connection refused ` +
        `(see cause; the attempt is retried per the actor's retry policy)`,
    );
    const conn = events
      .filter((e) => e.startsWith('make Conn'))
      .at(-1)!
      .slice('make '.length);
    expect(events).toContain(`close ${conn}`);
  });
});

describe('worker- and process-scoped values', () => {
  it('are torn down at stop, worker-scoped first; process-scoped ones with the last Worker', async () => {
    const shared = providers();
    const w = (queue: string): Worker =>
      new Worker({
        actors: [
          actor(
            { name: `di_${queue}`, queue, inject: { cache: Cache } },
            async (_p, _c, { cache }) => cache.id,
          ),
        ],
        providers: shared,
        settings: testWorkerSettings(db.schema, { queues: [queue] }),
        logger: recordingLogger(),
      });
    const w1 = w('di_w1');
    const w2 = w('di_w2');
    const from = events.length;
    await w1.start();
    await w2.start();
    const mine = (): string[] => events.slice(from);
    // One Pool for the process (of this Providers), one Cache per Worker.
    expect(mine().filter((e) => e.startsWith('make Pool'))).toHaveLength(1);
    const caches = mine()
      .filter((e) => e.startsWith('make Cache'))
      .map((e) => e.slice('make '.length));
    expect(caches).toHaveLength(2);
    const pool = mine()
      .find((e) => e.startsWith('make Pool'))!
      .slice('make '.length);
    await w1.stop();
    expect(mine()).toContain(`dispose ${caches[0]}`);
    expect(mine()).not.toContain(`dispose ${pool}`);
    await w2.stop();
    expect(mine().slice(-2)).toEqual([`dispose ${caches[1]}`, `dispose ${pool}`]);
  });

  it('a factory failing at start fails the start and tears down what was made', async () => {
    const Bad = token<string>('Bad');
    const p = providers().factory(Bad, { scope: 'worker', inject: { cache: Cache } }, () => {
      throw new Error('no route to host');
    });
    const w = new Worker({
      actors: [actor({ name: 'di_bad', queue: 'di_bad', inject: { bad: Bad } }, async () => undefined)],
      providers: p,
      settings: testWorkerSettings(db.schema, { queues: ['di_bad'] }),
      logger: recordingLogger(),
    });
    const from = events.length;
    const err = await w.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyResolutionError);
    expect((err as Error).message).toBe(
      'the provider of Bad failed at worker start: no route to host (see cause; the worker did not start)',
    );
    const mine = events.slice(from);
    const cache = mine.find((e) => e.startsWith('make Cache'))!.slice('make '.length);
    expect(mine).toContain(`dispose ${cache}`);
    expect(w.phase).toBe('stopped');
  });
});
