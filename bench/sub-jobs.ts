// Children per second written through `ctx.jobs` against the same children through plain
// `enqueueBatch`, in one run.
//
//   npx tsx bench/sub-jobs.ts [--rounds N] [--parents P] [--children C]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test; a fresh schema,
// dropped afterwards). One in-process worker (maxConcurrency 8) runs P parents (default 50), each
// writing C children (default 100) to a queue no worker serves, in one of these ways:
//   ctx.jobs.enqueueBatch   one buffered batch, written in the transaction of the parent's success
//   ctx.jobs.enqueue        C buffered single enqueues, written the same way
//   tq.enqueueBatch         the parent calls a client's enqueueBatch (written at once, not with it)
// plus, with no parents at all, the bench process calling `tq.enqueueBatch` P times, 8 at a time.
// A run of a row truncates the jobs, enqueues the P parents in one batch, and times until every parent
// has succeeded (or, for the last row, every batch call has returned). Each round runs every row once
// (in a rotating order); the median of each row (after one warm-up round) is printed as a markdown
// table: children per second, ms per parent (per batch call), and the ratio to the plain
// enqueueBatch row. BENCH_POOL sets the worker's dispatcherPoolSize (default 4, the setting's). The exit code is 1 only on errors
// (a parent that failed, a wrong child count), never on times.
import { randomUUID } from 'node:crypto';

import { batchItem } from '../src/client/batch-items.js';
import { TaskQ } from '../src/client/taskq.js';
import { actor } from '../src/core/actor.js';
import { PgDriver } from '../src/db/pg-driver.js';
import { Migrator } from '../src/migrations/migrator.js';
import type { Logger } from '../src/obs/logger.js';
import { Worker } from '../src/worker/worker.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  const n = i > 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
};
const ROUNDS = arg('--rounds', 3);
const PARENTS = arg('--parents', 50);
const CHILDREN = arg('--children', 100);
const CONCURRENCY = 8;

type Mode =
  | 'ctx.jobs.enqueueBatch'
  | 'ctx.jobs.enqueue'
  | 'ctx.jobs.enqueueBatch, inheritTags: false'
  | 'tq.enqueueBatch (in the parent)';
const MODES: Mode[] = [
  'ctx.jobs.enqueueBatch',
  'ctx.jobs.enqueueBatch, inheritTags: false',
  'ctx.jobs.enqueue',
  'tq.enqueueBatch (in the parent)',
];
const PLAIN = 'tq.enqueueBatch (no parent)' as const;

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const schema = `bench_subjobs_${randomUUID().slice(0, 8)}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 4 });
  await new Migrator(driver, { schema }).up();
  const tq = await TaskQ.open({ dsn: DSN, schema, maxPoolSize: CONCURRENCY, logger: quiet });
  const child = actor({ name: 'bench_child', queue: 'bench_children' }, async () => undefined);
  const parent = actor(
    { name: 'bench_parent', queue: 'bench_parents', retry: { maxAttempts: 1 } },
    async (p: { mode: Mode; n: number }, ctx) => {
      const items = Array.from({ length: p.n }, (_, i) => batchItem(child, { i }));
      if (p.mode === 'ctx.jobs.enqueueBatch') await ctx.jobs.enqueueBatch(items);
      else if (p.mode === 'ctx.jobs.enqueueBatch, inheritTags: false')
        await ctx.jobs.enqueueBatch(items, { inheritTags: false });
      else if (p.mode === 'ctx.jobs.enqueue')
        for (const item of items) await ctx.jobs.enqueue(child, item.payload);
      else await tq.enqueueBatch(items);
    },
  );
  const worker = new Worker({
    actors: [parent],
    logger: quiet,
    settings: {
      pgDsn: DSN,
      schema,
      queues: ['bench_parents'],
      maxConcurrency: CONCURRENCY,
      ...(process.env.BENCH_POOL ? { dispatcherPoolSize: Number(process.env.BENCH_POOL) } : {}),
      watchdogEnabled: false,
      healthEnabled: false,
    },
  });
  await worker.start();
  const sql = (text: string) => driver.query<{ n: number }>(text.replaceAll('$S', `"${schema}"`));
  const children = async (): Promise<number> =>
    Number((await sql(`SELECT count(*)::int AS n FROM $S.jobs WHERE actor = 'bench_child'`)).rows[0]!.n);

  const round = async (mode: Mode | typeof PLAIN): Promise<number> => {
    await sql(`TRUNCATE $S.jobs CASCADE`);
    await sql(`VACUUM ANALYZE $S.jobs`);
    const t0 = performance.now();
    if (mode === PLAIN) {
      const items = Array.from({ length: CHILDREN }, (_, i) => batchItem(child, { i }));
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next++ < PARENTS) await tq.enqueueBatch(items);
        }),
      );
    } else {
      const batch = await tq.enqueueBatch(
        Array.from({ length: PARENTS }, () => batchItem(parent, { mode, n: CHILDREN })),
      );
      await Promise.all(batch.jobHandles.map((h) => h.wait({ timeout: '120s' })));
    }
    const ms = performance.now() - t0;
    const n = await children();
    if (n !== PARENTS * CHILDREN) throw new Error(`${mode}: ${n} children, expected ${PARENTS * CHILDREN}`);
    return ms;
  };

  // Rounds interleave the rows (each round runs every row once, in a rotating order), so that load
  // from elsewhere on the machine falls on every row alike.
  const all = [...MODES, PLAIN] as const;
  const times = new Map<string, number[]>(all.map((m) => [m, []]));
  try {
    for (const mode of all) await round(mode); // warm-up: statements planned, pools filled
    for (let i = 0; i < ROUNDS; i++) {
      for (let k = 0; k < all.length; k++) {
        const mode = all[(i + k) % all.length]!;
        times.get(mode)!.push(await round(mode));
      }
      process.stderr.write(`round ${i + 1}/${ROUNDS} done\n`);
    }
  } finally {
    await worker.stop();
    await tq.close();
    await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await driver.close();
  }
  for (const [mode, ts] of times)
    process.stderr.write(`${mode}: ${ts.map((t) => t.toFixed(0)).join(', ')} ms\n`);
  const rows = all.map((mode) => ({ mode, ms: median(times.get(mode)!) }));
  const total = PARENTS * CHILDREN;
  const plainRate = total / (rows.find((r) => r.mode === PLAIN)!.ms / 1000);
  const lines = [
    `Sub-jobs: ${PARENTS} parents × ${CHILDREN} children (${total.toLocaleString('en-US')} per round), worker maxConcurrency ${CONCURRENCY}, median of ${ROUNDS} rounds`,
    '',
    '| children written through | children/s | ms per parent (or batch call) | vs plain enqueueBatch |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((r) => {
      const rate = total / (r.ms / 1000);
      return `| ${r.mode} | ${rate.toFixed(0)} | ${(r.ms / PARENTS).toFixed(1)} | ${(rate / plainRate).toFixed(2)} |`;
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
