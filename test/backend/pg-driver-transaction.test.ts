/**
 * A session ended by the server between two statements of a transaction (a fast shutdown,
 * pg_terminate_backend) fails the transaction; it must not surface as an unhandled 'error' event of
 * the checked-out client, which would end the process.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PgDriver } from '../../src/db/pg-driver.js';
import { TEST_DSN } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

let admin: pg.Client;
let driver: PgDriver;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: TEST_DSN });
  await admin.connect();
  driver = new PgDriver({ connection: TEST_DSN, maxPoolSize: 1 });
});
afterAll(async () => {
  await driver?.close();
  await admin?.end();
});

describe('PgDriver.transaction', () => {
  it('fails, without an unhandled error, when the server ends the session between statements', async () => {
    const gone = driver.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = rows[0]!.pid;
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      // The FATAL message reaches the idle, checked-out client before its next statement.
      await waitFor(
        async () =>
          (await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]
            .n === 0,
        10_000,
        'the session to end',
      );
      await tx.query('SELECT 1');
    });
    await expect(gone).rejects.toThrow();
    // The broken client left the pool: the next statement gets a new session.
    await expect(driver.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });
});
