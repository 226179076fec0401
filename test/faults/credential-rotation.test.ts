/**
 * Credential rotation under load, on a cluster of the test's own with password authentication
 * (pg-cluster.ts): a worker process authenticates through a provider that reads a file; the test
 * changes the role's password (`ALTER ROLE … PASSWORD`), rewrites the file and sends SIGHUP. New
 * connections then use the new password, the old pools' sessions end once their work is done, no job
 * is lost or fails, and the worker never exits. The LISTEN and leader sessions are not recycled by a
 * reload (a reconnect would risk the leader lease for nothing: Postgres checks passwords only at
 * connect time); they reconnect with the current credential whenever they break.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import type { PgCredential } from '../../src/credentials/credential-types.js';
import { makePgPoolFactory } from '../../src/credentials/pg-pool-factory.js';
import { CredentialUsernameChangedError } from '../../src/errors/credential-errors.js';
import { record_ } from '../fixtures/fleet-actors.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess } from '../helpers/worker-process.js';

const ROLE = 'taskq_rotating';
const POOL_APPS = ['taskq-worker', 'taskq-heartbeat', 'taskq-claim', 'taskq-settle'];
let cluster: PgCluster;
let db: TestSchema;
/** The role's DSN, without a password: the provider supplies it. */
let roleDsn: string;

beforeAll(async () => {
  cluster = await startPgCluster();
  db = await migratedSchema('rotate', cluster.dsn);
  await db.pool.query(`CREATE ROLE ${ROLE} LOGIN SUPERUSER PASSWORD 'first-password'`);
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  roleDsn = `postgres://${ROLE}@127.0.0.1:${cluster.port}/postgres?sslmode=disable`;
});
afterAll(async () => {
  await db?.drop().catch(() => undefined);
  await cluster?.destroy();
});

/** Connects once as the role with `password`: true when the server accepts it. */
async function canConnect(password: string): Promise<boolean> {
  // Fields, not a connection string: node-postgres lets a string's (empty) password win over `password`.
  const c = new pg.Client({
    host: '127.0.0.1',
    port: cluster.port,
    database: 'postgres',
    user: ROLE,
    password,
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return true;
  } catch (err) {
    expect((err as { code?: string }).code).toBe('28P01'); // invalid_password
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('credential rotation on a password-authenticated cluster', () => {
  it('SIGHUP after a password change: new connections use the new one, old ones drain, no job lost', async () => {
    const credFile = join(cluster.dir, 'pg-password');
    writeFileSync(credFile, 'first-password\n');
    const tq = await TaskQ.open({ dsn: cluster.dsn, schema: db.schema });
    const worker = startWorkerProcess(db.schema, {
      // The fixture actors record their runs through TASKQ_PG_DSN (the superuser); the worker's own
      // connections use pgDsnDirect, the rotating role, through the provider.
      TASKQ_PG_DSN: cluster.dsn,
      TASKQ_PG_DSN_DIRECT: roleDsn,
      TASKQ_PG_CREDENTIAL_PROVIDER: './test/fixtures/credentials/file-provider.mjs:provider',
      TQ_CRED_FILE: credFile,
      TASKQ_QUEUES: 'fleet',
      TASKQ_MAX_CONCURRENCY: '4',
      TASKQ_LOG_LEVEL: 'info',
      TASKQ_RELOAD_FACTORY_TIMEOUT: '10s',
    });
    try {
      await worker.ready;
      const ids: string[] = [];
      let enqueueing = true;
      // A steady load across the rotation: jobs that hold a connection a little while.
      const load = (async () => {
        while (enqueueing) {
          for (let i = 0; i < 10; i++) ids.push((await tq.enqueue(record_, { ms: 15 })).jobId);
          await waitFor(
            async () =>
              (await db.pool.query(`SELECT 1 FROM "${db.schema}".jobs WHERE status = 'pending' LIMIT 1`))
                .rowCount === 0 || !enqueueing,
            30_000,
            'the worker to take the pending jobs',
          );
        }
      })();
      await waitFor(async () => ids.length >= 60, 30_000, 'jobs before the rotation');

      const { rows: before } = await db.pool.query<{ at: Date }>('SELECT clock_timestamp() AS at');
      const rotatedAt = before[0]!.at;
      await db.pool.query(`ALTER ROLE ${ROLE} PASSWORD 'second-password'`);
      writeFileSync(credFile, 'second-password\n');
      const reloadsBefore = worker.stdout.filter((l) => l.includes('"credentials-reloaded"')).length;
      worker.proc.kill('SIGHUP');
      await waitFor(
        () => worker.stdout.filter((l) => l.includes('"credentials-reloaded"')).length > reloadsBefore,
        30_000,
        'the reload to finish',
      );
      const line = JSON.parse(worker.stdout.filter((l) => l.includes('"credentials-reloaded"')).at(-1)!) as {
        failed: string[];
        resources: string[];
      };
      expect(line.failed).toEqual([]);
      expect(line.resources).toEqual(POOL_APPS.map((a) => `pg:${a}`));

      await waitFor(async () => ids.length >= 160, 60_000, 'jobs after the rotation');
      enqueueing = false;
      await load;

      // Every job succeeded, once, across the rotation.
      await waitFor(
        async () =>
          (
            await db.pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status = 'succeeded'`,
            )
          ).rows[0]!.n === ids.length,
        60_000,
        'every job to succeed',
      );
      const { rows: statuses } = await db.pool.query<{ status: string; n: number }>(
        `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY 1`,
      );
      expect(statuses).toEqual([{ status: 'succeeded', n: ids.length }]);

      // The old pools drained: no pool session of the role opened before the rotation remains; the
      // pools serve on sessions opened after it, with the new password.
      const sessions = async (older: boolean): Promise<number> =>
        (
          await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE usename = $1 AND application_name = ANY($2)
                AND ${older ? 'backend_start < $3' : 'backend_start > $3'}`,
            [ROLE, POOL_APPS, rotatedAt],
          )
        ).rows[0]!.n;
      await waitFor(async () => (await sessions(true)) === 0, 30_000, 'the old pools to close');
      expect(await sessions(false)).toBeGreaterThan(0);

      // The old password really is refused now, and the new one accepted.
      expect(await canConnect('first-password')).toBe(false);
      expect(await canConnect('second-password')).toBe(true);
      // The provider was asked for every physical connection, not once.
      expect(readFileSync(`${credFile}.calls`, 'utf8').length).toBeGreaterThan(POOL_APPS.length * 2);

      expect(worker.proc.exitCode).toBeNull();
      const exit = await worker.stop();
      expect(exit.code).toBe(0);
    } finally {
      if (worker.proc.exitCode === null) await worker.stop();
      await tq.close();
    }
  });

  it('a pool fetches the password per connection and refuses a rotated user with a clear error', async () => {
    let calls = 0;
    let credential: PgCredential = { password: 'second-password', username: ROLE };
    const pool = await makePgPoolFactory(roleDsn, {
      getPgCredential: async () => {
        calls++;
        return credential;
      },
    })();
    try {
      const [a, b] = [await pool.connect(), await pool.connect()];
      expect(calls).toBe(3);
      a.release();
      b.release();
      credential = { password: 'second-password', username: 'someone_else' };
      const held = [await pool.connect(), await pool.connect()];
      const err = await pool.connect().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CredentialUsernameChangedError);
      for (const c of held) c.release();
    } finally {
      await pool.end();
    }
  });
});
