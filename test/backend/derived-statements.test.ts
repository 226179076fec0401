/**
 * Statements derived from another by leaving out marked lines (pg-ops.ts): the derivation itself,
 * and `enqueueBatch`'s key-less variant, which a batch uses when none of its items has an
 * idempotency key (no ON CONFLICT: every row would otherwise be a speculative insertion).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { batchItem } from '../../src/client/batch-items.js';
import { deriveStatement } from '../../src/backend/postgres/pg-ops.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { Executor } from '../../src/db/driver.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

describe('deriveStatement', () => {
  it('leaves out the lines that end with the marker, and only those', () => {
    expect(deriveStatement('SELECT 1\nFROM t -- [x]\nWHERE true', '-- [x]')).toBe('SELECT 1\nWHERE true');
  });

  it('refuses a statement with no marked line (a renamed marker must not go unnoticed)', () => {
    expect(() => deriveStatement('SELECT 1', '-- [x]')).toThrow(/-- \[x\]/);
  });
});

describe('enqueueBatch with and without idempotency keys', () => {
  let db: TestSchema;
  let backend: PostgresBackend;
  let client: TaskQ;
  const names: string[] = [];
  const job = actor({ name: 'derived_job', queue: 'q' }, async () => undefined);

  beforeAll(async () => {
    db = await migratedSchema('derived');
    const query = db.driver.query.bind(db.driver);
    db.driver.query = ((text: string, values?: readonly unknown[], name?: string) => {
      if (name) names.push(name);
      return query(text, values, name);
    }) as typeof db.driver.query;
    // A keyed batch runs in a transaction of its own: record its statements too.
    const transaction = db.driver.transaction.bind(db.driver);
    db.driver.transaction = (<T>(fn: (tx: Executor) => Promise<T>) =>
      transaction((tx) =>
        fn({
          ...tx,
          query: (text: string, values?: readonly unknown[], name?: string) => {
            if (name) names.push(name);
            return tx.query(text, values, name);
          },
        } as Executor),
      )) as typeof db.driver.transaction;
    backend = new PostgresBackend(db.driver, { schema: db.schema });
    client = new TaskQ(backend, { capacityCacheTtl: 0 });
  });
  afterAll(async () => {
    await db.drop();
  });

  it('the key-less statement is enqueueBatch without its ON CONFLICT and ORDER BY lines', () => {
    const keyed = backend.statement('enqueueBatch');
    const unkeyed = backend.statement('enqueueBatchUnkeyed');
    expect(keyed).toMatch(/ON CONFLICT \(/);
    expect(unkeyed).not.toMatch(/ON CONFLICT \(/);
    expect(unkeyed).not.toMatch(/ORDER BY i\.ord/);
    expect(keyed.split('\n').length - unkeyed.split('\n').length).toBe(2);
  });

  it('a batch without keys runs the key-less statement and inserts every item', async () => {
    names.length = 0;
    const batch = await client.enqueueBatch([batchItem(job, { n: 1 }), batchItem(job, { n: 2 })]);
    expect(names.filter((n) => n.startsWith('taskq_enqueueBatch'))).toEqual([
      `taskq_enqueueBatchUnkeyed_${db.schema}`,
    ]);
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE metadata ->> 'batch_id' = $1`,
      [batch.batchId],
    );
    expect(rows[0].n).toBe(2);
  });

  it('a batch with one key runs the statement with ON CONFLICT and maps a repeated key to the existing job', async () => {
    const first = await client.enqueue(job, { n: 0 }, { idempotencyKey: 'derived-k' });
    names.length = 0;
    const batch = await client.enqueueBatch([
      batchItem(job, { n: 1 }),
      batchItem(job, { n: 2 }, { idempotencyKey: 'derived-k' }),
      batchItem(job, { n: 3 }, { idempotencyKey: 'derived-k3' }),
    ]);
    // A keyed batch first reads the stored keys (enqueueBatchGates), then inserts the rest.
    expect(names.filter((n) => n.startsWith('taskq_enqueueBatch'))).toEqual([
      `taskq_enqueueBatchGates_${db.schema}`,
      `taskq_enqueueBatch_${db.schema}`,
    ]);
    expect(batch.jobHandles[1]!.jobId).toBe(first.jobId);
  });
});
