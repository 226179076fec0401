/**
 * BullMQ 6.7.0, on Redis and on its built-in PostgreSQL backend (`createPostgresBackend`, shipped in
 * the `bullmq` package itself since 6.x; `pg` is an optional peer dependency).
 * - Redis: a key prefix per run in a Redis logical database of its own (flushed before each run:
 *   the benchmark never touches database 0); `removeOnComplete: true` (its production advice).
 * - PostgreSQL: a schema per run (`migrate: true`); completed jobs are kept (`removeOnComplete:
 *   false`): with removal on, its finish path has been reported to deadlock under concurrent workers.
 * Workers: one `Worker` per process with `concurrency` = the run's concurrency.
 */
import {
  Queue,
  Worker,
  createPostgresBackend,
  withBackend,
  type ConnectionOptions,
  type PostgresPoolConfig,
} from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';

import {
  BENCH_QUEUE,
  BENCH_TASK,
  PG_DSN,
  REDIS_DB,
  REDIS_HOST,
  REDIS_PORT,
  uniqueSuffix,
  type BenchPayload,
} from '../lib/common.js';
import type { SystemAdapter, WorkerSpec, WorkerStarter } from './types.js';

type Store = 'redis' | 'postgres';

const pgClasses = withBackend(createPostgresBackend);

function redisConnection(): ConnectionOptions {
  return { host: REDIS_HOST, port: REDIS_PORT, db: REDIS_DB, maxRetriesPerRequest: null };
}

function pgConnection(schema: string, migrate: boolean): PostgresPoolConfig {
  return { connectionString: PG_DSN, schema, migrate };
}

/** The producer side's queue, whichever store. */
interface AnyQueue {
  add(name: string, data: BenchPayload): Promise<unknown>;
  addBulk(jobs: { name: string; data: BenchPayload }[]): Promise<unknown>;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export function createBullmq(store: Store): SystemAdapter {
  let namespace = '';
  let queue: AnyQueue | null = null;
  let pool: pg.Pool | null = null;
  const id = store === 'redis' ? 'bullmq-redis' : 'bullmq-pg';
  return {
    id,
    title: store === 'redis' ? 'BullMQ (Redis)' : 'BullMQ (PostgreSQL backend)',
    pkg: 'bullmq 6.7.0',
    store,
    settings:
      store === 'redis'
        ? `one Worker per process with concurrency c; defaultJobOptions removeOnComplete true, removeOnFail 1000; Redis 7 without persistence, logical database ${REDIS_DB} flushed per run`
        : 'one Worker per process with concurrency c; createPostgresBackend (connection { connectionString, schema }, pg pool default 10); defaultJobOptions removeOnComplete false, removeOnFail false (with removal its finish path has been reported to deadlock under concurrent workers)',
    async setup() {
      namespace = `bench_bq_${uniqueSuffix()}`;
      if (store === 'redis') {
        const redis = new Redis({ host: REDIS_HOST, port: REDIS_PORT, db: REDIS_DB });
        try {
          await redis.flushdb();
        } finally {
          redis.disconnect();
        }
        queue = new Queue(BENCH_QUEUE, {
          connection: redisConnection(),
          prefix: namespace,
          defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000 },
        }) as unknown as AnyQueue;
      } else {
        pool = new pg.Pool({ connectionString: PG_DSN, max: 2 });
        const q = new pgClasses.Queue(BENCH_QUEUE, {
          connection: pgConnection(namespace, true),
          defaultJobOptions: { removeOnComplete: false, removeOnFail: false },
        });
        await q.waitUntilReady();
        queue = q as unknown as AnyQueue;
      }
    },
    async teardown() {
      await queue?.close().catch(() => undefined);
      queue = null;
      if (store === 'redis') {
        const redis = new Redis({ host: REDIS_HOST, port: REDIS_PORT, db: REDIS_DB });
        await redis.flushdb().catch(() => undefined);
        redis.disconnect();
      }
      if (pool) {
        if (namespace)
          await pool.query(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`).catch(() => undefined);
        await pool.end().catch(() => undefined);
        pool = null;
      }
    },
    async enqueueOne(payload) {
      await queue!.add(BENCH_TASK, payload);
    },
    async enqueueBulk(payloads) {
      await queue!.addBulk(payloads.map((p) => ({ name: BENCH_TASK, data: p })));
    },
    async outstanding() {
      const counts = await queue!.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused');
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    workerSpec(concurrency, processes): WorkerSpec {
      return { system: id, namespace, concurrency, processes };
    },
  };
}

export function bullmqWorkerStarter(store: Store): WorkerStarter {
  return async (spec, hooks) => {
    const processor = async (job: { data: BenchPayload }): Promise<void> => {
      hooks.onJob(job.data);
    };
    const worker =
      store === 'redis'
        ? new Worker(BENCH_QUEUE, processor, {
            connection: redisConnection(),
            prefix: spec.namespace,
            concurrency: spec.concurrency,
          })
        : new pgClasses.Worker(BENCH_QUEUE, processor, {
            connection: pgConnection(spec.namespace, false),
            concurrency: spec.concurrency,
          });
    worker.on('error', (err: Error) => process.stderr.write(`[bullmq error] ${err.message}\n`));
    worker.on('failed', (_job: unknown, err: Error) => hooks.onFailed(err.message));
    await worker.waitUntilReady();
    return {
      async stop() {
        await worker.close();
      },
    };
  };
}
