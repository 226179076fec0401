/**
 * `0001_pre_initial` creates the final schema directly. Before any release the schema was built by
 * sixteen migrations (kept in test/fixtures/legacy-migrations/ for this comparison only); the one
 * file must produce the same catalog, column for column and index for index, except for the stored
 * values that now follow the reference schema (EXPECTED_DIFFERENCES).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator, sha256, type BundledMigration } from '../../src/migrations/migrator.js';
import { MIGRATIONS } from '../../src/migrations/migrations.generated.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const LEGACY_DIR = join(process.cwd(), 'test', 'fixtures', 'legacy-migrations');

/** The sixteen migrations as they were bundled (all transactional, no directive). */
function legacyMigrations(): BundledMigration[] {
  return readdirSync(LEGACY_DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => {
      const m = /^(\d{4})_(pre|post)_([a-z0-9_]+)\.sql$/.exec(f);
      if (!m) throw new Error(`unexpected legacy migration file ${f}`);
      const sql = readFileSync(join(LEGACY_DIR, f), 'utf8');
      return {
        id: f.slice(0, -4),
        version: Number(m[1]),
        phase: m[2] as 'pre' | 'post',
        name: m[3] as string,
        transactional: true,
        sql,
        sourceChecksum: sha256(sql),
      };
    });
}

/**
 * Catalog entries that differ on purpose, per category: what the sixteen migrations produced and
 * what `0001_pre_initial` produces instead. Anything else that differs fails the comparison.
 */
const EXPECTED_DIFFERENCES: Record<string, { legacy: string[]; squashed: string[] }> = {
  // retry_kind stores the reference's `non_retryable`; the API keeps `nonRetryable` (row-mapper.ts).
  constraints: {
    legacy: [
      "jobs jobs_retry_kind_check c CHECK ((retry_kind = ANY (ARRAY['transient'::text, 'indefinite'::text, 'nonRetryable'::text])))",
    ],
    squashed: [
      "jobs jobs_retry_kind_check c CHECK ((retry_kind = ANY (ARRAY['transient'::text, 'indefinite'::text, 'non_retryable'::text])))",
    ],
  },
};

const pool = new pg.Pool({ connectionString: TEST_DSN, max: 3 });
const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 3 });
const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await pool.end();
  await driver.close();
});

function newSchema(prefix: string): string {
  const s = uniqueSchemaName(prefix);
  schemas.push(s);
  return s;
}

/** Every object of a schema as sorted lines of text, per category, the schema name normalised. */
async function catalog(schema: string): Promise<Record<string, string[]>> {
  const lines = async (sql: string): Promise<string[]> =>
    (await pool.query<{ d: string }>(sql, [schema])).rows
      .map((r) => r.d.replaceAll(`"${schema}"`, '{schema}').replaceAll(schema, '{schema}'))
      .sort();
  const ns = `(SELECT oid FROM pg_namespace WHERE nspname = $1)`;
  return {
    relations: await lines(
      `SELECT relname || ' ' || relkind::text AS d FROM pg_class WHERE relnamespace = ${ns}`,
    ),
    columns: await lines(
      `SELECT c.relname || ' #' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) ||
              CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||
              coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') AS d
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
       WHERE c.relnamespace = ${ns} AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped`,
    ),
    indexes: await lines(
      `SELECT pg_get_indexdef(i.indexrelid) AS d
       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = ${ns}`,
    ),
    constraints: await lines(
      `SELECT c.relname || ' ' || k.conname || ' ' || k.contype::text || ' ' || pg_get_constraintdef(k.oid) AS d
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE c.relnamespace = ${ns}`,
    ),
    triggers: await lines(
      `SELECT pg_get_triggerdef(t.oid) AS d
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
       WHERE c.relnamespace = ${ns} AND NOT t.tgisinternal`,
    ),
    functions: await lines(`SELECT pg_get_functiondef(oid) AS d FROM pg_proc WHERE pronamespace = ${ns}`),
    types: await lines(
      `SELECT t.typname || ' ' || t.typtype::text ||
              coalesce(' ' || (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                               FROM pg_enum e WHERE e.enumtypid = t.oid), '') AS d
       FROM pg_type t
       WHERE t.typnamespace = ${ns} AND t.typcategory <> 'A'
         AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')`,
    ),
    sequences: await lines(
      `SELECT c.relname || ' ' || format_type(s.seqtypid, NULL) || ' start ' || s.seqstart ||
              ' increment ' || s.seqincrement || ' min ' || s.seqmin || ' max ' || s.seqmax ||
              ' cache ' || s.seqcache || ' cycle ' || s.seqcycle ||
              coalesce(' owned by ' || (SELECT t.relname || '.' || a.attname
                                        FROM pg_depend d
                                        JOIN pg_class t ON t.oid = d.refobjid
                                        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                                        WHERE d.objid = c.oid AND d.classid = 'pg_class'::regclass
                                          AND d.deptype IN ('a', 'i')), '') AS d
       FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid WHERE c.relnamespace = ${ns}`,
    ),
  };
}

