/**
 * The `-- taskq:no-transaction` directive: scripts/generate-sql.mjs reads it from the first lines
 * of a migration file and bundles the file with `transactional: false`; the Migrator then runs it
 * outside a transaction (and `migrate sql` leaves it unwrapped). The detection is a regex inside the
 * generator script, so the script is run for real on a temporary copy of the project layout.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator, type BundledMigration } from '../../src/migrations/migrator.js';
import { MIGRATIONS } from '../../src/migrations/migrations.generated.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

/** Migration files of the temporary project, by name: which ones carry the directive is the point. */
const FILES: Record<string, string> = {
  '0001_pre_table.sql': 'CREATE TABLE {schema}.t (x int);\n',
  '0002_pre_concurrent_index.sql':
    '-- taskq:no-transaction\n-- CREATE INDEX CONCURRENTLY refuses to run in a transaction block.\n' +
    'CREATE INDEX CONCURRENTLY t_x_idx ON {schema}.t (x);\n',
  // Leading blank lines and indentation are fine; the directive only has to be in the first lines.
  '0003_pre_indented.sql': '\n  -- taskq:no-transaction\nCREATE TABLE {schema}.indented (x int);\n',
  // Windows line endings are normalised before detection.
  '0004_pre_crlf.sql': '-- taskq:no-transaction\r\nCREATE TABLE {schema}.crlf (x int);\r\n',
  // Not the directive: a longer word, and a mention too far down the file.
  '0005_pre_lookalike.sql': '-- taskq:no-transactional\nCREATE TABLE {schema}.lookalike (x int);\n',
  '0006_pre_late.sql':
    '-- header 1\n-- header 2\n-- header 3\n-- header 4\n-- header 5\n-- taskq:no-transaction\n' +
    'CREATE TABLE {schema}.late (x int);\n',
  // A transactional file that fails half-way: its first statement must be rolled back with it.
  '0007_pre_fails_in_tx.sql': 'CREATE TABLE {schema}.tx_left (x int);\nSELECT 1 / 0;\n',
};

let project: string;
let generated: readonly BundledMigration[];
const byId = (id: string): BundledMigration => {
  const m = generated.find((x) => x.id === id);
  if (!m) throw new Error(`migration ${id} was not generated`);
  return m;
};

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'taskq-migdir-'));
  mkdirSync(join(project, 'scripts'));
  mkdirSync(join(project, 'src', 'migrations'), { recursive: true });
  // The script resolves the project root from its own location, so a copy works on the copy.
  copyFileSync(
    join(process.cwd(), 'scripts', 'generate-sql.mjs'),
    join(project, 'scripts', 'generate-sql.mjs'),
  );
  for (const [name, sql] of Object.entries(FILES))
    writeFileSync(join(project, 'src', 'migrations', name), sql);
  execFileSync(process.execPath, [join(project, 'scripts', 'generate-sql.mjs')], { stdio: 'pipe' });
  const out = join(project, 'src', 'migrations', 'migrations.generated.ts');
  // The generated module is TypeScript only for its interface; strip that to load it as plain ESM.
  const js = readFileSync(out, 'utf8')
    .replace(/export interface BundledMigration \{[\s\S]*?\n\}\n/, '')
    .replace(': readonly BundledMigration[]', '');
  const jsPath = join(project, 'migrations.generated.mjs');
  writeFileSync(jsPath, js);
  ({ MIGRATIONS: generated } = (await import(pathToFileURL(jsPath).href)) as {
    MIGRATIONS: readonly BundledMigration[];
  });
});
afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

describe('generate-sql.mjs: detecting the directive', () => {
  it('marks files that start with the directive non-transactional and the others transactional', () => {
    expect(Object.fromEntries(generated.map((m) => [m.id, m.transactional]))).toEqual({
      '0001_pre_table': true,
      '0002_pre_concurrent_index': false,
      '0003_pre_indented': false,
      '0004_pre_crlf': false,
      '0005_pre_lookalike': true,
      '0006_pre_late': true,
      '0007_pre_fails_in_tx': true,
    });
  });

  it('keeps the SQL as written (directive included) and parses the file name', () => {
    const m = byId('0002_pre_concurrent_index');
    expect(m).toMatchObject({ version: 2, phase: 'pre', name: 'concurrent_index' });
    expect(m.sql).toBe(FILES['0002_pre_concurrent_index.sql']);
    expect(byId('0004_pre_crlf').sql).not.toContain('\r');
  });

  it('the bundled migrations are all transactional (docs/migrations.md)', () => {
    expect(MIGRATIONS.length).toBeGreaterThan(0);
    expect(MIGRATIONS.filter((m) => !m.transactional).map((m) => m.id)).toEqual([]);
  });
});

