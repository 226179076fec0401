// Server time of the admin UI's pages over a jobs table of 1,000,000 rows (issue 67's acceptance:
// p95 within 100 ms).
//
//   npx tsx bench/admin-pages.ts [--jobs N] [--requests R] [--keep]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test). The schema
// `bench_admin_<N>` is filled with N jobs by a few INSERT … SELECT generate_series statements (see
// lib/admin-fixture.ts for the mix), then VACUUM ANALYZEd; `--keep` leaves it in place afterwards
// and reuses it on the next run when it is already complete (and of the current shape). The admin plugin is mounted in Fastify and every
// page of PAGES is requested R times (default 200) after 20 warm-up requests, one at a time through
// `app.inject`; a root onResponse hook records `reply.elapsedTime` (Fastify's own timer, from the
// request's arrival to the response), which is server time only. A page whose route is not
// registered (pages still being built) is listed as skipped. The exit code is 1 when a request
// answers an unexpected status or a page's p95 exceeds 100 ms.
import Fastify, { type FastifyInstance } from 'fastify';

import { adminPlugin } from '../src/admin/index.js';
import { PostgresBackend } from '../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../src/client/taskq.js';
import { PgDriver } from '../src/db/pg-driver.js';
import type { Logger } from '../src/obs/logger.js';
import { fillAdminSchema, type Fixture } from './lib/admin-fixture.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const TARGET_P95_MS = 100;
const WARMUP = 20;
const PREFIX = '/admin';

function intArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}
const JOBS = intArg('--jobs', 1_000_000);
const REQUESTS = intArg('--requests', 200);
const KEEP = process.argv.includes('--keep');

/**
 * One row of the report: a page and the URL of each request (a function, so that requests can spread
 * over random job ids). `route` is the route as registered, to skip pages not built yet; `status` is
 * the answer expected. Add a row here when a page is added to the UI.
 */
interface PageCase {
  name: string;
  route: string;
  status: number;
  url(f: Fixture, i: number): string;
}

const PAGES: readonly PageCase[] = [
  { name: 'overview /', route: '/', status: 200, url: () => '/' },
  { name: '/jobs', route: '/jobs', status: 200, url: () => '/jobs' },
  { name: '/jobs?status=failed', route: '/jobs', status: 200, url: () => '/jobs?status=failed' },
  { name: '/jobs?status=succeeded', route: '/jobs', status: 200, url: () => '/jobs?status=succeeded' },
  { name: '/jobs?status=crashed (rare)', route: '/jobs', status: 200, url: () => '/jobs?status=crashed' },
  { name: '/jobs?queue=…', route: '/jobs', status: 200, url: (f) => `/jobs?queue=${f.queues[1]}` },
  {
    name: '/jobs?actor=…&status=pending',
    route: '/jobs',
    status: 200,
    url: (f) => `/jobs?actor=${f.actors[2]}&status=pending`,
  },
  { name: '/jobs?tag=… (common)', route: '/jobs', status: 200, url: (f) => `/jobs?tag=${f.tags[0]}` },
  { name: '/jobs?tag=… (0.6 %)', route: '/jobs', status: 200, url: (f) => `/jobs?tag=${f.tags[1]}` },
  { name: '/jobs?tag=… (rare)', route: '/jobs', status: 200, url: (f) => `/jobs?tag=${f.rareTag}` },
  {
    name: '/jobs?queue=…&status=failed',
    route: '/jobs',
    status: 200,
    url: (f) => `/jobs?queue=${f.queues[0]}&status=failed`,
  },
  ...(['scheduled_at_asc', 'created_at_desc', 'finished_at_desc'] as const).flatMap((order) => [
    { name: `/jobs?order=${order}`, route: '/jobs', status: 200, url: () => `/jobs?order=${order}` },
    {
      name: `/jobs?order=${order} next page`,
      route: '/jobs',
      status: 200,
      url: (f: Fixture) => `/jobs?order=${order}&cursor=${f.cursors[order]}`,
    },
  ]),
  {
    name: '/jobs?status=failed&order=finished_at_desc',
    route: '/jobs',
    status: 200,
    url: () => '/jobs?status=failed&order=finished_at_desc',
  },
  { name: '/jobs?state=active', route: '/jobs', status: 200, url: () => '/jobs?state=active' },
  { name: '/jobs?state=finished', route: '/jobs', status: 200, url: () => '/jobs?state=finished' },
  {
    name: '/jobs?identity=… (no job holds it)',
    route: '/jobs',
    status: 200,
    url: (_f, i) => `/jobs?identity=customer-${i}`,
  },
  { name: '/jobs/:id', route: '/jobs/:id', status: 200, url: (f, i) => `/jobs/${pick(f.jobIds, i)}` },
  {
    name: '/jobs/:id (with history)',
    route: '/jobs/:id',
    status: 200,
    url: (f, i) => `/jobs/${pick(f.historyIds, i)}`,
  },
  {
    name: '/jobs/:id (pending: explain)',
    route: '/jobs/:id',
    status: 200,
    url: (f, i) => `/jobs/${pick(f.pendingIds, i)}`,
  },
  {
    name: '/jobs/:id/state',
    route: '/jobs/:id/state',
    status: 200,
    url: (f, i) => `/jobs/${pick(f.jobIds, i)}/state`,
  },
  { name: '/lookup?key=…', route: '/lookup', status: 303, url: (f, i) => `/lookup?key=${pick(f.keys, i)}` },
  // Pages built in parallel: measured once their modules are registered.
  { name: '/actors', route: '/actors', status: 200, url: () => '/actors' },
  { name: '/queues', route: '/queues', status: 200, url: () => '/queues' },
  { name: '/rate-limits', route: '/rate-limits', status: 200, url: () => '/rate-limits' },
  { name: '/batches', route: '/batches', status: 200, url: () => '/batches' },
  {
    name: '/batches/:id',
    route: '/batches/:id',
    status: 200,
    url: (f, i) => `/batches/${pick(f.batchIds, i)}`,
  },
  { name: '/schedules', route: '/schedules', status: 200, url: () => '/schedules' },
];

