import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import { wakeChannel } from '../../src/core/schema-name.js';
import { ActorConfigDriftList, SchemaNotMigratedError } from '../../src/errors/index.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;
const admin = new pg.Pool({ connectionString: TEST_DSN, max: 2 });

const echo = actor({ name: 'echo', queue: 'echo' }, async (p: unknown) => p);

const base = {
  pgDsn: TEST_DSN,
  queues: ['echo'],
  heartbeatInterval: '1s',
  lockLease: '10s',
  cancellationGracePeriod: '1s',
  cleanupGracePeriod: '1s',
  terminationGracePeriod: '10s',
  watchdogEnabled: false,
} as const;

beforeAll(async () => {
  db = await migratedSchema('ntf');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await admin.end();
  await db.drop();
});

describe('NOTIFY wake-ups', () => {
  it('re-establishes a LISTEN connection killed by the server and keeps jobs flowing', async () => {
    const worker = new Worker({
      actors: [echo],
      settings: {
        ...base,
        schema: db.schema,
        // Polling is slow on purpose: a job that runs promptly came through NOTIFY.
        pollInterval: '20s',
        notifyPollInterval: '20s',
        notifyHealthCheckInterval: '200ms',
        notifyReconnectBackoffInitial: '100ms',
      },
      logger: silentLogger,
    });
    await worker.start();
    try {
      const first = await tq.enqueue(echo, { n: 1 });
      expect(await first.wait({ timeout: '5s' })).toEqual({ n: 1 });

      const suffix = worker.workerId.slice(-12);
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1`,
        [`taskq-listen:${suffix}`],
      );
      expect(killed.rowCount).toBe(1);
      await waitFor(() => (worker.notifyListener?.reconnects ?? 0) >= 1, 10_000, 'the listener to reconnect');
      expect(worker.notifyListener?.connected).toBe(true);

      const t0 = Date.now();
      const second = await tq.enqueue(echo, { n: 2 });
      expect(await second.wait({ timeout: '5s' })).toEqual({ n: 2 });
      const ms = Date.now() - t0;
      // Polling is at 20 s, so a job done within the 5 s wait came through the new LISTEN.
      console.log(`after reconnect, enqueue to done: ${ms} ms`);
    } finally {
      await worker.stop();
    }
  });
});

describe('enqueue wake-ups under concurrency', () => {
  // Alone, an enqueue NOTIFYs inside its insert; while another is in flight, the wake-up follows the
  // insert's commit in a transaction of its own (so that concurrent inserts share WAL flushes).
  // Either way every insert is announced, only once it is visible, and before the call returns.
  it('announces every concurrent enqueue, single and batch, after its insert is visible', async () => {
    const listener = new pg.Client({ connectionString: TEST_DSN });
    await listener.connect();
    const seen: number[] = [];
    const checks: Promise<void>[] = [];
    let wakesBeforeBarrier = -1;
    listener.on('notification', (n) => {
      if (n.payload === 'barrier') {
        wakesBeforeBarrier = seen.length;
        return;
      }
      const k = seen.length + 1;
      seen.push(k);
      // The jobs visible when the k-th wake-up arrives: at least one insert per wake-up so far.
      checks.push(
        admin
          .query<{ n: number }>(`SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE queue = 'wake'`)
          .then((r) => expect(r.rows[0]!.n).toBeGreaterThanOrEqual(k)),
      );
    });
    await listener.query(`LISTEN "${wakeChannel(db.schema)}"`);
    try {
      const wakeEcho = actor({ name: 'wake_echo', queue: 'wake' }, async (p: unknown) => p);
      await Promise.all([
        ...Array.from({ length: 12 }, (_, i) => tq.enqueue(wakeEcho, { i })),
        ...Array.from({ length: 4 }, (_, b) =>
          tq.enqueueBatch(Array.from({ length: 5 }, (_, i) => batchItem(wakeEcho, { b, i }))),
        ),
      ]);
      // 16 inserting transactions, each announced once (inline or after its commit), and every
      // announcement sent before its call returned: a NOTIFY sent now arrives after all of them.
      await admin.query('SELECT pg_notify($1, $2)', [wakeChannel(db.schema), 'barrier']);
      await waitFor(() => wakesBeforeBarrier >= 0, 5000, 'the barrier NOTIFY');
      expect(wakesBeforeBarrier).toBe(16);
      await Promise.all(checks);
      const jobs = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE queue = 'wake'`,
      );
      expect(jobs.rows[0]!.n).toBe(32);
    } finally {
      await listener.end();
    }
  });

  /** A worker of `echo` that polls every 20 s: a job done within seconds came through a wake-up. */
  async function startNotifyOnlyWorker(): Promise<Worker> {
    const worker = new Worker({
      actors: [echo],
      settings: { ...base, schema: db.schema, pollInterval: '20s', notifyPollInterval: '20s' },
      logger: silentLogger,
    });
    await worker.start();
    return worker;
  }

  it('lets an idle worker start concurrently enqueued jobs without polling', async () => {
    const worker = await startNotifyOnlyWorker();
    try {
      // Polling is at 20 s: each of these finishes within the wait only through a wake-up.
      for (let round = 0; round < 3; round++) {
        const [batch, ...handles] = await Promise.all([
          tq.enqueueBatch([batchItem(echo, { round, i: 8 }), batchItem(echo, { round, i: 9 })]),
          ...Array.from({ length: 8 }, (_, i) => tq.enqueue(echo, { round, i })),
        ]);
        const all = [...handles, ...batch.jobHandles];
        expect(await Promise.all(all.map((h) => h.wait({ timeout: '5s' })))).toHaveLength(10);
      }
    } finally {
      await worker.stop();
    }
  });

  it('makes no empty claims for freed slots under a trickle: each job is claimed on its wake-up', async () => {
    const claims = vi.spyOn(PostgresBackend.prototype, 'dispatchBatch');
    const worker = await startNotifyOnlyWorker();
    try {
      await waitFor(() => worker.notifyListener?.connected === true, 5000, 'the listener');
      claims.mockClear();
      // One job at a time: it is claimed on its NOTIFY; its handler's end and its outcome's write
      // free a slot each, and the claim before them found the queue drained, so neither claims.
      for (let i = 0; i < 10; i++) {
        const h = await tq.enqueue(echo, { i });
        expect(await h.wait({ timeout: '5s' })).toEqual({ i });
      }
      expect(claims.mock.calls.length).toBeGreaterThanOrEqual(10);
      expect(claims.mock.calls.length).toBeLessThanOrEqual(12);
    } finally {
      await worker.stop();
      claims.mockRestore();
    }
  });
});

