/**
 * Job history (job_attempts, job_events) has no foreign key to jobs (a key would cost a check query
 * and a row lock per history row); statement-level triggers keep the cascade.
 * These tests pin both halves: deleting or truncating jobs removes their history, and the hot-path
 * inserts run no foreign-key check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 2 });
const schema = uniqueSchemaName('hist');
const S = `"${schema}"`;

beforeAll(async () => {
  await new Migrator(driver, { schema }).up();
});
afterAll(async () => {
  await driver.query(`DROP SCHEMA IF EXISTS ${S} CASCADE`);
  await driver.close();
});

/** Inserts `n` jobs, each with one attempt row and two event rows; returns their ids. */
async function jobsWithHistory(n: number, actor: string): Promise<string[]> {
  const { rows } = await driver.query<{ id: string }>(
    `INSERT INTO ${S}.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
     SELECT gen_random_uuid(), $1, 'default', '{}', 'succeeded', 1, 'transient', now()
     FROM generate_series(1, $2::int) RETURNING id`,
    [actor, n],
  );
  const ids = rows.map((r) => r.id);
  await driver.query(
    `INSERT INTO ${S}.job_attempts (job_id, attempt, outcome) SELECT id, 1, 'succeeded' FROM unnest($1::uuid[]) AS id`,
    [ids],
  );
  await driver.query(
    `INSERT INTO ${S}.job_events (job_id, kind) SELECT id, 'state_change' FROM unnest($1::uuid[]) AS id, generate_series(1, 2)`,
    [ids],
  );
  return ids;
}

async function historyOf(ids: readonly string[]): Promise<{ attempts: number; events: number }> {
  const { rows } = await driver.query<{ attempts: number; events: number }>(
    `SELECT (SELECT count(*) FROM ${S}.job_attempts WHERE job_id = ANY ($1::uuid[]))::int AS attempts,
            (SELECT count(*) FROM ${S}.job_events WHERE job_id = ANY ($1::uuid[]))::int AS events`,
    [ids],
  );
  return rows[0]!;
}

describe('job history cascade (triggers, no foreign key)', () => {
  it('deleting jobs deletes their attempts and events, and only theirs', async () => {
    const doomed = await jobsWithHistory(3, 'cascade_a');
    const kept = await jobsWithHistory(2, 'cascade_b');
    expect(await historyOf(doomed)).toEqual({ attempts: 3, events: 6 });

    await driver.query(`DELETE FROM ${S}.jobs WHERE id = ANY ($1::uuid[])`, [doomed]);

    expect(await historyOf(doomed)).toEqual({ attempts: 0, events: 0 });
    expect(await historyOf(kept)).toEqual({ attempts: 2, events: 4 });
  });

  it('truncating jobs truncates their history too', async () => {
    const ids = await jobsWithHistory(2, 'cascade_c');
    await driver.query(`TRUNCATE ${S}.jobs`);
    expect(await historyOf(ids)).toEqual({ attempts: 0, events: 0 });
    const { rows } = await driver.query<{ n: number }>(
      `SELECT ((SELECT count(*) FROM ${S}.job_attempts) + (SELECT count(*) FROM ${S}.job_events))::int AS n`,
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('history tables carry no foreign key (no per-row check) and are keyed by (job_id, id)', async () => {
    // The tables behind the job_attempts and job_events views (migration 0007).
    const { rows } = await driver.query<{ table: string; type: string; def: string }>(
      `SELECT conrelid::regclass::text AS table, contype::text AS type, pg_get_constraintdef(oid) AS def
       FROM pg_constraint
       WHERE conrelid IN ('${schema}.job_attempt_log'::regclass, '${schema}.job_event_log'::regclass)
         AND contype IN ('f', 'p')
       ORDER BY 1, 2`,
    );
    expect(rows.map((r) => [r.table.replace(`${schema}.`, ''), r.type, r.def])).toEqual([
      ['job_attempt_log', 'p', 'PRIMARY KEY (job_id, id)'],
      ['job_event_log', 'p', 'PRIMARY KEY (job_id, id)'],
    ]);
  });
});
