/**
 * The peers' releases that need Node 22: graphile-worker 0.18 and pg-boss 12, both sides (producer
 * and worker) written against their own APIs. Plain JavaScript, so that it runs under the Node 22
 * binary of this directory without a TypeScript loader; the packages it imports resolve to this
 * directory's own node_modules (not the root's Node 20 releases) because the file lives here.
 *
 * Loaded by `producer-proc.mjs` (the producer side, in a Node 22 child of the harness) and, through
 * `bench/systems/node22.ts`, by `bench/worker-proc.ts` running under Node 22 (the worker side).
 */
import { randomBytes } from 'node:crypto';

import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import pg from 'pg';
import { PgBoss } from 'pg-boss';

/** Queue (pg-boss) and task identifier (graphile-worker) of the benchmark jobs; as bench/lib/common.ts. */
const BENCH_QUEUE = 'bench';
const BENCH_TASK = 'noop';

/** Connections the whole fleet of one run may use; as bench/systems/graphile.ts. */
const FLEET_CONNECTIONS = 60;
/**
 * pg-boss 12's base polling interval, its minimum. It only applies while LISTEN/NOTIFY is not
 * established; with it, NOTIFY wakes the worker and `burstWhenBatchFull` keeps it fetching while
 * the batches come back full, so the relaxed notify-mode poll (30 s default) never paces a drain.
 */
const PGBOSS_POLLING_SECONDS = 0.5;

/** Errors and warnings to stderr; the rest dropped (graphile-worker's default logger is chatty). */
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`[graphile ${level}] ${message}\n`);
});

/** A fresh schema name for a system (the harness passes it on to the worker processes). */
export function schemaName(system) {
  const tag = system === 'pgboss12' ? 'pb12' : 'gw18';
  return `bench_${tag}_${randomBytes(4).toString('hex')}`;
}

/**
 * The producer side of `system` in schema `schema`, against PostgreSQL at `dsn`: setup, teardown,
 * enqueueOne, enqueueBulk, outstanding — the same methods as the harness's SystemAdapter.
 */
export function createProducer(system, schema, dsn) {
  if (system === 'graphile-018-tuned') return graphileProducer(schema, dsn);
  if (system === 'pgboss12') return pgBossProducer(schema, dsn);
  throw new Error(`not a Node 22 system: ${system}`);
}

function graphileProducer(schema, dsn) {
  let utils = null;
  let pool = null;
  return {
    async setup() {
      pool = new pg.Pool({ connectionString: dsn, max: 2 });
      utils = await makeWorkerUtils({ connectionString: dsn, schema, maxPoolSize: 4, logger: quietLogger });
      await utils.migrate();
    },
    async teardown() {
      await Promise.resolve(utils?.release()).catch(() => undefined);
      utils = null;
      if (pool) {
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await pool.end().catch(() => undefined);
        pool = null;
      }
    },
    async enqueueOne(payload) {
      await utils.addJob(BENCH_TASK, payload);
    },
    async enqueueBulk(payloads) {
      await utils.addJobs(payloads.map((p) => ({ identifier: BENCH_TASK, payload: p })));
    },
    async outstanding() {
      const r = await pool.query(
        `SELECT count(*) AS n FROM "${schema}"._private_jobs WHERE is_available OR locked_at IS NOT NULL`,
      );
      return Number(r.rows[0]?.n ?? 0);
    },
  };
}

function pgBossProducer(schema, dsn) {
  let boss = null;
  let pool = null;
  return {
    async setup() {
      pool = new pg.Pool({ connectionString: dsn, max: 2 });
      // As the pg-boss 10 adapter's producer: defaults but a small pool (no LISTEN connection: it
      // only sends).
      boss = new PgBoss({ connectionString: dsn, schema, max: 4 });
      boss.on('error', (err) => process.stderr.write(`[pg-boss error] ${err.message}\n`));
      await boss.start();
      // notify: every insert into the queue issues a NOTIFY that wakes listening workers.
      await boss.createQueue(BENCH_QUEUE, { notify: true });
    },
    async teardown() {
      await boss?.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => undefined);
      boss = null;
      if (pool) {
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await pool.end().catch(() => undefined);
        pool = null;
      }
    },
    async enqueueOne(payload) {
      await boss.send(BENCH_QUEUE, payload);
    },
    async enqueueBulk(payloads) {
      await boss.insert(
        BENCH_QUEUE,
        payloads.map((p) => ({ data: p })),
      );
    },
    async outstanding() {
      const r = await pool.query(
        `SELECT count(*) AS n FROM "${schema}".job WHERE name = $1 AND state < 'completed'`,
        [BENCH_QUEUE],
      );
      return Number(r.rows[0]?.n ?? 0);
    },
  };
}

/**
 * Starts `spec.system`'s worker (a WorkerStarter of bench/systems/types.ts): its no-op handler calls
 * `hooks.onJob(payload)` first thing; failed attempts go to `hooks.onFailed`.
 */
export async function startWorker(spec, hooks, dsn) {
  if (spec.system === 'graphile-018-tuned') return startGraphile(spec, hooks, dsn);
  if (spec.system === 'pgboss12') return startPgBoss(spec, hooks, dsn);
  throw new Error(`not a Node 22 system: ${spec.system}`);
}

async function startGraphile(spec, hooks, dsn) {
  const runner = await run({
    preset: {
      worker: {
        connectionString: dsn,
        schema: spec.namespace,
        concurrentJobs: spec.concurrency,
        logger: quietLogger,
        maxPoolSize: Math.max(
          2,
          Math.min(spec.concurrency + 1, 25, Math.floor(FLEET_CONNECTIONS / spec.processes)),
        ),
        localQueue: { size: 500 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
    noHandleSignals: true,
    parsedCronItems: [],
    taskList: {
      [BENCH_TASK]: async (payload) => {
        hooks.onJob(payload);
      },
    },
  });
  runner.events.on('job:failed', ({ error }) => hooks.onFailed(String(error)));
  return {
    async stop() {
      await runner.stop();
    },
  };
}

/**
 * pg-boss 12 as its documentation describes for throughput: LISTEN/NOTIFY (`useListenNotify` here,
 * `notify` on the queue) and one work() loop fetching `batchSize` c jobs at a time with
 * `burstWhenBatchFull`, the burst trigger that needs no cached stats. Not `localConcurrency` c with
 * one job per fetch: the trigger is ignored at batchSize 1, so with NOTIFY on each loop waits after
 * every fetch for a NOTIFY or the 30 s notify-mode poll, and a backlog enqueued before the worker
 * started (whose NOTIFYs it never heard) drains at that pace. A short batch ends a burst the same
 * way: the loop then waits for the next NOTIFY.
 */
async function startPgBoss(spec, hooks, dsn) {
  const boss = new PgBoss({
    connectionString: dsn,
    schema: spec.namespace,
    migrate: false,
    useListenNotify: true,
  });
  boss.on('error', (err) => process.stderr.write(`[pg-boss error] ${err.message}\n`));
  boss.on('warning', (w) => process.stderr.write(`[pg-boss warning] ${w.message ?? JSON.stringify(w)}\n`));
  await boss.start();
  await boss.work(
    BENCH_QUEUE,
    {
      batchSize: spec.concurrency,
      burstWhenBatchFull: true,
      pollingIntervalSeconds: PGBOSS_POLLING_SECONDS,
    },
    async (jobs) => {
      await Promise.all(
        jobs.map(async (job) => {
          hooks.onJob(job.data);
        }),
      );
    },
  );
  return {
    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: 5000 });
    },
  };
}
