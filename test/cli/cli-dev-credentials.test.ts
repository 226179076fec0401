/**
 * `taskq dev` on TASKQ_PG_DSN with TASKQ_PG_CREDENTIAL_PROVIDER, on a cluster of the test's own
 * with password authentication: the worker and the client that runs the module's `seedJobs` both
 * authenticate through the provider (the DSN carries no password), so the seeded jobs run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cleanEnv, runTsx } from '../fixtures/cli/run-cli-process.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';

const ROLE = 'taskq_dev_role';

let cluster: PgCluster;
let db: TestSchema;

beforeAll(async () => {
  cluster = await startPgCluster();
  db = await migratedSchema('devcred', cluster.dsn);
  await db.pool.query(`CREATE ROLE ${ROLE} LOGIN SUPERUSER PASSWORD 'dev-password'`);
}, 120_000);
afterAll(async () => {
  await db?.drop().catch(() => undefined);
  await cluster?.destroy();
});

describe('taskq dev with a Postgres credential provider', () => {
  it('seeds and runs the jobs, authenticating the worker and the seeding client through it', async () => {
    const credFile = join(cluster.dir, 'dev-password');
    writeFileSync(credFile, 'dev-password\n');
    const r = await runTsx(
      'src/cli/bin.ts',
      ['dev', '--module', 'test/fixtures/cli/dev-seeded.ts', '--until-idle'],
      {
        env: cleanEnv({
          TASKQ_PG_DSN: `postgres://${ROLE}@127.0.0.1:${cluster.port}/postgres?sslmode=disable`,
          TASKQ_SCHEMA_NAME: db.schema,
          TASKQ_PG_CREDENTIAL_PROVIDER: './test/fixtures/credentials/file-provider.mjs:provider',
          TQ_CRED_FILE: credFile,
          TASKQ_LOG_LEVEL: 'warn',
          TASKQ_WATCHDOG_ENABLED: 'false',
          TASKQ_HEALTH_ENABLED: 'false',
          TASKQ_IDLE_SETTLE_WINDOW: '300ms',
          TASKQ_IDLE_POLL_INTERVAL: '100ms',
          TASKQ_IDLE_MAX_RUNTIME: '30s',
        }),
        timeoutMs: 90_000,
      },
    );
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stderr).not.toContain('seedJobs failed');
    const { rows } = await db.pool.query(
      `SELECT status::text AS status, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY status`,
    );
    expect(rows).toEqual([{ status: 'succeeded', n: 3 }]);
  });
});
