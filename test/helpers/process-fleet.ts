import { afterAll, beforeAll } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { migratedSchema, TEST_DSN, type TestSchema } from './db.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';

/**
 * Worker settings (as `TASKQ_*` variables) that reclaim a dead worker's jobs within seconds: the
 * shortest lease the settings allow beside a 1 s heartbeat (lockLease ≥ 4 × heartbeatInterval),
 * 1 s sweeps and polls, short cancellation graces.
 */
export const FAST_RECLAIM_ENV: Readonly<Record<string, string>> = {
  TASKQ_HEARTBEAT_INTERVAL: '1',
  TASKQ_LOCK_LEASE: '4',
  TASKQ_SWEEP_INTERVAL: '1',
  TASKQ_CANCELLATION_GRACE_PERIOD: '1',
  TASKQ_CLEANUP_GRACE_PERIOD: '1',
  TASKQ_TERMINATION_GRACE_PERIOD: '10',
  TASKQ_NOTIFY_POLL_INTERVAL: '1',
};

/** The table the fleet fixtures' handlers record their runs in (`record_`, the crash actors). */
export const TEST_RUNS_TABLE =
  '(job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)';

/** A schema, a client on it and the worker processes a test file starts. */
export interface ProcessFleet {
  /** The file's migrated schema (set in `beforeAll`). */
  readonly db: TestSchema;
  /** A client on that schema (set in `beforeAll`). */
  readonly tq: TaskQ;
  /** Every worker process started, stopped in `afterAll` (a frozen one is continued first). */
  readonly procs: WorkerProcess[];
  /** Starts a worker process on the schema with the file's settings, `env` winning. */
  start(env?: Record<string, string>): WorkerProcess;
}

/**
 * Registers the `beforeAll` / `afterAll` of a process-level test file: a schema of its own with the
 * given tables (`name → column list`), a client, and the worker processes it starts with
 * `settings`, all stopped and dropped at the end.
 */
export function useProcessFleet(
  prefix: string,
  settings: Readonly<Record<string, string>>,
  tables: Record<string, string> = {},
): ProcessFleet {
  let db: TestSchema | undefined;
  let tq: TaskQ | undefined;
  const procs: WorkerProcess[] = [];
  beforeAll(async () => {
    db = await migratedSchema(prefix);
    for (const [name, columns] of Object.entries(tables))
      await db.pool.query(`CREATE TABLE "${db.schema}".${name} ${columns}`);
    tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  });
  afterAll(async () => {
    for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGCONT');
    await Promise.all(procs.map((p) => p.stop()));
    await tq?.close();
    await db?.drop();
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is set in beforeAll`);
    return value;
  };
  return {
    get db() {
      return ready(db, 'db');
    },
    get tq() {
      return ready(tq, 'tq');
    },
    procs,
    start(env = {}) {
      const p = startWorkerProcess(ready(db, 'db').schema, { ...settings, ...env });
      procs.push(p);
      return p;
    },
  };
}
