import { afterAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator, sha256 } from '../../src/migrations/migrator.js';
import { MIGRATIONS, type BundledMigration } from '../../src/migrations/migrations.generated.js';
import { SchemaNotMigratedError, SchemaTooNewError } from '../../src/errors/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 6 });
const created: string[] = [];
afterAll(async () => {
  for (const s of created) await driver.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await driver.close();
});

function schema(): string {
  const s = uniqueSchemaName('mig');
  created.push(s);
  return s;
}

function recordingLogger(): Logger & { warnings: { obj: object; msg?: string }[] } {
  const warnings: { obj: object; msg?: string }[] = [];
  const l = {
    warnings,
    debug() {},
    info() {},
    warn(obj: object, msg?: string) {
      warnings.push({ obj, msg });
    },
    error() {},
    child: () => l,
  };
  return l;
}

describe('Migrator', () => {
  it('applies every bundled migration, then is idempotent', async () => {
    const m = new Migrator(driver, { schema: schema() });
    const first = await m.up();
    // Every `pre` migration in version order, then every `post` one.
    const inPhase = (phase: string) => MIGRATIONS.filter((x) => x.phase === phase).map((x) => x.id);
    expect(first.applied).toEqual([...inPhase('pre'), ...inPhase('post')]);
    const second = await m.up();
    expect(second.applied).toEqual([]);
    const status = await m.status();
    expect(status.every((s) => s.applied && !s.checksumDrift)).toBe(true);
    await expect(m.verify()).resolves.toBeUndefined();
  });

  it('serialises concurrent runs: one applies, every run succeeds', async () => {
    const s = schema();
    const runs = await Promise.all([1, 2, 3].map(() => new Migrator(driver, { schema: s }).up()));
    const applied = runs.map((r) => r.applied.length);
    expect(applied.filter((n) => n > 0)).toHaveLength(1);
    expect(applied.reduce((a, b) => a + b, 0)).toBe(MIGRATIONS.length);
    const ledger = await driver.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${s}".schema_migrations`,
    );
    expect(ledger.rows[0]?.n).toBe(MIGRATIONS.length);
  });

  it('records the SHA-256 of the rendered SQL and warns on drift without re-applying', async () => {
    const s = schema();
    const m = new Migrator(driver, { schema: s });
    await m.up();
    const stored = await driver.query<{ checksum: string }>(
      `SELECT checksum FROM "${s}".schema_migrations WHERE id = $1`,
      [MIGRATIONS[0]!.id],
    );
    expect(stored.rows[0]?.checksum).toBe(sha256(m.rendered(MIGRATIONS[0]!)));
    await driver.query(`UPDATE "${s}".schema_migrations SET checksum = 'tampered' WHERE id = $1`, [
      MIGRATIONS[0]!.id,
    ]);
    const logger = recordingLogger();
    const again = new Migrator(driver, { schema: s, logger });
    expect((await again.up()).applied).toEqual([]);
    expect(logger.warnings.map((w) => w.msg)).toContain('migration-checksum-drift');
    expect((await again.status()).find((x) => x.id === MIGRATIONS[0]!.id)?.checksumDrift).toBe(true);
  });

  it('runs pre before post, honours --phase, and supports the no-transaction directive', async () => {
    const s = schema();
    const custom: BundledMigration[] = [
      {
        id: '0001_pre_a',
        version: 1,
        phase: 'pre',
        name: 'a',
        transactional: true,
        sourceChecksum: '',
        sql: 'CREATE TABLE {schema}.a (x int);',
      },
      {
        id: '0002_post_b',
        version: 2,
        phase: 'post',
        name: 'b',
        transactional: true,
        sourceChecksum: '',
        sql: 'ALTER TABLE {schema}.a ADD COLUMN y int;',
      },
      {
        id: '0003_pre_c',
        version: 3,
        phase: 'pre',
        name: 'c',
        transactional: false,
        sourceChecksum: '',
        sql: '-- taskq:no-transaction\nCREATE INDEX CONCURRENTLY a_x_idx ON {schema}.a (x);',
      },
    ];
    const m = new Migrator(driver, { schema: s, migrations: custom });
    await expect(m.up({ phase: 'post' })).rejects.toThrow(/pre migrations are still pending/);
    expect((await m.up({ phase: 'pre' })).applied).toEqual(['0001_pre_a', '0003_pre_c']);
    expect((await m.up({ phase: 'post' })).applied).toEqual(['0002_post_b']);
    const idx = await driver.query(
      `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'a_x_idx'`,
      [s],
    );
    expect(idx.rowCount).toBe(1);
  });

  it('rolls back a failing transactional migration and records nothing for it', async () => {
    const s = schema();
    const custom: BundledMigration[] = [
      {
        id: '0001_pre_ok',
        version: 1,
        phase: 'pre',
        name: 'ok',
        transactional: true,
        sourceChecksum: '',
        sql: 'CREATE TABLE {schema}.ok (x int);',
      },
      {
        id: '0002_pre_bad',
        version: 2,
        phase: 'pre',
        name: 'bad',
        transactional: true,
        sourceChecksum: '',
        sql: 'CREATE TABLE {schema}.half (x int); SELECT no_such_function();',
      },
    ];
    const m = new Migrator(driver, { schema: s, migrations: custom });
    await expect(m.up()).rejects.toThrow(/no_such_function/);
    const half = await driver.query(`SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'half'`, [
      s,
    ]);
    expect(half.rowCount).toBe(0);
    expect((await m.status()).map((x) => x.applied)).toEqual([true, false]);
  });

  it('verify() reports unmigrated and too-new schemas', async () => {
    const s = schema();
    await expect(new Migrator(driver, { schema: s }).verify()).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await new Migrator(driver, { schema: s }).up();
    await driver.query(
      `INSERT INTO "${s}".schema_migrations (id, phase, checksum) VALUES ('9999_pre_future', 'pre', 'x')`,
    );
    const err = await new Migrator(driver, { schema: s }).verify().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaTooNewError);
    expect((err as SchemaTooNewError).unknownMigrations).toEqual(['9999_pre_future']);
  });

  it('rejects a schema name that is not an identifier before any SQL', async () => {
    const spy = { calls: 0 };
    const counting = new Proxy(driver, {
      get(target, prop, receiver) {
        if (prop === 'query' || prop === 'dedicated' || prop === 'transaction') spy.calls++;
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    for (const bad of ['taskq; DROP TABLE x', 'has-dash', '1abc', '', 'a"b', 'x'.repeat(64)]) {
      expect(() => new Migrator(counting, { schema: bad })).toThrow(/must match/);
    }
    expect(spy.calls).toBe(0);
  });

  it('script() renders a self-recording SQL script that leaves the schema verified', async () => {
    const s = schema();
    const sql = new Migrator(driver, { schema: s }).script();
    expect(sql).not.toContain('{schema}');
    await driver.query(sql);
    await expect(new Migrator(driver, { schema: s }).verify()).resolves.toBeUndefined();
    expect((await new Migrator(driver, { schema: s }).up()).applied).toEqual([]);
  });
});

/** A migration shipped after `0001_pre_initial`, as the generator would bundle it. */
function later(id: string, sql: string, transactional = true): BundledMigration {
  const [, version, phase, name] = /^(\d{4})_(pre|post)_(\w+)$/.exec(id) ?? [];
  return {
    id,
    version: Number(version),
    phase: phase as 'pre' | 'post',
    name: name as string,
    transactional,
    sourceChecksum: sha256(sql),
    sql,
  };
}

describe('Migrator: later migrations on top of the bundled schema', () => {
  const addColumn = later('0002_pre_jobs_note', 'ALTER TABLE {schema}.jobs ADD COLUMN note text;\n');
  const concurrentIndex = later(
    '0003_pre_jobs_note_index',
    '-- taskq:no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_note_idx ON {schema}.jobs (note)\n' +
      '  WHERE note IS NOT NULL;\n',
    false,
  );
  const dropColumn = later('0004_post_drop_jobs_note', 'ALTER TABLE {schema}.jobs DROP COLUMN note;\n');
  const next = [...MIGRATIONS, addColumn, concurrentIndex, dropColumn];

  async function columnExists(s: string): Promise<boolean> {
    const r = await driver.query(
      `SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'jobs' AND column_name = 'note'`,
      [s],
    );
    return r.rowCount === 1;
  }

  it('applies only the new pre migrations to an installed schema, the post one in its own phase', async () => {
    const s = schema();
    await new Migrator(driver, { schema: s }).up();
    const m = new Migrator(driver, { schema: s, migrations: next });
    await expect(m.verify()).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(m.up({ phase: 'post' })).rejects.toThrow(
      /pre migrations are still pending \(0002_pre_jobs_note, 0003_pre_jobs_note_index\)/,
    );

    expect((await m.up({ phase: 'pre' })).applied).toEqual([addColumn.id, concurrentIndex.id]);
    // Post migrations may lag during a rolling deploy: the schema is usable meanwhile.
    await expect(m.verify()).resolves.toBeUndefined();
    expect((await m.status()).filter((x) => !x.applied).map((x) => x.id)).toEqual([dropColumn.id]);
    expect(await columnExists(s)).toBe(true);
    const idx = await driver.query(
      `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_note_idx'`,
      [s],
    );
    expect(idx.rowCount).toBe(1);

    expect((await m.up({ phase: 'post' })).applied).toEqual([dropColumn.id]);
    expect(await columnExists(s)).toBe(false);
    expect((await m.up()).applied).toEqual([]);
  });

  it('a runner that does not ship a later migration refuses the schema (SchemaTooNewError)', async () => {
    const s = schema();
    await new Migrator(driver, { schema: s, migrations: [...MIGRATIONS, addColumn] }).up();
    const err = await new Migrator(driver, { schema: s }).verify().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaTooNewError);
    expect((err as SchemaTooNewError).unknownMigrations).toEqual([addColumn.id]);
  });

  it('warns when a later migration changed after it was applied, and never re-applies it', async () => {
    const s = schema();
    await new Migrator(driver, { schema: s, migrations: [...MIGRATIONS, addColumn] }).up();
    const edited = { ...addColumn, sql: 'ALTER TABLE {schema}.jobs ADD COLUMN note varchar(10);\n' };
    const logger = recordingLogger();
    const m = new Migrator(driver, { schema: s, logger, migrations: [...MIGRATIONS, edited] });
    expect((await m.up()).applied).toEqual([]);
    expect(logger.warnings.map((w) => [w.msg, (w.obj as { migration: string }).migration])).toEqual([
      ['migration-checksum-drift', addColumn.id],
    ]);
    expect((await m.status()).map((x) => [x.id, x.checksumDrift])).toEqual([
      ...MIGRATIONS.map((x) => [x.id, false]),
      [addColumn.id, true],
    ]);
  });

  it('migrate sql appends later migrations after the bundled ones, leaving the post one for its phase', async () => {
    const s = schema();
    const script = new Migrator(driver, { schema: s, migrations: next }).script({ phase: 'pre' });
    expect([...script.matchAll(/^-- (\d{4}_\w+)/gm)].map((x) => x[1])).toEqual([
      ...MIGRATIONS.map((x) => x.id),
      addColumn.id,
      concurrentIndex.id,
    ]);
    // The no-transaction file is not wrapped, so the script runs statement by statement (psql).
    expect(script).toContain(`-- ${concurrentIndex.id} (runs outside a transaction)`);
    const withoutConcurrent = new Migrator(driver, {
      schema: s,
      migrations: [...MIGRATIONS, addColumn],
    }).script();
    await driver.query(withoutConcurrent);
    await expect(
      new Migrator(driver, { schema: s, migrations: [...MIGRATIONS, addColumn] }).verify(),
    ).resolves.toBeUndefined();
    expect(await columnExists(s)).toBe(true);
  });
});
