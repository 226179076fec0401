/**
 * pg-boss 10.4.2 (the last line that runs on Node 20). Its worker fetches a batch, runs it, and then
 * waits out its polling interval before the next fetch (no LISTEN/NOTIFY in 10.x), so throughput is
 * about batchSize ÷ interval. Configured as its documentation recommends for throughput: batch
 * fetching (`batchSize` = concurrency, the whole batch run at once) and the shortest polling
 * interval it accepts (0.5 s).
 */
import PgBoss from 'pg-boss';
import pg from 'pg';

import { BENCH_QUEUE, PG_DSN, uniqueSuffix, type BenchPayload } from '../lib/common.js';
import type { SystemAdapter, WorkerSpec, WorkerStarter } from './types.js';

const POLLING_INTERVAL_SECONDS = 0.5;

export function createPgBoss(): SystemAdapter {
  let schema = '';
  let boss: PgBoss | null = null;
  let pool: pg.Pool | null = null;
  return {
    id: 'pgboss',
    title: 'pg-boss (batch fetch, 0.5 s polling)',
    pkg: 'pg-boss 10.4.2',
    store: 'postgres',
    settings: `one work() loop per process with batchSize c (the batch run concurrently) and pollingIntervalSeconds ${POLLING_INTERVAL_SECONDS} (its minimum); everything else default (pool max 10; 10.x has no LISTEN/NOTIFY); queue policy standard`,
    async setup() {
      schema = `bench_pb_${uniqueSuffix()}`;
      pool = new pg.Pool({ connectionString: PG_DSN, max: 2 });
      boss = new PgBoss({ connectionString: PG_DSN, schema, max: 4 });
      boss.on('error', (err: Error) => process.stderr.write(`[pg-boss error] ${err.message}\n`));
      await boss.start();
      await boss.createQueue(BENCH_QUEUE);
    },
    async teardown() {
      await boss?.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => undefined);
      boss = null;
      if (pool) {
        if (schema) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await pool.end().catch(() => undefined);
        pool = null;
      }
    },
    async enqueueOne(payload) {
      await boss!.send(BENCH_QUEUE, payload);
    },
    async enqueueBulk(payloads) {
      await boss!.insert(payloads.map((p) => ({ name: BENCH_QUEUE, data: p })));
    },
    async outstanding() {
      const r = await pool!.query<{ n: string }>(
        `SELECT count(*) AS n FROM "${schema}".job WHERE name = $1 AND state < 'completed'`,
        [BENCH_QUEUE],
      );
      return Number(r.rows[0]?.n ?? 0);
    },
    workerSpec(concurrency, processes): WorkerSpec {
      return { system: 'pgboss', namespace: schema, concurrency, processes };
    },
  };
}

export const pgBossWorkerStarter: WorkerStarter = async (spec, hooks) => {
  const boss = new PgBoss({ connectionString: PG_DSN, schema: spec.namespace, migrate: false });
  boss.on('error', (err: Error) => process.stderr.write(`[pg-boss error] ${err.message}\n`));
  await boss.start();
  await boss.work<BenchPayload>(
    BENCH_QUEUE,
    { batchSize: spec.concurrency, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS },
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
};
