/**
 * Cancellation that reaches running handlers, with a real worker process: the cooperative path
 * over NOTIFY, escalation and abandonment of a handler that ignores its signal, a thread-isolated
 * busy loop really stopped in phase 2, a worker killed mid-cancel, bulk cancel, heartbeat timeouts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { batchItem } from '../../src/client/batch-items.js';
import { JobFailed } from '../../src/errors/index.js';
import {
  cooperative,
  fragile,
  heartbeater,
  ignorant,
  politeSpinner,
  record_,
  spinner,
} from '../fixtures/fleet-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let db: TestSchema;
let tq: TaskQ;
let worker: WorkerProcess;
let workerId: string;

const env = {
  TASKQ_QUEUES: 'cancel',
  TASKQ_MAX_CONCURRENCY: '8',
  TASKQ_PREFETCH: '0',
  TASKQ_HEARTBEAT_INTERVAL: '1',
  TASKQ_LOCK_LEASE: '6',
  TASKQ_CANCELLATION_GRACE_PERIOD: '1',
  TASKQ_CLEANUP_GRACE_PERIOD: '1',
  TASKQ_TERMINATION_GRACE_PERIOD: '10',
  TASKQ_SWEEP_INTERVAL: '1',
  TASKQ_LOG_LEVEL: 'info',
};

const running = async (id: string): Promise<void> =>
  waitFor(async () => (await tq.getRow(id))?.status === 'running', 10_000, `job ${id} to run`);

/**
 * When each event of job `id` was stamped (`occurred_at`, the database clock, in epoch ms with
 * microseconds), by its kind (a state change by its reason).
 */
async function eventTimes(id: string): Promise<Map<string, number>> {
  const { rows } = await db.pool.query<{ what: string; ms: number }>(
    `SELECT CASE kind WHEN 'state_change' THEN detail ->> 'reason' ELSE kind END AS what, (extract(epoch FROM occurred_at) * 1000)::float8 AS ms
       FROM "${db.schema}".job_events WHERE job_id = $1 ORDER BY id`,
    [id],
  );
  return new Map(rows.map((r) => [r.what, r.ms]));
}

/**
 * The worker times a grace on its monotonic clock from when it saw the cancel (after the request
 * was stamped) and the database stamps the next event after it: the gap between the two stamps is
 * at least the grace, but for the drift between the monotonic and the wall clock.
 */
const CLOCK_SLACK_MS = 5;

beforeAll(async () => {
  db = await migratedSchema('cancel');
  await db.pool.query(
    `CREATE TABLE "${db.schema}".test_runs (job_id uuid, actor text, identity_key text, pid int, attempt int, started_at timestamptz, finished_at timestamptz)`,
  );
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = startWorkerProcess(db.schema, env);
  ({ workerId } = await worker.ready);
});
afterAll(async () => {
  await worker.stop();
  await tq.close();
  await db.drop();
});

