/**
 * Postgres is restarted under a running fleet. This file restarts the shared server, so it runs on
 * its own, after every other test file (see the `test` script).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { record_ } from '../fixtures/fleet-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let db: TestSchema;
let tq: TaskQ;

function restartPostgres(): void {
  const version = readdirSync('/etc/postgresql')[0]!;
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], {
    stdio: 'inherit',
  });
}

async function pgUp(): Promise<boolean> {
  try {
    await db.pool.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  db = await migratedSchema('pgrestart');
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await waitFor(pgUp, 30_000, 'postgres');
  await db.drop();
});

async function enqueueRetrying(n: number): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await tq.enqueue(record_, { ms: 20 })).jobId;
    } catch (err) {
      if (attempt > 200) throw err;
      await new Promise((r) => setTimeout(r, 100));
      void n;
    }
  }
}

describe('Postgres restart under a running fleet', () => {
  it('workers reconnect and stay up; no job is lost or runs twice at once', async () => {
    const env = {
      TASKQ_QUEUES: 'fleet',
      TASKQ_MAX_CONCURRENCY: '4',
      TASKQ_HEARTBEAT_INTERVAL: '1',
      TASKQ_LOCK_LEASE: '20',
      TASKQ_MAX_HEARTBEAT_FAILURES: '10',
      TASKQ_SWEEP_INTERVAL: '1',
      TASKQ_NOTIFY_POLL_INTERVAL: '1',
      TASKQ_NOTIFY_HEALTH_CHECK_INTERVAL: '0.5',
      TASKQ_NOTIFY_RECONNECT_BACKOFF_INITIAL: '0.2',
      TASKQ_CANCELLATION_GRACE_PERIOD: '2',
      TASKQ_CLEANUP_GRACE_PERIOD: '2',
      TASKQ_TERMINATION_GRACE_PERIOD: '20',
    };
    const fleet: WorkerProcess[] = [startWorkerProcess(db.schema, env), startWorkerProcess(db.schema, env)];
    await Promise.all(fleet.map((p) => p.ready));
    try {
      const ids: string[] = [];
      const producer = (async () => {
        for (let i = 0; i < 300; i++) {
          ids.push(await enqueueRetrying(i));
          if (i % 10 === 0) await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await waitFor(async () => ids.length >= 60, 20_000, 'the first jobs');
      const t0 = Date.now();
      restartPostgres();
      console.log(`postgres restarted in ${Date.now() - t0} ms`);
      await producer;
      await waitFor(
        async () => {
          if (!(await pgUp())) return false;
          const r = await db.pool.query(
            `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status = 'succeeded'`,
          );
          return r.rows[0].n === 300;
        },
        90_000,
        'all 300 jobs to succeed',
      );
      for (const p of fleet) expect(p.proc.exitCode).toBeNull();
      const statuses = await db.pool.query(
        `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY 1`,
      );
      expect(statuses.rows).toEqual([{ status: 'succeeded', n: 300 }]);
      expect(new Set(ids).size).toBe(300);
      const overlaps = await db.pool.query(
        `SELECT count(*)::int AS n FROM "${db.schema}".test_runs a JOIN "${db.schema}".test_runs b
           ON a.job_id = b.job_id AND a.ctid < b.ctid AND a.started_at < b.finished_at AND b.started_at < a.finished_at`,
      );
      expect(overlaps.rows[0].n).toBe(0);
      const runs = await db.pool.query(
        `SELECT count(DISTINCT job_id)::int AS jobs, count(*)::int AS runs FROM "${db.schema}".test_runs`,
      );
      console.log(`runs recorded: ${JSON.stringify(runs.rows[0])}`);
      expect(runs.rows[0].jobs).toBe(300);
    } finally {
      const exits = await Promise.all(fleet.map((p) => p.stop()));
      for (const e of exits) expect(e.code).toBe(0);
    }
  });
});
