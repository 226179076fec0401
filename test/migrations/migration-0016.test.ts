/**
 * 0016_pre_jobs_indexed_columns_first rebuilds `jobs` in a new column order. It must keep every
 * row and everything defined on the table, whichever of the earlier migrations a schema has.
 */
import { randomBytes } from 'node:crypto';

import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { MIGRATIONS } from '../../src/migrations/migrations.generated.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 4 });
const pool = new pg.Pool({ connectionString: TEST_DSN, max: 4 });
const schemas: string[] = [];
const roles: string[] = [];
afterAll(async () => {
  for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  for (const r of roles) await pool.query(`DROP ROLE IF EXISTS "${r}"`);
  await pool.end();
  await driver.close();
});

const REORDER = MIGRATIONS.find((m) => m.id === '0016_pre_jobs_indexed_columns_first')!;
const BEFORE = MIGRATIONS.filter((m) => m.version < REORDER.version);

function newSchema(): string {
  const s = uniqueSchemaName('m16');
  schemas.push(s);
  return s;
}

/** Everything the migration promises to keep, in a form that ignores column order. */
async function snapshot(schema: string) {
  const jobs = `"${schema}".jobs`;
  const q = async (sql: string) => (await pool.query(sql, sql.includes('$1') ? [jobs] : [])).rows;
  const defs = async (sql: string) => (await q(sql)).map((r) => r.d as string).sort();
  return {
    rows: await q(`SELECT to_jsonb(j) AS row FROM ${jobs} j ORDER BY id`),
    indexes: await defs(
      `SELECT pg_get_indexdef(indexrelid) AS d FROM pg_index WHERE indrelid = $1::regclass`,
    ),
    constraints: await defs(
      `SELECT conname || ' ' || pg_get_constraintdef(oid) AS d FROM pg_constraint WHERE conrelid = $1::regclass`,
    ),
    triggers: await defs(
      `SELECT pg_get_triggerdef(oid) AS d FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal`,
    ),
    columns:
      await defs(`SELECT attname || ' ' || format_type(atttypid, atttypmod) || ' ' || attnotnull || ' ' ||
                coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS d
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`),
  };
}

async function columnOrder(schema: string): Promise<string[]> {
  const r = await pool.query<{ attname: string }>(
    `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [`"${schema}".jobs`],
  );
  return r.rows.map((x) => x.attname);
}

async function insertJobs(schema: string): Promise<void> {
  await pool.query(
    `INSERT INTO "${schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at,
                                  identity_key, metadata, tags, idempotency_key, start_to_close)
     VALUES (gen_random_uuid(), 'a', 'q', '{"n": 1}', 'pending', 3, 'transient', now(),
             'k1', '{"batch_id": "b1"}', '{red,blue}', 'idem-1', interval '5 seconds')`,
  );
  await pool.query(
    `INSERT INTO "${schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at,
                                  attempt, started_at, finished_at, result, result_size_bytes, error_class,
                                  heartbeat_details, progress_state, progress_seq)
     VALUES (gen_random_uuid(), 'b', 'q', '[1, 2]', 'succeeded', 1, 'nonRetryable', now() - interval '1 hour',
             1, now() - interval '2 minutes', now(), '{"ok": true}', 12, NULL, '{"beat": 3}', '{"pct": 100}', 4)`,
  );
  await pool.query(
    `INSERT INTO "${schema}".job_events (job_id, kind, detail)
     SELECT id, 'state_change', '{"reason": "test"}' FROM "${schema}".jobs`,
  );
}

describe('migration 0016 (jobs rebuilt with the indexed columns first)', () => {
  it('keeps every row, index, constraint, trigger, grant and setting of the table', async () => {
    const schema = newSchema();
    await new Migrator(driver, { schema, migrations: BEFORE }).up();
    await insertJobs(schema);
    const role = `m16_reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    await pool.query(`CREATE ROLE "${role}"`);
    await pool.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`);
    await pool.query(`GRANT SELECT, UPDATE ON "${schema}".jobs TO "${role}"`);
    await pool.query(
      `ALTER TABLE "${schema}".jobs SET (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.05)`,
    );
    await pool.query(`ALTER TABLE "${schema}".jobs ALTER COLUMN actor SET STATISTICS 500`);
    const before = await snapshot(schema);
    expect(before.rows).toHaveLength(2);

    expect((await new Migrator(driver, { schema }).up()).applied).toEqual([REORDER.id]);

    expect(await snapshot(schema)).toEqual(before);
    expect((await columnOrder(schema)).slice(0, 5)).toEqual([
      'id',
      'created_at',
      'scheduled_at',
      'status',
      'priority',
    ]);
    const priv = await pool.query(
      `SELECT has_table_privilege($1, $2, 'SELECT') AS s, has_table_privilege($1, $2, 'UPDATE') AS u,
              has_table_privilege($1, $2, 'DELETE') AS d`,
      [role, `"${schema}".jobs`],
    );
    expect(priv.rows[0]).toEqual({ s: true, u: true, d: false });
    const rel = await pool.query(
      `SELECT c.reloptions, (SELECT attstattarget FROM pg_attribute WHERE attrelid = c.oid AND attname = 'actor') AS st
       FROM pg_class c WHERE c.oid = $1::regclass`,
      [`"${schema}".jobs`],
    );
    expect(rel.rows[0]).toEqual({
      reloptions: ['fillfactor=90', 'autovacuum_vacuum_scale_factor=0.05'],
      st: 500,
    });

    // The copied rows are analyzed (a fresh, empty table is not: see jobsStatisticsStale).
    const analyzed = await pool.query(`SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, [
      `"${schema}".jobs`,
    ]);
    expect(Number(analyzed.rows[0].reltuples)).toBe(2);

    // The history cascade still fires from the new table.
    await pool.query(`DELETE FROM "${schema}".jobs WHERE actor = 'a'`);
    const events = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".job_events`);
    expect(events.rows[0].n).toBe(1);
  });

  it('recreates the indexes a pending post migration will drop, which then drops them', async () => {
    const schema = newSchema();
    await new Migrator(driver, { schema, migrations: BEFORE.filter((m) => m.phase === 'pre') }).up();
    await insertJobs(schema);
    const before = await snapshot(schema);
    expect(before.indexes.some((d) => d.includes('jobs_actor_waiting_idx'))).toBe(true);

    const migrator = new Migrator(driver, { schema });
    expect((await migrator.up({ phase: 'pre' })).applied).toEqual([REORDER.id]);
    expect(await snapshot(schema)).toEqual(before);

    const { applied: post } = await migrator.up({ phase: 'post' });
    expect(post).toContain('0015_post_drop_split_waiting_indexes');
    const after = await snapshot(schema);
    expect(after.indexes.some((d) => d.includes('jobs_actor_waiting_idx'))).toBe(false);
    expect(after.rows).toEqual(before.rows);
  });

  it('rolls back, changing nothing, when a view of the user depends on the table', async () => {
    const schema = newSchema();
    await new Migrator(driver, { schema, migrations: BEFORE }).up();
    await insertJobs(schema);
    await pool.query(`CREATE VIEW "${schema}".my_jobs AS SELECT id, actor FROM "${schema}".jobs`);
    const before = await snapshot(schema);
    const order = await columnOrder(schema);

    await expect(new Migrator(driver, { schema }).up()).rejects.toThrow(/depend/);

    expect(await snapshot(schema)).toEqual(before);
    expect(await columnOrder(schema)).toEqual(order);
    const ledger = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".schema_migrations WHERE id = $1`,
      [REORDER.id],
    );
    expect(ledger.rows[0].n).toBe(0);
  });
});
