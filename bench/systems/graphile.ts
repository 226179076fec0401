/**
 * graphile-worker 0.17.3 (the last release that runs on Node 20). Two configurations:
 * - `graphile`: its defaults, with only `concurrentJobs` set (pool 10, no local queue, no batching).
 * - `graphile-tuned`: the configuration of its documentation's performance page (local queue of 500,
 *   `completeJobBatchDelay` / `failJobBatchDelay` 0, pool concurrency + 1), at our concurrency.
 * Jobs carry no queue name (graphile-worker's named queues run their jobs one at a time).
 */
import { Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';

import { BENCH_TASK, PG_DSN, uniqueSuffix, type BenchPayload } from '../lib/common.js';
import type { FillSpec, SystemAdapter, WorkerSpec, WorkerStarter } from './types.js';

type Variant = 'default' | 'tuned';

/** Connections the whole fleet of one run may use (the server allows 100; other clients share it). */
const FLEET_CONNECTIONS = 60;

function poolSize(variant: Variant, concurrency: number, processes: number): number {
  if (variant === 'default') return 10;
  return Math.max(2, Math.min(concurrency + 1, 25, Math.floor(FLEET_CONNECTIONS / processes)));
}

function preset(variant: Variant, spec: WorkerSpec): GraphileConfig.WorkerOptions {
  const base: GraphileConfig.WorkerOptions = {
    connectionString: PG_DSN,
    schema: spec.namespace,
    concurrentJobs: spec.concurrency,
    logger: quietLogger,
  };
  if (variant === 'default') return base;
  return {
    ...base,
    maxPoolSize: poolSize(variant, spec.concurrency, spec.processes),
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
  };
}

/** Errors and warnings to stderr; the rest dropped. */
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`[graphile ${level}] ${message}\n`);
});

export function createGraphile(variant: Variant): SystemAdapter {
  let schema = '';
  let utils: WorkerUtils | null = null;
  let pool: pg.Pool | null = null;
  const id = variant === 'tuned' ? 'graphile-tuned' : 'graphile';
  return {
    id,
    title: variant === 'tuned' ? 'graphile-worker (perf. page config)' : 'graphile-worker (defaults)',
    pkg: 'graphile-worker 0.17.3',
    store: 'postgres',
    settings:
      variant === 'tuned'
        ? `concurrentJobs c, maxPoolSize min(c + 1, 25, ⌊${FLEET_CONNECTIONS} / p⌋), localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0 (its performance page's configuration, at our concurrency); jobs without a queue name`
        : 'concurrentJobs c; everything else default (maxPoolSize 10, no localQueue, no completion batching, pollInterval 2 s); jobs without a queue name',
    async setup() {
      schema = `bench_gw_${uniqueSuffix()}`;
      pool = new pg.Pool({ connectionString: PG_DSN, max: 2 });
      utils = await makeWorkerUtils({
        connectionString: PG_DSN,
        schema,
        maxPoolSize: 4,
        logger: quietLogger,
      });
      await utils.migrate();
    },
    async teardown() {
      await Promise.resolve(utils?.release()).catch(() => undefined);
      utils = null;
      if (pool) {
        if (schema) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await pool.end().catch(() => undefined);
        pool = null;
      }
    },
    async enqueueOne(payload) {
      await utils!.addJob(BENCH_TASK, payload);
    },
    async enqueueBulk(payloads) {
      await utils!.addJobs(payloads.map((p) => ({ identifier: BENCH_TASK, payload: p })));
    },
    async outstanding() {
      const r = await pool!.query<{ n: string }>(
        `SELECT count(*) AS n FROM "${schema}"._private_jobs WHERE is_available OR locked_at IS NOT NULL`,
      );
      return Number(r.rows[0]?.n ?? 0);
    },
    workerSpec(concurrency, processes): WorkerSpec {
      return { system: id, namespace: schema, concurrency, processes };
    },
    async fill(spec: FillSpec) {
      // Pending rows are the backlog; terminal rows are permanently failed jobs (graphile-worker
      // deletes completed jobs, so failed ones are the history that stays in its table).
      await pool!.query(
        `INSERT INTO "${schema}"._private_tasks (identifier) VALUES ($1) ON CONFLICT DO NOTHING`,
        [BENCH_TASK],
      );
      await pool!.query(
        `INSERT INTO "${schema}"._private_jobs (task_id, payload, run_at, attempts, max_attempts, last_error)
         SELECT t.id, json_build_object('i', g), now() - interval '1 hour' + g * interval '1 microsecond',
                CASE WHEN g <= $2 THEN 0 ELSE 25 END, 25,
                CASE WHEN g <= $2 THEN NULL ELSE 'bench: failed for good' END
         FROM generate_series(1, $3::int) AS g, "${schema}"._private_tasks t
         WHERE t.identifier = $1`,
        [BENCH_TASK, spec.pending, spec.rows],
      );
      await pool!.query(`VACUUM ANALYZE "${schema}"._private_jobs`);
    },
  };
}

export function graphileWorkerStarter(variant: Variant): WorkerStarter {
  return async (spec, hooks) => {
    const runner = await run({
      preset: { worker: preset(variant, spec) },
      noHandleSignals: true,
      parsedCronItems: [],
      taskList: {
        [BENCH_TASK]: async (payload) => {
          hooks.onJob(payload as BenchPayload);
        },
      },
    });
    runner.events.on('job:failed', ({ error }) => hooks.onFailed(String(error)));
    return {
      async stop() {
        await runner.stop();
      },
    };
  };
}