describe('cancelling running jobs', () => {
  it('a handler that honours ctx.signal ends cancelled within milliseconds (NOTIFY path)', async () => {
    const h = await tq.enqueue(cooperative, { ms: 60_000 });
    await running(h.jobId);
    const t0 = performance.now();
    const result = await h.cancel('changed my mind');
    expect(result).toMatchObject({ previousStatus: 'running', cancellationInitiated: true });
    // newStatus is read after the request commits: a handler this quick may have ended already.
    expect(['running', 'cancelled']).toContain(result.newStatus);
    await expect(h.wait({ timeout: '10s' })).rejects.toBeInstanceOf(JobFailed);
    const ms = performance.now() - t0;
    console.log(`cancel() to cancelled (cooperative, NOTIFY): ${ms.toFixed(1)} ms`);
    expect(h.row.status).toBe('cancelled');
    expect((await h.attempts()).map((a) => a.outcome)).toEqual(['cancelled']);
    // The cancel reached the handler through the NOTIFY, not the heartbeat's poll (which would
    // also get there, a heartbeat interval later): the worker logs how it learnt of it.
    await waitFor(
      () => worker.stdout.some((l) => l.includes('cancel-phase-1-cooperative') && l.includes(h.jobId)),
      5_000,
      'the phase-1 log line',
    );
    const seen = worker.stdout.find((l) => l.includes('cancel-phase-1-cooperative') && l.includes(h.jobId))!;
    expect(JSON.parse(seen)).toMatchObject({ jobId: h.jobId, via: 'notify' });
  });

  it('escalates a handler that ignores its signal to phase 2, then abandons it after the graces', async () => {
    const h = await tq.enqueue(ignorant, { ms: 60_000 });
    await running(h.jobId);
    await h.cancel();
    await waitFor(async () => (await tq.getRow(h.jobId))?.cancelPhase === 2, 10_000, 'phase 2');
    await waitFor(async () => (await tq.getRow(h.jobId))?.status === 'abandoned', 10_000, 'abandonment');
    // The graces are the feature: neither may be cut short. Read on the stamps the database wrote.
    const at = await eventTimes(h.jobId);
    const escalatedAfter = at.get('cancel_escalated')! - at.get('cancel_request')!;
    const abandonedAfter = at.get('cancel_abandoned')! - at.get('cancel_request')!;
    console.log(
      `ignored cancel: phase 2 after ${escalatedAfter.toFixed(0)} ms, abandoned after ${abandonedAfter.toFixed(0)} ms (graces 1 s + 1 s)`,
    );
    expect(escalatedAfter).toBeGreaterThanOrEqual(1000 - CLOCK_SLACK_MS);
    expect(abandonedAfter).toBeGreaterThanOrEqual(2000 - CLOCK_SLACK_MS);
    const events = await h.events();
    expect(events.map((e) => [e.kind, e.detail.reason ?? null])).toEqual([
      ['state_change', 'dispatched'],
      ['cancel_request', null],
      ['state_change', 'cancel_escalated'],
      ['state_change', 'cancel_abandoned'],
    ]);
    expect((await h.attempts()).map((a) => a.outcome)).toEqual(['abandoned']);
    expect(await tq.getRow(h.jobId)).toMatchObject({
      status: 'abandoned',
      errorClass: 'Abandoned',
      lockedByWorker: null,
    });
    // The slot was freed: the worker still runs new jobs.
    const next = await tq.enqueue(record_, { ms: 1 }, { queue: 'cancel' });
    await next.wait({ timeout: '10s' });
  });

  it('really stops a thread-isolated busy loop in phase 2', async () => {
    const h = await tq.enqueue(spinner, { ms: 120_000 });
    await running(h.jobId);
    await h.cancel();
    await expect(h.wait({ timeout: '10s' })).rejects.toBeInstanceOf(JobFailed);
    expect(h.row.status).toBe('cancelled');
    // Deaf to phase 1, the loop ran on until the escalation, and ended there: cancelled, not abandoned.
    expect((await h.events()).map((e) => e.detail.reason ?? e.kind)).toEqual([
      'dispatched',
      'cancel_request',
      'cancel_escalated',
      'cancelled',
    ]);
    const at = await eventTimes(h.jobId);
    console.log(
      `thread busy loop stopped by phase 2 after ${(at.get('cancelled')! - at.get('cancel_request')!).toFixed(0)} ms (cancellation grace 1 s)`,
    );
    expect(at.get('cancel_escalated')! - at.get('cancel_request')!).toBeGreaterThanOrEqual(
      1000 - CLOCK_SLACK_MS,
    );
    expect((await h.attempts()).map((a) => a.outcome)).toEqual(['cancelled']);
    // A thread that polls ctx.shouldAbort() stops at phase 1.
    const p = await tq.enqueue(politeSpinner, { ms: 120_000 });
    // Wait for the handler itself, not only the claim: a thread that has not started polling yet
    // (a fresh thread after the termination above, on a loaded machine) would look deaf.
    await waitFor(
      async () => (await tq.getRow(p.jobId))?.progressState.step === 'spinning',
      10_000,
      'the polite spinner to report progress',
    );
    const t1 = Date.now();
    await p.cancel();
    await expect(p.wait({ timeout: '10s' })).rejects.toBeInstanceOf(JobFailed);
    expect(p.row.status).toBe('cancelled');
    // It stopped itself through ctx.shouldAbort() in phase 1: no escalation was needed.
    expect((await p.attempts()).map((a) => a.outcome)).toEqual(['cancelled']);
    expect((await p.events()).map((e) => e.detail.reason ?? e.kind)).not.toContain('cancel_escalated');
    console.log(`thread polling shouldAbort() stopped after ${Date.now() - t1} ms`);
  });

  it('fails an attempt that stops heartbeating, and hands its last details to the next attempt', async () => {
    const h = await tq.enqueue(heartbeater, {});
    expect(await h.wait({ timeout: '15s' })).toEqual({ resumedFrom: { offset: 30 } });
    const attempts = await h.attempts();
    expect(attempts.map((a) => [a.outcome, a.errorClass])).toEqual([
      ['failed', 'HeartbeatTimeout'],
      ['succeeded', null],
    ]);
  });
});

