import { randomBytes } from 'node:crypto';

import pg from 'pg';

import { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { waitFor } from './wait.js';

/** The test database (real Postgres; DESIGN.md §7). */
export const TEST_DSN = process.env.TASKQ_TEST_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh, uniquely named schema name for one test file or case. */
export function uniqueSchemaName(prefix = 't'): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** A migrated schema of its own, with a driver; `drop()` removes it. */
export interface TestSchema {
  schema: string;
  driver: PgDriver;
  /** A plain pool for assertions and raw SQL. */
  pool: pg.Pool;
  drop(): Promise<void>;
}

/**
 * Creates and migrates a schema for one test file, in the test database or in `dsn`'s (a fault
 * test's private cluster, see pg-cluster.ts).
 */
export async function migratedSchema(prefix = 't', dsn = TEST_DSN): Promise<TestSchema> {
  const schema = uniqueSchemaName(prefix);
  const driver = new PgDriver({ connection: dsn, maxPoolSize: 6 });
  await new Migrator(driver, { schema }).up();
  const pool = new pg.Pool({ connectionString: dsn, max: 4 });
  // Idle clients die when Postgres restarts (fault tests); that must not crash the test process.
  pool.on('error', () => undefined);
  return {
    schema,
    driver,
    pool,
    async drop() {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
      await driver.close();
    },
  };
}

/**
 * Waits until some session waits for a lock that `blocker` (a client holding it, e.g. a row locked
 * `FOR UPDATE` in an open transaction) holds: the statement a race test wants stalled has reached it.
 */
export async function waitForBlockedBy(
  db: { query(sql: string, values: unknown[]): Promise<{ rows: unknown[] }> },
  blocker: pg.Client | pg.PoolClient,
  what: string,
): Promise<void> {
  const pid = (blocker as unknown as { processID: number }).processID;
  await waitFor(
    async () =>
      (await db.query('SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))', [pid]))
        .rows.length > 0,
    10_000,
    what,
  );
}