describe('Migrator: running generated migrations with and without a transaction', () => {
  let driver: PgDriver;
  const schemas: string[] = [];
  beforeAll(() => {
    driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 2 });
  });
  afterAll(async () => {
    for (const s of schemas) await driver.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await driver.close();
  });
  const schema = (): string => {
    const s = uniqueSchemaName('migdir');
    schemas.push(s);
    return s;
  };
  const tableExists = async (s: string, table: string): Promise<boolean> =>
    (await driver.query(`SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2`, [s, table]))
      .rowCount === 1;

  it('runs a no-transaction file outside a transaction (CREATE INDEX CONCURRENTLY succeeds)', async () => {
    const s = schema();
    const ok = ['0001_pre_table', '0002_pre_concurrent_index', '0003_pre_indented'].map(byId);
    expect((await new Migrator(driver, { schema: s, migrations: ok }).up()).applied).toEqual([
      '0001_pre_table',
      '0002_pre_concurrent_index',
      '0003_pre_indented',
    ]);
    const idx = await driver.query(
      `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 't_x_idx'`,
      [s],
    );
    expect(idx.rowCount).toBe(1);
  });

  it('sends a no-transaction file one statement at a time (several CONCURRENTLY indexes, a function body with semicolons)', async () => {
    const s = schema();
    const multi: BundledMigration = {
      ...byId('0002_pre_concurrent_index'),
      id: '0002_pre_concurrent_many',
      sql:
        '-- taskq:no-transaction\n' +
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS t_x_idx ON {schema}.t (x);\n' +
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS t_x_pos_idx ON {schema}.t (x) WHERE x > 0; -- 'a; comment'\n" +
        'CREATE FUNCTION {schema}.two() RETURNS int LANGUAGE plpgsql AS $fn$ BEGIN PERFORM 1; RETURN 2; END $fn$;\n',
    };
    const m = new Migrator(driver, { schema: s, migrations: [byId('0001_pre_table'), multi] });
    expect((await m.up()).applied).toEqual(['0001_pre_table', '0002_pre_concurrent_many']);
    const idx = await driver.query(
      `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 't' ORDER BY 1`,
      [s],
    );
    expect(idx.rows.map((r) => (r as { indexname: string }).indexname)).toEqual(['t_x_idx', 't_x_pos_idx']);
    expect((await driver.query(`SELECT "${s}".two() AS v`)).rows[0]).toEqual({ v: 2 });
  });

  it('runs a file without the directive inside a transaction (CREATE INDEX CONCURRENTLY is refused)', async () => {
    const s = schema();
    // The same statement, but the directive is a look-alike: the file is transactional.
    const lookalike: BundledMigration = {
      ...byId('0005_pre_lookalike'),
      sql: '-- taskq:no-transactional\nCREATE INDEX CONCURRENTLY t_x_idx ON {schema}.t (x);\n',
    };
    const m = new Migrator(driver, { schema: s, migrations: [byId('0001_pre_table'), lookalike] });
    await expect(m.up()).rejects.toThrow(/cannot run inside a transaction block/);
    expect((await m.status()).map((x) => [x.id, x.applied])).toEqual([
      ['0001_pre_table', true],
      ['0005_pre_lookalike', false],
    ]);
  });

  it('rolls back a failing transactional file and records nothing for it', async () => {
    const s = schema();
    const m = new Migrator(driver, { schema: s, migrations: [byId('0007_pre_fails_in_tx')] });
    await expect(m.up()).rejects.toThrow(/division by zero/);
    expect(await tableExists(s, 'tx_left')).toBe(false);
    expect((await m.status())[0]?.applied).toBe(false);
  });

  it('migrate sql wraps only transactional files in BEGIN/COMMIT', () => {
    const script = new Migrator(driver, {
      schema: 'tenant_a',
      migrations: [byId('0001_pre_table'), byId('0002_pre_concurrent_index')],
    }).script();
    const [, tx, noTx] = script.split(/\n(?=-- 000\d_)/);
    expect(tx).toMatch(/^-- 0001_pre_table\nBEGIN;\nCREATE TABLE "tenant_a"\.t/);
    expect(tx).toMatch(/COMMIT;\s*$/);
    expect(noTx).toMatch(/^-- 0002_pre_concurrent_index \(runs outside a transaction\)\n/);
    expect(noTx).not.toMatch(/\bBEGIN;|\bCOMMIT;/);
    expect(noTx).toContain('CREATE INDEX CONCURRENTLY t_x_idx ON "tenant_a".t (x);');
  });
});
