// What the server does per job in the worker's two hot statements, counted rather than timed.
//
//   npx tsx bench/statement-cost.ts [--jobs N] [--batch B] [--rounds R]
//
// Postgres at BENCH_PG_DSN (a fresh schema, dropped afterwards). Enqueues N no-op jobs, then runs
// R rounds of: claim B jobs (`dispatchLean`) and write their successes (`settleSucceeded`), each
// under EXPLAIN (ANALYZE, BUFFERS, WAL). Prints, per statement, the median over the rounds of the
// shared buffers touched, the WAL records and the WAL bytes per job. Those counts do not depend on
// what else the machine is doing (WAL bytes do a little: a checkpoint makes the next change of
// each page log the whole page, counted in the last column), unlike a throughput or a CPU figure: they say whether a change to
// a statement or to the schema makes the server do less, on a busy machine too. The data-modifying
// CTEs that the statement's result does not read (the history inserts) are reported by EXPLAIN
// beside the plan's root, not under it; they are added in. Timing is left out on purpose: EXPLAIN
// ANALYZE's own overhead would decide it. Exits 1 only on errors.
import { randomUUID } from 'node:crypto';

import pg from 'pg';

import { settleSucceededParams } from '../src/backend/postgres/pg-settle.js';
import { PostgresBackend } from '../src/backend/postgres/postgres-backend.js';
import { actor } from '../src/core/actor.js';
import { PgDriver } from '../src/db/pg-driver.js';
import { Migrator } from '../src/migrations/migrator.js';
import { batchItem } from '../src/client/batch-items.js';
import { TaskQ } from '../src/client/taskq.js';
import { median } from './lib/stats.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i > 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
}
const BATCH = arg('--batch', 50);
const ROUNDS = arg('--rounds', 20);
const JOBS = arg('--jobs', Math.max(4000, BATCH * ROUNDS * 2));

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Parent Relationship'?: string;
  'Subplan Name'?: string;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  'Shared Dirtied Blocks': number;
  'WAL Records': number;
  'WAL Bytes': number;
  'WAL FPI': number;
  Plans?: PlanNode[];
}

interface Cost {
  buffers: number;
  walRecords: number;
  walBytes: number;
  /** Full-page images among the records: first changes of a page after a checkpoint. */
  fpi: number;
}

/**
 * The plan's totals: the root, plus every data-modifying CTE whose rows nothing reads (EXPLAIN
 * counts those apart from the root, since they run to completion after it).
 */
function cost(root: PlanNode): Cost {
  const own = (n: PlanNode): Cost => ({
    buffers: n['Shared Hit Blocks'] + n['Shared Read Blocks'],
    walRecords: n['WAL Records'],
    walBytes: n['WAL Bytes'],
    fpi: n['WAL FPI'],
  });
  const total = own(root);
  for (const child of root.Plans ?? []) {
    if (child['Node Type'] !== 'ModifyTable' || child['Parent Relationship'] !== 'InitPlan') continue;
    if (!child['Subplan Name']?.startsWith('CTE ')) continue;
    if (!unread(root, child['Subplan Name'].slice(4))) continue;
    const c = own(child);
    total.buffers += c.buffers;
    total.walRecords += c.walRecords;
    total.walBytes += c.walBytes;
    total.fpi += c.fpi;
  }
  return total;
}

/** True when no node under `root` scans the CTE `name` (EXPLAIN names such scans "CTE Scan" on it). */
function unread(root: PlanNode, name: string): boolean {
  const scans = (n: PlanNode): boolean =>
    (n['Node Type'] === 'CTE Scan' && (n as { 'CTE Name'?: string })['CTE Name'] === name) ||
    (n.Plans ?? []).some(scans);
  return !scans(root);
}

async function explain(client: pg.Client, sql: string, values: unknown[]): Promise<PlanNode> {
  const r = await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>({
    text: `EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING OFF, FORMAT JSON) ${sql}`,
    values,
  });
  return r.rows[0]!['QUERY PLAN'][0]!.Plan;
}

async function main(): Promise<void> {
  const schema = `bench_cost_${randomUUID().slice(0, 8)}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 2 });
  const client = new pg.Client({ connectionString: DSN });
  await client.connect();
  try {
    await new Migrator(driver, { schema }).up();
    const backend = new PostgresBackend(driver, { schema });
    const tq = new TaskQ(backend);
    const noop = actor({ name: 'noop', queue: 'bench' }, async () => undefined);
    for (let i = 0; i < JOBS; i += 1000) {
      const n = Math.min(1000, JOBS - i);
      await tq.enqueueBatch(Array.from({ length: n }, (_, k) => batchItem(noop, { i: i + k })));
    }
    await client.query(`ANALYZE "${schema}".jobs`);
    // The worker's sessions plan these statements generically with scans and sorts off (see
    // session-settings.ts): the same here, so the counts are the worker's.
    await client.query('SET plan_cache_mode = force_generic_plan');
    await client.query('SET enable_seqscan = off');
    await client.query('SET enable_sort = off');
    const workerId = randomUUID();
    const claims: Cost[] = [];
    const settles: Cost[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const claimPlan = await explain(client, backend.statement('dispatchLean'), [
        ['bench'],
        BATCH,
        workerId,
        60_000,
        ['noop'],
        BATCH,
      ]);
      const { rows } = await client.query<{ id: string }>(
        `SELECT id FROM "${schema}".jobs WHERE status = 'running' AND locked_by_worker = $1`,
        [workerId],
      );
      const items = rows.map((r) => ({
        kind: 'succeeded' as const,
        jobId: r.id,
        workerId,
        handlerStartedAt: new Date(),
        durationMs: 0.1,
        resultJson: null,
        resultSizeBytes: null,
        fallbackResultTtlMs: null,
      }));
      const settlePlan = await explain(
        client,
        backend.statement('settleSucceeded'),
        settleSucceededParams(items),
      );
      // The first round pays for planning and first reads; leave it out.
      if (round === 0) continue;
      const perJob = (c: Cost): Cost => ({
        buffers: c.buffers / rows.length,
        walRecords: c.walRecords / rows.length,
        walBytes: c.walBytes / rows.length,
        fpi: c.fpi / rows.length,
      });
      claims.push(perJob(cost(claimPlan)));
      settles.push(perJob(cost(settlePlan)));
    }
    const row = (name: string, cs: Cost[]) =>
      `| ${name} | ${median(cs.map((c) => c.buffers)).toFixed(1)} | ${median(cs.map((c) => c.walRecords)).toFixed(2)} | ${median(cs.map((c) => c.walBytes)).toFixed(0)} | ${median(cs.map((c) => c.fpi)).toFixed(2)} |`;
    const sum = claims.map((c, i) => ({
      buffers: c.buffers + settles[i]!.buffers,
      walRecords: c.walRecords + settles[i]!.walRecords,
      walBytes: c.walBytes + settles[i]!.walBytes,
      fpi: c.fpi + settles[i]!.fpi,
    }));
    console.log(`Per job, median of ${ROUNDS - 1} rounds of ${BATCH} jobs (${JOBS} enqueued):\n`);
    console.log('| statement | buffers | WAL records | WAL bytes | of which full-page images |');
    console.log('| --- | ---: | ---: | ---: | ---: |');
    console.log(row('claim (`dispatchLean`)', claims));
    console.log(row('outcome (`settleSucceeded`)', settles));
    console.log(row('both', sum));
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.end();
    await driver.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
