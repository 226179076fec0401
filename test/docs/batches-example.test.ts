/**
 * examples/batches/fan-out.ts, the worked example of docs/batches.md, run as a user would run it
 * (a subprocess, tsx, TASKQ_PG_DSN) against a fresh schema: it must print each album's outcome and
 * leave one complete and one aborted batch behind.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { cleanEnv, runTsx } from '../fixtures/cli/run-cli-process.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const schema = uniqueSchemaName('exbatch');
const pool = new pg.Pool({ connectionString: TEST_DSN, max: 1 });

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('examples/batches/fan-out.ts', { timeout: 120_000 }, () => {
  it('publishes the album whose images all resize and not the one its failure policy aborted', async () => {
    const r = await runTsx('examples/batches/fan-out.ts', [], {
      env: cleanEnv({ TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: schema }),
      // tsx's start, the migrations and a 1 s snooze or two, on two shared cores.
      timeoutMs: 90_000,
    });
    const explain = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
    expect(r.code, explain).toBe(0);
    expect(r.stdout.trim().split('\n'), explain).toEqual([
      'summer: published 3 of 3 images',
      'attic: not published, the batch was aborted after 2 failures in a row',
    ]);

    const batches = await pool.query(
      `SELECT status, expected_size, succeeded, failed + cancelled AS not_done, failure_threshold,
              finalizer_job_id IS NOT NULL AS has_finalizer
       FROM "${schema}".batches ORDER BY status`,
    );
    expect(batches.rows).toEqual([
      {
        status: 'aborted',
        expected_size: 3,
        succeeded: 0,
        not_done: 3,
        failure_threshold: 2,
        has_finalizer: true,
      },
      {
        status: 'complete',
        expected_size: 3,
        succeeded: 3,
        not_done: 0,
        failure_threshold: 2,
        has_finalizer: true,
      },
    ]);
    const finalizers = await pool.query(
      `SELECT status::text, attempt FROM "${schema}".jobs WHERE actor = 'publish_album'`,
    );
    // Snoozing while the children ran used no attempt.
    expect(finalizers.rows).toEqual([
      { status: 'succeeded', attempt: 1 },
      { status: 'succeeded', attempt: 1 },
    ]);
  });
});