function pick<T>(xs: readonly T[], i: number): T {
  // A fixed stride through the sample: spread over the table, and the same sequence every run.
  return xs[(i * 7919) % xs.length]!;
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function measure(
  app: FastifyInstance,
  f: Fixture,
  page: PageCase,
  timings: number[],
): Promise<string | null> {
  for (let i = 0; i < WARMUP + REQUESTS; i++) {
    const url = PREFIX + page.url(f, i);
    const res = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
    if (res.statusCode !== page.status)
      return `GET ${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`;
    if (i === WARMUP - 1) timings.length = 0;
  }
  return null;
}

async function main(): Promise<void> {
  const schema = `bench_admin_${JOBS}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 4 });
  let failed = false;
  try {
    const t0 = performance.now();
    const fixture = await fillAdminSchema(driver, schema, JOBS, KEEP, (line) => console.error(line));
    console.error(`schema ${schema} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const tq = new TaskQ(new PostgresBackend(driver, { schema }));
    fixture.cursors = await fixtureCursors(tq);
    const app = Fastify();
    let timings: number[] = [];
    app.addHook('onResponse', async (_request, reply) => {
      timings.push(reply.elapsedTime);
    });
    await app.register(adminPlugin, {
      prefix: PREFIX,
      tq,
      auth: async () => ({ user: 'bench', readPayloads: true, actions: true }),
      logger: quiet,
    });
    await app.ready();

    const rows: string[] = [];
    for (const page of PAGES) {
      if (!app.hasRoute({ method: 'GET', url: PREFIX + page.route })) {
        rows.push(`| ${page.name} | — | — | — | skipped (no route) |`);
        continue;
      }
      timings = [];
      const problem = await measure(app, fixture, page, timings);
      if (problem !== null) {
        failed = true;
        rows.push(`| ${page.name} | — | — | — | ERROR |`);
        console.error(problem);
        continue;
      }
      const sorted = [...timings].sort((a, b) => a - b);
      const p95 = percentile(sorted, 95);
      const ok = p95 <= TARGET_P95_MS;
      if (!ok) failed = true;
      rows.push(
        `| ${page.name} | ${percentile(sorted, 50).toFixed(1)} | ${p95.toFixed(1)} | ${sorted[sorted.length - 1]!.toFixed(1)} | ${ok ? 'pass' : 'FAIL'} |`,
      );
      console.error(rows[rows.length - 1]);
    }
    await app.close();
    console.log(`\nadmin pages, ${JOBS.toLocaleString('en')} jobs, ${REQUESTS} requests each (server ms)\n`);
    console.log('| page | p50 | p95 | max | p95 ≤ 100 ms |');
    console.log('| --- | ---: | ---: | ---: | --- |');
    for (const row of rows) console.log(row);
    console.log(`\n${failed ? 'FAIL' : 'PASS'}: every page's p95 within ${TARGET_P95_MS} ms`);
    if (!KEEP) await driver.query(`DROP SCHEMA "${schema}" CASCADE`);
  } finally {
    await driver.close();
  }
  if (failed) process.exitCode = 1;
}

/** A second page's cursor for each order (what the "Next page" link carries). */
async function fixtureCursors(tq: TaskQ): Promise<Fixture['cursors']> {
  const out: Record<string, string> = {};
  for (const orderBy of ['scheduled_at_asc', 'created_at_desc', 'finished_at_desc'] as const) {
    const page = await tq.list({ orderBy, limit: 50 });
    if (page.nextCursor === null) throw new Error(`no second page in ${orderBy}`);
    out[orderBy] = page.nextCursor;
  }
  return out as Fixture['cursors'];
}

await main();