describe('bulk cancel', () => {
  it('cancels 10,000 mixed jobs (pending, scheduled, running on two workers) in one set-based call', async () => {
    const second = startWorkerProcess(db.schema, { ...env, TASKQ_MAX_CONCURRENCY: '10' });
    await second.ready;
    try {
      const items = [
        ...Array.from({ length: 5000 }, () => batchItem(cooperative, { ms: 60_000 }, { tags: ['bulk'] })),
        ...Array.from({ length: 5000 }, () =>
          batchItem(cooperative, { ms: 60_000 }, { tags: ['bulk'], delay: '1h' }),
        ),
      ];
      for (let i = 0; i < items.length; i += 1000) await tq.enqueueBatch(items.slice(i, i + 1000));
      await waitFor(
        async () => (await tq.list({ status: 'running', tags: ['bulk'], limit: 100 })).jobs.length === 18,
        15_000,
        '18 running jobs',
      );
      const t0 = performance.now();
      const result = await tq.cancelWhere({ tags: ['bulk'] }, 'bulk cleanup');
      console.log(`cancelWhere over 10,000 jobs: ${(performance.now() - t0).toFixed(0)} ms`);
      expect(result.totalAffected).toBe(10_000);
      expect(result.cancelRequested).toBe(18);
      expect(result.cancelledDirectly).toBe(10_000 - 18);
      const counts = await db.pool.query(
        `SELECT status::text, cancel_phase, count(*)::int AS n FROM "${db.schema}".jobs WHERE tags @> '{bulk}' GROUP BY 1, 2 ORDER BY 1, 2`,
      );
      const by = Object.fromEntries(
        counts.rows.map((r: { status: string; cancel_phase: number; n: number }) => [
          `${r.status}/${r.cancel_phase}`,
          r.n,
        ]),
      );
      expect(by['cancelled/0']).toBe(result.cancelledDirectly);
      expect((by['running/1'] ?? 0) + (by['cancelled/1'] ?? 0)).toBe(18);
      await waitFor(
        async () => (await tq.countActiveJobs(['cancel'])) === 0,
        15_000,
        'the running ones to stop',
      );
      const final = await db.pool.query(
        `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE tags @> '{bulk}' AND status = 'cancelled'`,
      );
      expect(final.rows[0].n).toBe(10_000);
    } finally {
      await second.stop();
    }
  });
});

describe('a worker killed mid-cancel', () => {
  it('is reclaimed after the cancel headroom: cancelled when no attempts remain', async () => {
    const victim = startWorkerProcess(db.schema, { ...env, TASKQ_QUEUES: 'crash' });
    await victim.ready;
    const h = await tq.enqueue(fragile, { ms: 120_000 });
    await running(h.jobId);
    // The worker dies first and the cancel lands on its orphaned job: killed after the cancel, a
    // worker that is quick to write outcomes could still honour it (the attempt would read
    // 'cancelled', not 'crashed'). The database holds the same state either way.
    victim.proc.kill('SIGKILL');
    await victim.exited;
    await h.cancel();
    // The lease expired long ago as far as the database knows (cancel headroom: graces + 60 s).
    await db.pool.query(
      `UPDATE "${db.schema}".jobs SET lock_expires_at = lock_expires_at - interval '70 seconds' WHERE id = $1`,
      [h.jobId],
    );
    await waitFor(async () => (await tq.getRow(h.jobId))?.status === 'cancelled', 15_000, 'the reclaim');
    expect((await h.attempts()).map((a) => a.outcome)).toEqual(['crashed']);
    const last = (await h.events()).at(-1);
    expect(last?.detail).toMatchObject({
      from_state: 'running',
      to_state: 'cancelled',
      reason: 'lock_expired',
    });
    expect(workerId).not.toBe(last?.detail.worker_id);
  });
});
