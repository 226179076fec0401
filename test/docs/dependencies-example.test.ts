/**
 * examples/dependencies/charge.ts, the worked example of docs/dependencies.md, run as a user would
 * run it (a subprocess, tsx, TASKQ_PG_DSN) against a fresh schema: each job gets a connection of
 * the injected pool, released after it.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { cleanEnv, runTsx } from '../fixtures/cli/run-cli-process.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const schema = uniqueSchemaName('exdi');
const pool = new pg.Pool({ connectionString: TEST_DSN, max: 1 });

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('examples/dependencies/charge.ts', { timeout: 120_000 }, () => {
  it('runs each job with its own injected connection and releases every one', async () => {
    const r = await runTsx('examples/dependencies/charge.ts', [], {
      env: cleanEnv({ TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: schema }),
      // tsx's start and the migrations, on two shared cores.
      timeoutMs: 90_000,
    });
    const explain = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
    expect(r.code, explain).toBe(0);
    expect(r.stdout.trim().split('\n'), explain).toEqual([
      'totals: 500, 2000, 80',
      'connections released: 3',
    ]);
  });
});
