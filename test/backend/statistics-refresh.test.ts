/**
 * `refreshStatistics`: a worker analyzes `jobs` at start when a burst filled it after the last
 * analyze (claims planned on missing statistics sort the whole backlog). The workers of a fleet
 * start together; one of them analyzes and the others wait for it, then find nothing to do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

let db: TestSchema;

beforeAll(async () => {
  db = await migratedSchema('stats');
  // Autovacuum must not analyze the table behind the test's back.
  await db.pool.query(`ALTER TABLE "${db.schema}".jobs SET (autovacuum_enabled = false)`);
});
afterAll(async () => {
  await db.drop();
});

async function fill(rows: number, into: TestSchema = db): Promise<void> {
  await into.pool.query(
    `INSERT INTO "${into.schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
     SELECT gen_random_uuid(), 'a', 'q', jsonb_build_object('i', g), 'pending', 3, 'transient', clock_timestamp()
     FROM generate_series(1, $1::int) AS g`,
    [rows],
  );
}

describe('refreshStatistics', () => {
  it('analyzes a table filled in a burst once, however many workers start at the same time', async () => {
    await fill(20_000);
    const drivers = Array.from({ length: 4 }, () => new PgDriver({ connection: TEST_DSN, maxPoolSize: 2 }));
    try {
      const backends = drivers.map((d) => new PostgresBackend(d, { schema: db.schema }));
      const analyzed = await Promise.all(backends.map((b) => b.refreshStatistics()));
      expect(analyzed.filter(Boolean)).toHaveLength(1);
      const stats = await db.pool.query<{ reltuples: number }>(
        `SELECT reltuples FROM pg_class WHERE oid = '"${db.schema}".jobs'::regclass`,
      );
      expect(Number(stats.rows[0]!.reltuples)).toBeGreaterThan(10_000);
      // Fresh now: nothing to do until the table grows tenfold again.
      expect(await backends[0]!.refreshStatistics()).toBe(false);
    } finally {
      await Promise.all(drivers.map((d) => d.close()));
    }
  });

  it('leaves statistics that are up to date alone', async () => {
    const backend = new PostgresBackend(db.driver, { schema: db.schema });
    await db.pool.query(`ANALYZE "${db.schema}".jobs`);
    await fill(1_000);
    expect(await backend.refreshStatistics()).toBe(false);
  });

  it('treats a table analyzed while empty as having no statistics once it is filled', async () => {
    const empty = await migratedSchema('stats0');
    try {
      await empty.pool.query(`ALTER TABLE "${empty.schema}".jobs SET (autovacuum_enabled = false)`);
      await empty.pool.query(`ANALYZE "${empty.schema}".jobs`);
      await fill(5000, empty);
      const backend = new PostgresBackend(empty.driver, { schema: empty.schema });
      expect(await backend.refreshStatistics()).toBe(true);
      expect(await backend.refreshStatistics()).toBe(false);
    } finally {
      await empty.drop();
    }
  });
});
