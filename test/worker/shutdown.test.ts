/**
 * Graceful shutdown of a real worker process: SIGTERM while jobs run and more are claimed.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { polite, spinner, stubborn } from '../fixtures/fleet-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess } from '../helpers/worker-process.js';

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('shut');
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query(`TRUNCATE "${db.schema}".jobs, "${db.schema}".test_runs CASCADE`);
});

const runningCount = async (): Promise<number> =>
  (await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status = 'running'`)).rows[0]
    .n as number;

describe('worker shutdown (SIGTERM)', () => {
  it('finishes what fits in the grace, aborts the rest, re-pends claimed-but-unstarted jobs, abandons a handler that ignores it all, and exits 0', async () => {
    const quick = await tq.enqueue(polite, { ms: 100 }, { priority: 10 });
    const long = await tq.enqueue(polite, { ms: 60_000 }, { priority: 9 });
    const ignores = await tq.enqueue(stubborn, { ms: 60_000 }, { priority: 8 });
    const buffered = await Promise.all(
      [1, 2, 3].map(() => tq.enqueue(polite, { ms: 60_000 }, { priority: 1 })),
    );
    const w = startWorkerProcess(db.schema, {
      TASKQ_QUEUES: 'shutdown',
      TASKQ_MAX_CONCURRENCY: '3',
      TASKQ_PREFETCH: '3',
      TASKQ_CANCELLATION_GRACE_PERIOD: '2',
      TASKQ_CLEANUP_GRACE_PERIOD: '1',
      TASKQ_TERMINATION_GRACE_PERIOD: '10',
      TASKQ_HEARTBEAT_INTERVAL: '1',
      TASKQ_LOCK_LEASE: '30',
      TASKQ_LOG_LEVEL: 'info',
    });
    await w.ready;
    await waitFor(async () => (await runningCount()) >= 5, 10_000, 'claimed jobs');
    const t0 = Date.now();
    w.proc.kill('SIGTERM');
    const exit = await w.exited;
    console.log(`SIGTERM to exit: ${Date.now() - t0} ms`);
    expect(exit.code).toBe(0);

    expect(await tq.getRow(quick.jobId)).toMatchObject({ status: 'succeeded', attempt: 1 });
    for (const b of buffered) {
      const row = await tq.getRow(b.jobId);
      expect(row).toMatchObject({ status: 'pending', attempt: 0, lockedByWorker: null });
      expect((await b.events()).at(-1)?.detail).toMatchObject({ to_state: 'pending', reason: 'drained' });
    }
    const politeRow = await tq.getRow(long.jobId);
    expect(politeRow).toMatchObject({ status: 'pending', attempt: 0 });
    expect((await long.attempts()).map((a) => a.outcome)).toEqual(['interrupted']);
    // An in-process handler that ignores its signal through both graces cannot be stopped, so it is
    // not re-pended (it could still be running): FORCING records phase 2, ABANDONING ends it.
    const stubbornRow = await tq.getRow(ignores.jobId);
    expect(stubbornRow).toMatchObject({
      status: 'abandoned',
      attempt: 1,
      cancelPhase: 2,
      errorClass: 'Abandoned',
    });
    expect(stubbornRow?.cancelRequestedAt).toBeNull();
    expect((await ignores.attempts()).map((a) => a.outcome)).toEqual(['abandoned']);
    const reasons = (await ignores.events()).map((e) => e.detail.reason);
    expect(reasons.slice(-2)).toEqual(['shutdown_escalated', 'shutdown_abandoned']);
    const log = w.stdout.join('\n');
    expect(log.indexOf('worker-forcing')).toBeGreaterThan(-1);
    expect(log.indexOf('shutdown-abandoned')).toBeGreaterThan(log.indexOf('worker-forcing'));
  });

  it('terminates a thread-isolated handler that ignores the shutdown and re-pends its job', async () => {
    // A thread can really be stopped, so nothing of it can still be running: the job goes back.
    const h = await tq.enqueue(spinner, { ms: 60_000 });
    const w = startWorkerProcess(db.schema, {
      TASKQ_QUEUES: 'cancel',
      TASKQ_CANCELLATION_GRACE_PERIOD: '1',
      TASKQ_CLEANUP_GRACE_PERIOD: '1',
      TASKQ_TERMINATION_GRACE_PERIOD: '10',
      TASKQ_HEARTBEAT_INTERVAL: '1',
      TASKQ_LOCK_LEASE: '30',
      TASKQ_LOG_LEVEL: 'info',
    });
    await w.ready;
    await waitFor(async () => (await runningCount()) === 1, 10_000, 'the spinner running');
    w.proc.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    expect(await tq.getRow(h.jobId)).toMatchObject({ status: 'pending', attempt: 0, lockedByWorker: null });
    expect((await h.attempts()).map((a) => [a.outcome, a.errorClass])).toEqual([
      ['interrupted', 'WorkerShutdown'],
    ]);
    expect(w.stdout.join('\n')).toContain('thread-terminated-at-shutdown');
  });

  it('a second signal skips the rest of the grace; a third exits 1', async () => {
    // A handler that would run 10 minutes and graces of 5 minutes each: a worker that exits within
    // the test did not sit out the grace.
    const job = await tq.enqueue(polite, { ms: 600_000 });
    const w = startWorkerProcess(db.schema, {
      TASKQ_QUEUES: 'shutdown',
      TASKQ_CANCELLATION_GRACE_PERIOD: '300',
      TASKQ_CLEANUP_GRACE_PERIOD: '300',
      TASKQ_LOCK_LEASE: '700',
      TASKQ_TERMINATION_GRACE_PERIOD: '700',
      TASKQ_LOG_LEVEL: 'info',
    });
    await w.ready;
    await waitFor(async () => (await runningCount()) === 1, 10_000, 'a running job');
    w.proc.kill('SIGTERM');
    await waitFor(() => w.stdout.some((l) => l.includes('worker-draining')), 10_000, 'draining');
    w.proc.kill('SIGTERM');
    const exit = await w.exited;
    expect(exit.code).toBe(0);
    // The handler was signalled at once and stopped: its job goes back, not left to run out the grace.
    expect((await job.attempts()).map((a) => a.outcome)).toEqual(['interrupted']);

    await tq.enqueue(stubborn, { ms: 60_000 });
    const w2 = startWorkerProcess(db.schema, {
      TASKQ_QUEUES: 'shutdown',
      TASKQ_CANCELLATION_GRACE_PERIOD: '25',
      TASKQ_CLEANUP_GRACE_PERIOD: '20',
      TASKQ_TERMINATION_GRACE_PERIOD: '60',
      TASKQ_LOG_LEVEL: 'info',
    });
    await w2.ready;
    await waitFor(async () => (await runningCount()) >= 1, 10_000, 'a running job');
    w2.proc.kill('SIGTERM');
    await waitFor(() => w2.stdout.some((l) => l.includes('worker-draining')), 10_000, 'draining');
    w2.proc.kill('SIGTERM');
    await waitFor(() => w2.stdout.some((l) => l.includes('"count":2')), 10_000, 'second signal');
    w2.proc.kill('SIGTERM');
    expect((await w2.exited).code).toBe(1);
  });
});