/** Per category, the entries found in only one of the two catalogs. */
function differences(
  legacy: Record<string, string[]>,
  squashed: Record<string, string[]>,
): Record<string, { legacy: string[]; squashed: string[] }> {
  const out: Record<string, { legacy: string[]; squashed: string[] }> = {};
  for (const category of Object.keys(legacy)) {
    const a = legacy[category] ?? [];
    const b = squashed[category] ?? [];
    const onlyLegacy = a.filter((x) => !b.includes(x));
    const onlySquashed = b.filter((x) => !a.includes(x));
    if (onlyLegacy.length > 0 || onlySquashed.length > 0)
      out[category] = { legacy: onlyLegacy, squashed: onlySquashed };
  }
  return out;
}

describe('0001_pre_initial against the sixteen legacy migrations', () => {
  let legacy: Record<string, string[]>;
  let squashed: Record<string, string[]>;

  beforeAll(async () => {
    const old = newSchema('legacy');
    const migrations = legacyMigrations();
    expect(migrations).toHaveLength(16);
    await new Migrator(driver, { schema: old, migrations }).up();
    const fresh = newSchema('squash');
    // The squashed file alone: later migrations change the schema on purpose.
    const initial = MIGRATIONS.filter((m) => m.id === '0001_pre_initial');
    expect((await new Migrator(driver, { schema: fresh, migrations: initial }).up()).applied).toEqual([
      '0001_pre_initial',
    ]);
    [legacy, squashed] = await Promise.all([catalog(old), catalog(fresh)]);
  });

  it('reads a catalog with something in every category', () => {
    for (const [category, entries] of Object.entries(squashed))
      expect(entries.length, category).toBeGreaterThan(0);
    expect(squashed.types).toEqual([
      'job_status e pending,scheduled,running,succeeded,failed,cancelled,crashed,abandoned',
    ]);
  });

  it('produces the same schema, except the stored values that follow the reference', () => {
    expect(differences(legacy, squashed)).toEqual(EXPECTED_DIFFERENCES);
  });
});

describe('the jobs table of a fresh install', () => {
  let schema: string;
  beforeAll(async () => {
    schema = newSchema('fresh');
    await new Migrator(driver, { schema }).up();
  });

  it('has the columns its indexes read first: fixed-width and never null, then never null, then nullable', async () => {
    const { rows } = await pool.query<{ attname: string }>(
      `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
       ORDER BY attnum`,
      [`"${schema}".jobs`],
    );
    const columns = rows.map((r) => r.attname);
    expect(columns.slice(0, 18)).toEqual([
      ...['id', 'created_at', 'scheduled_at', 'status', 'priority'],
      ...['actor', 'queue', 'idempotency_scope', 'metadata', 'tags'],
      ...['locked_by_worker', 'finished_at', 'result_expires_at', 'schedule_to_close'],
      ...['identity_key', 'fairness_key', 'idempotency_key', 'result'],
    ]);
    // Migrations append (ADD COLUMN can only append): 0005 batch_id, 0007 the columns of a plain
    // success's history, which only its last version carries; payload is last of the rest.
    expect(columns.slice(-7)).toEqual([
      'payload',
      'batch_id',
      ...['success_attempt_id', 'success_event_id', 'success_worker_id', 'success_started_at'],
      'success_duration_ms',
    ]);
    expect(columns).toHaveLength(45);
  });

  it('is left unanalyzed, so the workers analyze it once it grows', async () => {
    // An ANALYZE of an empty table stores no column statistics; the workers' refresh
    // (jobsStatisticsStale) analyzes the table once a burst has filled it.
    const reltuples = async (): Promise<number> =>
      Number(
        (
          await pool.query<{ n: number }>(`SELECT reltuples AS n FROM pg_class WHERE oid = $1::regclass`, [
            `"${schema}".jobs`,
          ])
        ).rows[0]!.n,
      );
    expect(await reltuples()).toBe(-1);
    await pool.query(`ALTER TABLE "${schema}".jobs SET (autovacuum_enabled = false)`);
    await pool.query(
      `INSERT INTO "${schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
       SELECT gen_random_uuid(), 'a', 'q', jsonb_build_object('i', g), 'pending', 3, 'transient', clock_timestamp()
       FROM generate_series(1, 5000) AS g`,
    );
    const backend = new PostgresBackend(driver, { schema });
    expect(await backend.refreshStatistics()).toBe(true);
    expect(await reltuples()).toBeGreaterThan(1000);
  });
});
