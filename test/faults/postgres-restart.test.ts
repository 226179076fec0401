/**
 * Postgres is restarted under a running fleet: a cluster of the test's own (pg-cluster.ts), never the
 * machine's server. Once with a fast shutdown (sessions terminated, a checkpoint, a new postmaster)
 * and once with an immediate one (a crash: no checkpoint, recovery from the WAL on start). Fault
 * tests run one file at a time, after every other test file (see the `test` script), so that their
 * worker processes do not compete with the rest for the two cores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { record_ } from '../fixtures/fleet-actors.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startPgCluster, type PgCluster, type PgStopMode } from '../helpers/pg-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

const JOBS = 300;
let cluster: PgCluster;

beforeAll(async () => {
  cluster = await startPgCluster();
});
afterAll(async () => {
  await cluster?.destroy();
});

describe('Postgres restart under a running fleet', () => {
  it.each(['fast', 'immediate'] as PgStopMode[])(
    '%s: workers reconnect and stay up; no job is lost or runs twice at once',
    async (mode) => {
      const db: TestSchema = await migratedSchema('pgrestart', cluster.dsn);
      await db.pool.query(
        `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
      );
      const tq = await TaskQ.open({ dsn: cluster.dsn, schema: db.schema });
      const pgUp = async (): Promise<boolean> => {
        try {
          await db.pool.query('SELECT 1');
          return true;
        } catch {
          return false;
        }
      };
      /**
       * Enqueues one job; while Postgres is away, waits for it to answer again and retries. The key
       * makes the retry exact: an immediate shutdown can end the connection after the commit and
       * before its answer, and a keyless retry would then store a second job.
       */
      let refused = 0;
      const enqueueRetrying = async (n: number): Promise<string> => {
        for (let attempt = 0; ; attempt++) {
          try {
            return (await tq.enqueue(record_, { ms: 20 }, { idempotencyKey: `pgrestart-${n}` })).jobId;
          } catch (err) {
            refused++;
            if (attempt > 20) throw err;
            await waitFor(pgUp, 60_000, 'postgres to accept connections again');
          }
        }
      };
      const env = {
        TASKQ_PG_DSN: cluster.dsn,
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
      try {
        await Promise.all(fleet.map((p) => p.ready));
        const ids: string[] = [];
        const producer = (async () => {
          for (let i = 0; i < JOBS; i++) ids.push(await enqueueRetrying(i));
        })();
        // Restart once the fleet is busy, while the producer keeps enqueueing.
        await waitFor(async () => ids.length >= 60, 20_000, 'the first jobs');
        const pidBefore = cluster.pid();
        const enqueuedBefore = ids.length;
        await cluster.restart(mode);
        expect(cluster.pid()).not.toBe(pidBefore);
        await producer;
        /** What a failure needs to be read: every job not succeeded, with its attempts and events. */
        const dumpUnfinished = async (): Promise<void> => {
          const r = await db.pool.query(
            `SELECT j.id, j.status::text, j.attempt, j.scheduled_at, j.created_at,
                    (SELECT json_agg(a ORDER BY a.id) FROM "${db.schema}".job_attempts a WHERE a.job_id = j.id) AS attempts,
                    (SELECT json_agg(e ORDER BY e.id) FROM "${db.schema}".job_events e WHERE e.job_id = j.id) AS events
               FROM "${db.schema}".jobs j WHERE j.status <> 'succeeded'`,
          );
          console.log(`${mode}: ${r.rowCount} jobs not succeeded:\n${JSON.stringify(r.rows, null, 1)}`);
        };
        await waitFor(
          async () => {
            if (!(await pgUp())) return false;
            const r = await db.pool.query(
              `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status = 'succeeded'`,
            );
            return r.rows[0].n === JOBS;
          },
          90_000,
          `all ${JOBS} jobs to succeed`,
        ).catch(async (err: unknown) => {
          await dumpUnfinished();
          throw err;
        });
        for (const p of fleet) expect(p.proc.exitCode).toBeNull();
        const statuses = await db.pool.query(
          `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY 1`,
        );
        if (statuses.rows.length !== 1) await dumpUnfinished();
        expect(statuses.rows).toEqual([{ status: 'succeeded', n: JOBS }]);
        expect(new Set(ids).size).toBe(JOBS);
        const overlaps = await db.pool.query(
          `SELECT count(*)::int AS n FROM "${db.schema}".test_runs a JOIN "${db.schema}".test_runs b
             ON a.job_id = b.job_id AND a.ctid < b.ctid AND a.started_at < b.finished_at AND b.started_at < a.finished_at`,
        );
        expect(overlaps.rows[0].n).toBe(0);
        const runs = await db.pool.query(
          `SELECT count(DISTINCT job_id)::int AS jobs, count(*)::int AS runs FROM "${db.schema}".test_runs`,
        );
        console.log(
          `${mode} restart after ${enqueuedBefore} enqueues; ${refused} refused while it was down; ` +
            `runs recorded: ${JSON.stringify(runs.rows[0])}`,
        );
        expect(runs.rows[0].jobs).toBe(JOBS);
      } finally {
        const exits = await Promise.all(fleet.map((p) => p.stop()));
        await tq.close();
        await db.drop().catch(() => undefined);
        for (const e of exits) expect(e.code).toBe(0);
      }
    },
    180_000,
  );
});
