/**
 * `cancelWhere` under READ COMMITTED: its statement reads the matching ids with one snapshot and
 * then locks the rows. A row another session changes after that snapshot is locked in its newest
 * version and the statement's conditions are checked again against it (Postgres's EvalPlanQual
 * recheck). Selecting the rows to lock with `id IN (the matching ids)` lets the planner make that a
 * join against the de-duplicated ids, and then the recheck drops every changed row: running jobs
 * whose heartbeat landed during a bulk cancel would be neither flagged nor counted. These tests
 * hold the statement on a row lock, let a heartbeat (or a claim) commit in between, and check that
 * every job is still cancelled or flagged, for each join strategy the planner can pick.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { PgDriver } from '../../src/db/pg-driver.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
let driver: PgDriver;
let backend: PostgresBackend;
let schema: string;
let s: string;
const WORKER = '018f0000-0000-7000-8000-0000000000aa';
const JOBS = 2_000;
const RACED = 10;

beforeAll(async () => {
  db = await migratedSchema('cwrace');
  ({ driver, schema } = db);
  s = `"${schema}"`;
  backend = new PostgresBackend(driver, { schema });
});
afterAll(async () => {
  await db.drop();
});

/** `JOBS` pending jobs tagged `tag`; the last `RACED` of them (by id) set running when `running`. */
async function seed(tag: string, running: boolean): Promise<string[]> {
  await driver.query(
    `INSERT INTO ${s}.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at, tags)
     SELECT gen_random_uuid(), 'a', 'q', '{}', 'pending', 3, 'transient', clock_timestamp(), ARRAY[$1::text]
     FROM generate_series(1, $2)`,
    [tag, JOBS],
  );
  const { rows } = await driver.query<{ id: string }>(
    `SELECT id FROM ${s}.jobs WHERE tags @> ARRAY[$1::text] ORDER BY id DESC LIMIT $2`,
    [tag, RACED],
  );
  const raced = rows.map((r) => r.id);
  if (running) {
    await driver.query(
      `UPDATE ${s}.jobs SET status = 'running', locked_by_worker = $1, attempt = 1,
         started_at = clock_timestamp(), lock_expires_at = clock_timestamp() + interval '1 hour'
       WHERE id = ANY ($2::uuid[])`,
      [WORKER, raced],
    );
  }
  await driver.query(`ANALYZE ${s}.jobs`);
  return raced;
}

const strategies: [string, string[]][] = [
  ['the planner’s choice', []],
  ['a nested loop', ['SET enable_hashjoin = off', 'SET enable_mergejoin = off']],
  ['a hash join', ['SET enable_nestloop = off', 'SET enable_mergejoin = off']],
  ['a merge join', ['SET enable_nestloop = off', 'SET enable_hashjoin = off']],
];

/**
 * Runs cancelWhere's statement for `tag` on its own session (with `settings`) while a second session
 * holds a lock on every job but the raced ones, runs `race` once the statement waits, and releases.
 * Returns the statement's result row and the number of rows `race` changed.
 */
async function cancelDuringRace(
  tag: string,
  raced: string[],
  settings: string[],
  race: (ids: string[]) => Promise<number>,
): Promise<{ cancelled: string[]; requested: string[]; changed: number }> {
  const canceller = new pg.Client({ connectionString: TEST_DSN });
  const blocker = new pg.Client({ connectionString: TEST_DSN });
  await canceller.connect();
  await blocker.connect();
  try {
    for (const setting of settings) await canceller.query(setting);
    await blocker.query('BEGIN');
    await blocker.query(
      `SELECT id FROM ${s}.jobs WHERE tags @> ARRAY[$1::text] AND NOT id = ANY ($2::uuid[]) FOR UPDATE`,
      [tag, raced],
    );
    const text = backend
      .statement('cancelWhere')
      .replaceAll('{filter_conditions}', `j.tags <> '{}'::text[] AND j.tags @> $2::text[]`);
    const pending = canceller.query<{ cancelled_ids: string[]; requested_ids: string[] }>(text, [
      'race',
      [tag],
    ]);
    // The statement took its snapshot and now waits on the blocker's first row lock.
    await waitForLockWait(canceller);
    const changed = await race(raced);
    await blocker.query('ROLLBACK');
    const row = (await pending).rows[0]!;
    return { cancelled: row.cancelled_ids, requested: row.requested_ids, changed };
  } finally {
    await blocker.end();
    await canceller.end();
  }
}

