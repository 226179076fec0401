import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError, SchemaNotMigratedError, TaskQStateError } from '../../src/errors/index.js';
import { newJobId } from '../../src/core/ids.js';
import { plain } from '../helpers/actors.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
beforeAll(async () => {
  db = await migratedSchema('pgc');
});
afterAll(async () => {
  await db.drop();
});

describe('TaskQ over Postgres', () => {
  it('inserts exactly one row for concurrent enqueues of one idempotency key from many connections', async () => {
    const clients = await Promise.all(
      Array.from({ length: 8 }, () => TaskQ.open({ dsn: TEST_DSN, schema: db.schema, maxPoolSize: 2 })),
    );
    try {
      const handles = await Promise.all(
        clients.flatMap((tq, i) =>
          [0, 1, 2].map((k) => tq.enqueue(plain, { n: i * 10 + k }, { idempotencyKey: 'race-key' })),
        ),
      );
      const ids = new Set(handles.map((h) => h.jobId));
      expect(ids.size).toBe(1);
      expect(handles.filter((h) => !h.wasExisting)).toHaveLength(1);
      const n = await db.pool.query(
        `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE idempotency_key = 'race-key'`,
      );
      expect(n.rows[0].n).toBe(1);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('keeps microsecond precision in cursors (rows in one millisecond never skip or repeat)', async () => {
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    try {
      const ids = [newJobId(), newJobId(), newJobId()];
      const times = [
        '2026-01-01T00:00:00.123100Z',
        '2026-01-01T00:00:00.123500Z',
        '2026-01-01T00:00:00.123900Z',
      ];
      for (let i = 0; i < 3; i++) {
        await db.pool.query(
          `INSERT INTO "${db.schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, created_at, scheduled_at)
           VALUES ($1, 'precise', 'precise', '{}', 'pending', 1, 'transient', $2, $2)`,
          [ids[i], times[2 - i]],
        );
      }
      for (const orderBy of ['scheduled_at_asc', 'created_at_desc'] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await tq.list({ queue: 'precise', limit: 1, orderBy, cursor });
          seen.push(...page.jobs.map((j) => j.id));
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        expect(seen).toHaveLength(3);
        expect(new Set(seen).size).toBe(3);
      }
    } finally {
      await tq.close();
    }
  });

  it('raises SchemaNotMigratedError naming the command when the schema is not migrated', async () => {
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: uniqueSchemaName('nomig') });
    try {
      const err = await tq.enqueue(plain, { n: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaNotMigratedError);
      expect((err as Error).message).toContain('taskq migrate up');
      await expect(tq.list()).rejects.toBeInstanceOf(SchemaNotMigratedError);
      await expect(tq.getRow(newJobId())).rejects.toBeInstanceOf(SchemaNotMigratedError);
      await expect(tq.cancel(newJobId())).rejects.toBeInstanceOf(SchemaNotMigratedError);
    } finally {
      await tq.close();
    }
  });

  it('open() needs exactly one connection source and a valid schema', async () => {
    await expect(TaskQ.open({})).rejects.toBeInstanceOf(InvalidArgumentError);
    const pool = new pg.Pool({ connectionString: TEST_DSN });
    await expect(TaskQ.open({ dsn: TEST_DSN, pool })).rejects.toThrow(
      /exactly one of dsn, pool, poolFactory or driver/,
    );
    await expect(TaskQ.open({ dsn: '  ' })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(TaskQ.open({ dsn: TEST_DSN, schema: 'x-y' })).rejects.toThrow(/must match/);
    await pool.end();
  });

  it('never closes a caller pool, closes owned ones, and supports await using', async () => {
    const pool = new pg.Pool({ connectionString: TEST_DSN, max: 2 });
    {
      await using tq = await TaskQ.open({ pool, schema: db.schema });
      await tq.enqueue(plain, { n: 1 });
    }
    expect((await pool.query('SELECT 1 AS ok')).rows[0].ok).toBe(1);
    await pool.end();

    let built: pg.Pool | undefined;
    const tq2 = await TaskQ.open({
      poolFactory: async () => (built = new pg.Pool({ connectionString: TEST_DSN, max: 1 })),
      schema: db.schema,
    });
    await tq2.list();
    await tq2.close();
    expect(built?.ended).toBe(true);
    await expect(tq2.list()).rejects.toBeInstanceOf(TaskQStateError);
    await tq2.close();
  });
});
