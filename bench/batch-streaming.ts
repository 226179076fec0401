// enqueueBatchStreaming of many generated items: throughput, peak memory, progress callbacks.
//
//   npx tsx bench/batch-streaming.ts [--items N] [--chunk N] [--plain] [--json]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test; a fresh schema,
// dropped afterwards). A generator makes --items items (default 1,000,000) of one actor without a
// payload schema, one small payload each, and the client streams them as one batch of --chunk
// items per write (default 1000): with a failure policy (a batch row, the default) or, with
// --plain, without one. Printed: items/s, the progress callbacks counted, and memory: the peak RSS
// and heap sampled every 20 ms while the stream ran (process.memoryUsage) and the process's maxRSS
// (process.resourceUsage, its whole life). --json prints one JSON object instead (the memory test
// runs this script in a child process). The exit code is 1 only on errors, never on numbers.
import { AbortBatchAfter } from '../src/client/batch-policy.js';
import type { EnqueueItem } from '../src/client/batch-items.js';
import { TaskQ } from '../src/client/taskq.js';
import { PostgresBackend } from '../src/backend/postgres/postgres-backend.js';
import { actor } from '../src/core/actor.js';
import { PgDriver } from '../src/db/pg-driver.js';
import { Migrator } from '../src/migrations/migrator.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  const v = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
}

const ITEMS = arg('--items', 1_000_000);
const CHUNK = arg('--chunk', 1000);
const PLAIN = process.argv.includes('--plain');
const JSON_OUT = process.argv.includes('--json');

const imported = actor({ name: 'bench_streamed', queue: 'bench' }, async () => null);

/** The input: generated on demand, never held. */
function* generate(n: number): Generator<EnqueueItem> {
  for (let i = 0; i < n; i++)
    yield { actor: imported, payload: { row: i, account: `acct-${i % 9973}`, amount: (i * 37) % 10_000 } };
}

const MB = 1024 * 1024;

async function main(): Promise<void> {
  const schema = `bench_stream_${process.pid}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 4 });
  await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await new Migrator(driver, { schema }).up();
  const tq = new TaskQ(new PostgresBackend(driver, { schema }));
  let peakRss = process.memoryUsage.rss();
  let peakHeap = process.memoryUsage().heapUsed;
  const sample = (): void => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  };
  const rssBefore = peakRss;
  const sampler = setInterval(sample, 20);
  let progressCalls = 0;
  let lastWritten = 0;
  try {
    const t0 = performance.now();
    const h = await tq.enqueueBatchStreaming(generate(ITEMS), {
      chunkSize: CHUNK,
      ...(PLAIN ? {} : { failurePolicy: new AbortBatchAfter(100) }),
      onProgress: ({ written }) => {
        progressCalls++;
        lastWritten = written;
        if (!JSON_OUT && progressCalls % 100 === 0) process.stderr.write(`  ${written} written\n`);
      },
    });
    const seconds = (performance.now() - t0) / 1000;
    sample();
    clearInterval(sampler);
    const rows = Number(
      ((await driver.query(`SELECT count(*)::int AS n FROM "${schema}".jobs`)).rows[0] as { n: number }).n,
    );
    if (rows !== ITEMS || h.size !== ITEMS)
      throw new Error(`expected ${ITEMS} jobs, found ${rows} (size ${h.size})`);
    const row = PLAIN ? null : await tq.getBatch(h.batchId);
    if (!PLAIN && (row?.expectedSize !== ITEMS || !row.sealed))
      throw new Error(`batch row wrong: ${JSON.stringify(row)}`);
    const result = {
      items: ITEMS,
      chunkSize: CHUNK,
      batchRow: !PLAIN,
      seconds: Number(seconds.toFixed(2)),
      itemsPerSecond: Math.round(ITEMS / seconds),
      progressCalls,
      lastWritten,
      rssBeforeMb: Math.round(rssBefore / MB),
      peakRssMb: Math.round(peakRss / MB),
      peakHeapUsedMb: Math.round(peakHeap / MB),
      maxRssMb: Math.round((process.resourceUsage().maxRSS * 1024) / MB),
    };
    if (JSON_OUT) {
      process.stdout.write(`${JSON.stringify(result)}\n`);
    } else {
      console.log(
        `| items | chunk | row | s | items/s | progress calls | RSS before | peak RSS | peak heap | maxRSS |`,
      );
      console.log(`|---|---|---|---|---|---|---|---|---|---|`);
      console.log(
        `| ${ITEMS} | ${CHUNK} | ${!PLAIN} | ${result.seconds} | ${result.itemsPerSecond} | ${progressCalls} | ` +
          `${result.rssBeforeMb} MB | ${result.peakRssMb} MB | ${result.peakHeapUsedMb} MB | ${result.maxRssMb} MB |`,
      );
    }
  } finally {
    clearInterval(sampler);
    await tq.close();
    await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await driver.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