describe('worker startup checks', () => {
  it('refuses an unmigrated schema with the command to run', async () => {
    const worker = new Worker({
      actors: [echo],
      settings: { ...base, schema: uniqueSchemaName('none') },
      logger: silentLogger,
    });
    const err = await worker.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaNotMigratedError);
    expect((err as Error).message).toContain('taskq migrate up');
    expect(await worker.stopped).toBe('fatal');
  });

  it('refuses structural actor_config drift unless forced, and never overwrites stored capacity', async () => {
    await db.pool.query(
      `INSERT INTO "${db.schema}".actor_config (actor, queue, metadata, max_concurrent) VALUES ('drifty', 'old-queue', '{"v":1}', 3)`,
    );
    const drifty = actor(
      { name: 'drifty', queue: 'new-queue', metadata: { v: 2 }, maxConcurrent: 9 },
      async () => undefined,
    );
    const w1 = new Worker({
      actors: [drifty],
      settings: { ...base, schema: db.schema },
      logger: silentLogger,
    });
    const err = await w1.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorConfigDriftList);
    expect((err as ActorConfigDriftList).drifts.map((d) => d.field).sort()).toEqual(['metadata', 'queue']);
    expect((err as Error).message).toContain('TASKQ_FORCE_UPDATE_ACTOR_CONFIG');

    const w2 = new Worker({
      actors: [drifty],
      settings: { ...base, schema: db.schema, forceUpdateActorConfig: true },
      logger: silentLogger,
    });
    await w2.start();
    await w2.stop();
    const row = await db.pool.query(
      `SELECT queue, metadata, max_concurrent FROM "${db.schema}".actor_config WHERE actor = 'drifty'`,
    );
    expect(row.rows[0]).toEqual({ queue: 'new-queue', metadata: { v: 2 }, max_concurrent: 3 });
  });

  it('registers itself in workers while running and leaves on stop', async () => {
    const worker = new Worker({
      actors: [echo],
      settings: { ...base, schema: db.schema, workerLabel: 'blue' },
      logger: silentLogger,
    });
    await worker.start();
    const rows = await db.pool.query(
      `SELECT worker_label, pid, queues FROM "${db.schema}".workers WHERE id = $1`,
      [worker.workerId],
    );
    expect(rows.rows[0]).toEqual({ worker_label: 'blue', pid: process.pid, queues: ['echo'] });
    await waitFor(() => worker.isLeader, 5000, 'leadership');
    await worker.stop();
    const after = await db.pool.query(`SELECT 1 FROM "${db.schema}".workers WHERE id = $1`, [
      worker.workerId,
    ]);
    expect(after.rowCount).toBe(0);
  });
});
