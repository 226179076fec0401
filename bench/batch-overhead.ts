// What a batch row costs per job: enqueueBatch with a failure policy and a finalizer (a `batches`
// row whose counters the jobs trigger keeps) against plain enqueueBatch (no row), in the same run.
//
//   npx tsx bench/batch-overhead.ts [--jobs N] [--rounds R] [--concurrency C]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test; a fresh schema,
// dropped afterwards). Each round enqueues --jobs children (default 50,000) of a no-op actor in
// batches of 1000, sequentially, once per mode, then drains them with an in-process worker
// (--concurrency, default 50; started after the enqueue, its start not timed) until no job of the
// round is left pending or running. Mode `row`: every batch has AbortBatchAfter(1000) and a no-op
// finalizer (one more job per 1000, counted in the drain as it is part of what a row costs).
// Modes alternate order from round to round (plain first, then row first, ...); the tables are
// truncated between modes. Printed: per mode the median of the rounds' µs per child for the
// enqueue and for the drain, and the row's overhead (row − plain, µs per child) and ratio. The
// exit code is 1 only on errors, never on numbers.
import { AbortBatchAfter } from '../src/client/batch-policy.js';
import { batchItem } from '../src/client/batch-items.js';
import { TaskQ } from '../src/client/taskq.js';
import { PostgresBackend } from '../src/backend/postgres/postgres-backend.js';
import { actor } from '../src/core/actor.js';
import { PgDriver } from '../src/db/pg-driver.js';
import { Migrator } from '../src/migrations/migrator.js';
import { silentLogger } from '../src/obs/logger.js';
import { Worker } from '../src/worker/worker.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  const v = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
}

const JOBS = arg('--jobs', 50_000);
const ROUNDS = arg('--rounds', 3);
const CONCURRENCY = arg('--concurrency', 50);
const BATCH = 1000;
const QUEUE = 'bench';

const child = actor({ name: 'bench_batch_child', queue: QUEUE }, async () => null);
const finalizer = actor({ name: 'bench_batch_final', queue: QUEUE }, async () => null);

type Mode = 'plain' | 'row';

interface Sample {
  mode: Mode;
  enqueueUsPerJob: number;
  drainUsPerJob: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function main(): Promise<void> {
  const schema = `bench_batch_overhead_${process.pid}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 4 });
  await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await new Migrator(driver, { schema }).up();
  const tq = new TaskQ(new PostgresBackend(driver, { schema }));
  const waiting = async (): Promise<number> =>
    (
      (
        await driver.query(
          `SELECT count(*)::int AS n FROM "${schema}".jobs WHERE status IN ('pending', 'scheduled', 'running')`,
        )
      ).rows[0] as { n: number }
    ).n;

  async function runMode(mode: Mode): Promise<Sample> {
    // The jobs table's truncate trigger empties its history tables too.
    await driver.query(`TRUNCATE "${schema}".jobs, "${schema}".batches CASCADE`);
    const items = Array.from({ length: BATCH }, (_, i) => batchItem(child, { i }));
    const t0 = performance.now();
    for (let n = 0; n < JOBS; n += BATCH) {
      const chunk = items.slice(0, Math.min(BATCH, JOBS - n));
      await tq.enqueueBatch(
        chunk,
        mode === 'row'
          ? { failurePolicy: new AbortBatchAfter(1000), finalizer: batchItem(finalizer, {}) }
          : {},
      );
    }
    const enqueueMs = performance.now() - t0;
    const worker = new Worker({
      actors: [child, finalizer],
      settings: {
        pgDsn: DSN,
        schema,
        queues: [QUEUE],
        maxConcurrency: CONCURRENCY,
        watchdogEnabled: false,
        healthEnabled: false,
      },
      logger: silentLogger,
    });
    await worker.start();
    const t1 = performance.now();
    try {
      while ((await waiting()) > 0) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await worker.stop();
    }
    const drainMs = performance.now() - t1;
    if (mode === 'row') {
      const { rows } = await driver.query(
        `SELECT count(*) FILTER (WHERE status = 'complete')::int AS done, count(*)::int AS n FROM "${schema}".batches`,
      );
      const r = rows[0] as { done: number; n: number };
      if (r.n !== Math.ceil(JOBS / BATCH) || r.done !== r.n)
        throw new Error(`batches not all complete: ${JSON.stringify(r)}`);
    }
    const s = {
      mode,
      enqueueUsPerJob: (enqueueMs * 1000) / JOBS,
      drainUsPerJob: (drainMs * 1000) / JOBS,
    };
    process.stderr.write(
      `  ${mode}: enqueue ${s.enqueueUsPerJob.toFixed(1)} µs/job, drain ${s.drainUsPerJob.toFixed(1)} µs/job\n`,
    );
    return s;
  }

  try {
    const samples: Sample[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order: Mode[] = round % 2 === 0 ? ['plain', 'row'] : ['row', 'plain'];
      for (const mode of order) samples.push(await runMode(mode));
    }
    const of = (mode: Mode, k: 'enqueueUsPerJob' | 'drainUsPerJob'): number =>
      median(samples.filter((s) => s.mode === mode).map((s) => s[k]));
    console.log(
      `${JOBS} children in batches of ${BATCH}, worker maxConcurrency ${CONCURRENCY}, ${ROUNDS} rounds (medians)`,
    );
    console.log('');
    console.log('| phase | plain µs/child | row µs/child | row − plain µs/child | row / plain |');
    console.log('|---|---|---|---|---|');
    for (const [label, k] of [
      ['enqueue', 'enqueueUsPerJob'],
      ['drain (processing)', 'drainUsPerJob'],
    ] as const) {
      const p = of('plain', k);
      const r = of('row', k);
      console.log(
        `| ${label} | ${p.toFixed(1)} | ${r.toFixed(1)} | ${(r - p).toFixed(1)} | ${(r / p).toFixed(2)} |`,
      );
    }
  } finally {
    await tq.close();
    await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await driver.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
