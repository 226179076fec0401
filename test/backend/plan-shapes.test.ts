/**
 * The worker's claim and settle statements run on connections that keep one generic plan for the
 * session, made from the statistics of the moment. A worker started on an empty `jobs` table must
 * not get a plan that scans `jobs` (or every running job) per batch item: such a plan is cheap while
 * the table is small and ruinous once it has grown, and it is not re-made until the next analyze.
 * These tests prepare both statements the way the worker's sessions do, on an empty table, and read
 * the plan.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { normalizeJobFilter } from '../../src/backend/job-filter.js';
import { filterConditions } from '../../src/backend/postgres/filter-sql.js';
import { JOB_COLUMNS } from '../../src/backend/postgres/job-columns.js';
import { listStages } from '../../src/backend/postgres/list-sql.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import {
  GENERIC_PLAN_SESSION_SETTINGS,
  PINNED_PLAN_SESSION_SETTINGS,
} from '../../src/db/session-settings.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 1 });
const schema = uniqueSchemaName('plans');
const backend = new PostgresBackend(driver, { schema });

beforeAll(async () => {
  await new Migrator(driver, { schema }).up();
});
afterAll(async () => {
  await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await driver.close();
});

/** The generic plan of a worker statement on a session with `settings`, as EXPLAIN lines. */
async function genericPlan(
  name: 'settle' | 'settleSucceeded' | 'dispatch' | 'dispatchLean' | 'markStarted',
  settings: Readonly<Record<string, string>>,
  on: PostgresBackend = backend,
): Promise<string[]> {
  const client = new pg.Client({ connectionString: TEST_DSN });
  await client.connect();
  try {
    for (const [k, v] of Object.entries(settings)) await client.query(`SET ${k} = '${v}'`);
    const text = on.statement(name);
    const params = Math.max(...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    await client.query(`PREPARE stmt AS ${text}`);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN EXECUTE stmt(${Array.from({ length: params }, () => 'NULL').join(', ')})`,
    );
    return rows.map((r) => r['QUERY PLAN']);
  } finally {
    await client.end();
  }
}

describe('generic plans of the worker statements on an empty jobs table', () => {
  it('settle reaches every job it writes through the primary key, once', async () => {
    const plan = await genericPlan('settle', PINNED_PLAN_SESSION_SETTINGS);
    expect(plan.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(plan.filter((l) => /jobs_running_idx/.test(l))).toEqual([]);
    // The update decides against the row it writes: no separate read of the job first.
    expect(plan.filter((l) => /Index Scan using jobs_pkey/.test(l))).toHaveLength(1);
  });

  it('settleSucceeded (a batch of plain successes) does too', async () => {
    const plan = await genericPlan('settleSucceeded', PINNED_PLAN_SESSION_SETTINGS);
    expect(plan.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(plan.filter((l) => /jobs_running_idx/.test(l))).toEqual([]);
    expect(plan.filter((l) => /Index Scan using jobs_pkey/.test(l))).toHaveLength(1);
  });

  // markStarted runs on the dispatcher pool, planned for its actual id list (force_custom_plan); a
  // generic plan of it, were it ever pinned, must stay on the primary key too.
  it('markStarted (jobs leaving the local queue) reaches each job through the primary key', async () => {
    const plan = await genericPlan('markStarted', PINNED_PLAN_SESSION_SETTINGS);
    expect(plan.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(plan.filter((l) => /jobs_running_idx/.test(l))).toEqual([]);
    expect(plan.some((l) => /Index Scan on jobs_pkey|Index Scan using jobs_pkey/.test(l))).toBe(true);
  });

  it('without enable_seqscan = off the same plan would scan jobs (why the settle connection sets it)', async () => {
    const plan = await genericPlan('settle', GENERIC_PLAN_SESSION_SETTINGS);
    expect(plan.some((l) => /Seq Scan on jobs\b/.test(l))).toBe(true);
  });

  it("so would the lean claim's update of the rows it locked (why the claim connection sets it)", async () => {
    const plan = await genericPlan('dispatchLean', GENERIC_PLAN_SESSION_SETTINGS);
    expect(plan.some((l) => /Seq Scan on jobs\b/.test(l))).toBe(true);
  });

  it('dispatch reads jobs only through indexes: candidates through the dispatch indexes, the rows it locks by id', async () => {
    const plan = await genericPlan('dispatch', PINNED_PLAN_SESSION_SETTINGS);
    expect(plan.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    for (const index of [
      'jobs_keyless_dispatch_idx',
      'jobs_keyed_dispatch_idx',
      'jobs_keyed_fair_dispatch_idx',
    ])
      expect(plan.some((l) => l.includes(index))).toBe(true);
    // Locking and updating the chosen rows must not read every active job of a queue.
    expect(plan.filter((l) => /jobs_(queue|actor)_active_idx|jobs_waiting_idx/.test(l))).toEqual([]);
  });

  it('the lean dispatch reads jobs only through indexes, the candidates through the dispatch index', async () => {
    const plan = await genericPlan('dispatchLean', PINNED_PLAN_SESSION_SETTINGS);
    expect(plan.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(plan.some((l) => /jobs_keyless_dispatch_idx/.test(l))).toBe(true);
    // The update reaches the locked rows by address, not by a join planned over the whole table.
    expect(plan.some((l) => /Tid Scan on jobs\b/.test(l))).toBe(true);
    expect(plan.filter((l) => /Hash Join/.test(l))).toEqual([]);
  });
});

/**
 * Questions about active jobs on a table that is mostly history: waiting jobs are read through
 * jobs_waiting_idx (per actor and per queue), running ones through jobs_running_idx (no index holds
 * both), never by scanning the table.
 */
/**
 * A backlog enqueued just before the worker starts is not analyzed yet: the statistics still say the
 * table is empty, every index looks as good as another, and a plan that reads all pending jobs
 * through a per-queue index and sorts them looked as cheap as reading the dispatch index in order
 * (a sort of the whole backlog per claim, until the next analyze re-made the plan).
 */
describe('claim plans made before a backlog is analyzed', () => {
  const backlogSchema = uniqueSchemaName('plans_backlog');
  const backlog = new PostgresBackend(driver, { schema: backlogSchema });

  beforeAll(async () => {
    await new Migrator(driver, { schema: backlogSchema }).up();
    // Autovacuum must not analyze the table while the test runs: the case is the table before it does.
    await driver.query(`ALTER TABLE "${backlogSchema}".jobs SET (autovacuum_enabled = false)`);
    await driver.query(
      `INSERT INTO "${backlogSchema}".jobs (id, actor, queue, payload, status, attempt, max_attempts, retry_kind,
                                            created_at, scheduled_at)
       SELECT gen_random_uuid(), 'a', 'q', '{}', 'pending', 0, 3, 'transient', now(), now()
       FROM generate_series(1, 100000)`,
    );
  });
  afterAll(async () => {
    await driver.query(`DROP SCHEMA IF EXISTS "${backlogSchema}" CASCADE`);
  });

  for (const name of ['dispatchLean', 'dispatch'] as const) {
    it(`${name} reads the candidates in order from the dispatch index, not sorted from a per-queue index`, async () => {
      const plan = await genericPlan(name, PINNED_PLAN_SESSION_SETTINGS, backlog);
      expect(plan.some((l) => /jobs_keyless_dispatch_idx/.test(l))).toBe(true);
      expect(plan.filter((l) => /jobs_waiting_idx/.test(l))).toEqual([]);
    });
  }
});

describe('plans of the active-job questions on a table of mostly finished jobs', () => {
  let client: pg.Client;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: TEST_DSN });
    await client.connect();
    // 100,000 jobs over 5 actors and 3 queues: 0.5 % pending, 0.2 % scheduled, ~0.1 % running; a
    // tenth of them in 1,000 batches.
    await client.query(
      `INSERT INTO "${schema}".jobs (id, actor, queue, payload, status, attempt, max_attempts, retry_kind,
                                    created_at, scheduled_at, finished_at, locked_by_worker, metadata)
       SELECT gen_random_uuid(), 'a' || (g % 5), 'q' || (g % 3), '{}', s.status::"${schema}".job_status,
              1, 3, 'transient', now(), now(),
              CASE WHEN s.status = 'succeeded' THEN now() END,
              CASE WHEN s.status = 'running' THEN gen_random_uuid() END,
              CASE WHEN g % 10 = 0
                THEN jsonb_build_object('batch_id', '018f0000-0000-7000-8000-' || lpad((g % 1000)::text, 12, '0'))
                ELSE '{}' END
       FROM generate_series(1, 100000) g,
            LATERAL (SELECT CASE WHEN g % 200 = 0 THEN 'pending' WHEN g % 997 = 0 THEN 'running'
                                 WHEN g % 500 = 1 THEN 'scheduled' ELSE 'succeeded' END AS status) s`,
    );
    await client.query(`ANALYZE "${schema}".jobs`);
  });
  afterAll(async () => {
    await client.end();
  });

  async function plan(text: string, values: unknown[]): Promise<string[]> {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
    return rows.map((r) => r['QUERY PLAN']);
  }

  function expectIndexesOnly(lines: string[]): void {
    expect(lines.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(lines.some((l) => /jobs_waiting_idx/.test(l))).toBe(true);
    expect(lines.some((l) => /jobs_running_idx/.test(l))).toBe(true);
  }

  it('countActiveJobs', async () => {
    expectIndexesOnly(await plan(backend.statement('countActiveJobs'), [['q1']]));
  });

  it("enqueue's singleton gate", async () => {
    const text = backend.statement('enqueue');
    const params = Math.max(...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    const values: unknown[] = Array.from({ length: params }, () => null);
    values[0] = '0192f1a0-0000-7000-8000-000000000001'; // id
    values[1] = 'a1'; // actor
    values[22] = true; // singleton
    expectIndexesOnly(await plan(text, values));
  });

  it('cancelWhere filtered by actor', async () => {
    const text = backend.statement('cancelWhere').replaceAll('{filter_conditions}', 'j.actor = $2');
    expectIndexesOnly(await plan(text, [null, 'a1']));
  });

  it('cancelWhere filtered by queue (not the leading column of jobs_waiting_idx)', async () => {
    const text = backend.statement('cancelWhere').replaceAll('{filter_conditions}', 'j.queue = $2');
    expectIndexesOnly(await plan(text, [null, 'q1']));
  });

  it('countPendingJobs', async () => {
    const lines = await plan(backend.statement('countPendingJobs'), [['a0', 'a1']]);
    expect(lines.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(lines.some((l) => /jobs_waiting_idx/.test(l))).toBe(true);
  });

  // The batch index holds no running job: a batch's running jobs come from jobs_running_idx.
  const batchId = '018f0000-0000-7000-8000-000000000010';

  function expectBatchIndexes(lines: string[]): void {
    expect(lines.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
    expect(lines.some((l) => /jobs_batch_not_running_idx/.test(l))).toBe(true);
    expect(lines.some((l) => /jobs_running_idx/.test(l))).toBe(true);
  }

  it('listing a batch reads the batch index and the running index, not the table', async () => {
    const values: unknown[] = [];
    const conds = filterConditions(normalizeJobFilter({ batchId }), values, `"${schema}"`);
    expectBatchIndexes(
      await plan(`SELECT j.id FROM "${schema}".jobs j WHERE ${conds.join(' AND ')}`, values),
    );
  });

  // A page of a listing reads about a page of the finished jobs' ordered index and the live jobs
  // through their own indexes; sorting every finished job took seconds at a million rows.
  it.each([
    ['scheduled_at_asc', {}, 'jobs_terminal_dispatch_order_idx'],
    ['created_at_desc', {}, 'jobs_terminal_created_idx'],
    ['finished_at_desc', {}, 'jobs_finished_at_idx'],
    ['scheduled_at_asc', { queue: 'q1' }, 'jobs_terminal_dispatch_order_idx'],
    ['created_at_desc', { status: 'succeeded' as const }, 'jobs_terminal_created_idx'],
  ] as const)(
    'listing in %s order (filter %o) walks %s, and no statement scans jobs',
    async (orderBy, filter, index) => {
      const stages = listStages(
        normalizeJobFilter({ ...filter, orderBy, limit: 50 }),
        `"${schema}"`,
        JOB_COLUMNS,
      );
      const lines: string[] = [];
      for (const stage of stages) {
        const q = stage(51);
        lines.push(...(await plan(q.text, q.values)));
      }
      expect(lines.filter((l) => /Seq Scan on jobs\b/.test(l))).toEqual([]);
      expect(lines.some((l) => l.includes(index))).toBe(true);
    },
  );

  it('cancelWhere filtered by batch', async () => {
    const values: unknown[] = [null];
    const conds = filterConditions(normalizeJobFilter({ batchId }), values, `"${schema}"`);
    const text = backend.statement('cancelWhere').replaceAll('{filter_conditions}', conds.join(' AND '));
    expectBatchIndexes(await plan(text, values));
  });
});