async function waitForLockWait(client: pg.Client): Promise<void> {
  const pid = (client as unknown as { processID: number }).processID;
  await waitFor(
    async () =>
      (
        await driver.query<{ wait_event_type: string | null }>(
          'SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1',
          [pid],
        )
      ).rows[0]?.wait_event_type === 'Lock',
    10_000,
    'cancelWhere to wait for the blocker’s row lock',
  );
}

/** The worker's own heartbeat statement, skipping rows cancelWhere has locked already. */
async function heartbeat(ids: string[]): Promise<number> {
  const free = await driver.query<{ id: string }>(
    `SELECT id FROM ${s}.jobs WHERE id = ANY ($1::uuid[]) FOR UPDATE SKIP LOCKED`,
    [ids],
  );
  if (free.rows.length === 0) return 0;
  const { rows } = await driver.query(backend.statement('heartbeatJobs'), [
    WORKER,
    free.rows.map((r) => r.id),
    60_000,
    free.rows.map(() => null),
  ]);
  return rows.length;
}

/** A claim of the raced pending jobs (status and lease only), skipping rows already locked. */
async function claim(ids: string[]): Promise<number> {
  const { rows } = await driver.query(
    `UPDATE ${s}.jobs SET status = 'running', locked_by_worker = $1, attempt = 1,
       started_at = clock_timestamp(), lock_expires_at = clock_timestamp() + interval '1 hour'
     WHERE id = ANY (ARRAY(SELECT id FROM ${s}.jobs WHERE id = ANY ($2::uuid[]) AND status = 'pending'
                           FOR UPDATE SKIP LOCKED))
     RETURNING id`,
    [WORKER, ids],
  );
  return rows.length;
}

describe('cancelWhere counts rows changed after its snapshot', () => {
  it.each(strategies)('a heartbeat of running jobs, with %s', async (name, settings) => {
    const tag = `hb-${strategies.findIndex(([n]) => n === name)}`;
    const raced = await seed(tag, true);
    const r = await cancelDuringRace(tag, raced, settings, heartbeat);
    expect(r.changed).toBeGreaterThan(0);
    expect(r.cancelled).toHaveLength(JOBS - RACED);
    expect(r.requested.sort()).toEqual([...raced].sort());
    const { rows } = await driver.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s}.jobs WHERE id = ANY ($1::uuid[]) AND cancel_phase = 1`,
      [raced],
    );
    expect(rows[0]!.n).toBe(RACED);
  });

  it.each(strategies)('a claim of pending jobs, with %s', async (name, settings) => {
    const tag = `claim-${strategies.findIndex(([n]) => n === name)}`;
    const raced = await seed(tag, false);
    const r = await cancelDuringRace(tag, raced, settings, claim);
    expect(r.changed).toBeGreaterThan(0);
    // Every job is affected once: claimed ones are running by the time they are locked, so they
    // are flagged; the rest end cancelled.
    expect(r.cancelled.length + r.requested.length).toBe(JOBS);
    expect(r.requested).toHaveLength(r.changed);
    const { rows } = await driver.query<{ status: string; n: number }>(
      `SELECT status::text, count(*)::int AS n FROM ${s}.jobs WHERE tags @> ARRAY[$1::text] GROUP BY 1 ORDER BY 1`,
      [tag],
    );
    expect(rows).toEqual(
      [
        { status: 'cancelled', n: JOBS - r.changed },
        { status: 'running', n: r.changed },
      ].filter((x) => x.n > 0),
    );
  });
});
