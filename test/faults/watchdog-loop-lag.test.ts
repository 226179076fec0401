/**
 * The event-loop lag watchdog, process level (issue 62's acceptance): a worker whose handler blocks
 * the event loop far past `watchdogLoopLagBudget` exits with code 2 and a dump before the lease of
 * its job expires, and the job then runs once more, on another worker, to completion — the side
 * effect written after the block exists exactly once.
 */
import { describe, expect, it } from 'vitest';

import { stall } from '../fixtures/watchdog-actors.js';
import { useProcessFleet } from '../helpers/process-fleet.js';
import { waitFor } from '../helpers/wait.js';

/** Lease 8 s, heartbeat 1 s: the lag budget (3 s) + the heartbeat interval leaves 4 s of lease. */
const settings = {
  TQ_FIXTURE_ACTORS: 'watchdog',
  TASKQ_QUEUES: 'watchdog',
  TASKQ_WATCHDOG_ENABLED: 'true',
  TASKQ_WATCHDOG_LOOP_LAG_BUDGET: '3',
  TASKQ_WATCHDOG_LOOP_LAG_WARN_BUDGET: '1',
  TASKQ_WATCHDOG_CHECK_INTERVAL: '0.25',
  TASKQ_HEARTBEAT_INTERVAL: '1',
  TASKQ_LOCK_LEASE: '8',
  TASKQ_SWEEP_INTERVAL: '1',
  TASKQ_CANCELLATION_GRACE_PERIOD: '2',
  TASKQ_CLEANUP_GRACE_PERIOD: '1',
  TASKQ_TERMINATION_GRACE_PERIOD: '15',
  TASKQ_NOTIFY_POLL_INTERVAL: '1',
};

const fleet = useProcessFleet('watchdog_lag', settings, {
  watchdog_runs: '(job_id uuid, pid int, step text, at timestamptz)',
});
const { start } = fleet;

describe('watchdog: event-loop lag', () => {
  it('ends a worker whose loop is blocked past the budget with exit 2 and a dump before its lease expires; another worker runs the job once', async () => {
    const stalled = start({ TQ_STALL_MS: '60000' });
    const { workerId: stalledId, pid: stalledPid } = await stalled.ready;
    const handle = await fleet.tq.enqueue(stall, {});
    await waitFor(
      async () =>
        (
          await fleet.db.pool.query(
            `SELECT 1 FROM "${fleet.db.schema}".watchdog_runs WHERE job_id = $1 AND pid = $2 AND step = 'started'`,
            [handle.jobId, stalledPid],
          )
        ).rowCount === 1,
      15_000,
      'the handler to start on the stalling worker',
    );

    const exit = await Promise.race([
      stalled.exited,
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 45_000).unref()),
    ]);
    // Read the lease on the database clock the moment the exit is seen: a later read only shortens it.
    const { rows } = await fleet.db.pool.query<{
      status: string;
      locked_by_worker: string | null;
      lease_left_ms: number;
      blocked_ms: number;
      heartbeat_to_exit_ms: number;
    }>(
      `SELECT j.status, j.locked_by_worker,
              (extract(epoch FROM j.lock_expires_at - clock_timestamp()) * 1000)::float8 AS lease_left_ms,
              (extract(epoch FROM clock_timestamp() - r.at) * 1000)::float8 AS blocked_ms,
              (extract(epoch FROM clock_timestamp() - j.last_heartbeat_at) * 1000)::float8 AS heartbeat_to_exit_ms
         FROM "${fleet.db.schema}".jobs j
         JOIN "${fleet.db.schema}".watchdog_runs r ON r.job_id = j.id AND r.step = 'started' AND r.pid = $2
        WHERE j.id = $1`,
      [handle.jobId, stalledPid],
    );
    const atExit = rows[0]!;
    const stderr = stalled.stderr.join('');
    const pauseMs = /trip \(loop-lag\)[^]*?paused by the inspector in (\d+) ms/.exec(stderr)?.[1];
    const tripRecord = stalled.stdout
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return null;
        }
      })
      .find((r) => r?.msg === 'watchdog-trip');
    console.log(
      `[watchdog loop-lag] exit ${JSON.stringify(exit)}; handler start → exit seen: ${Math.round(atExit.blocked_ms)} ms ` +
        `(budget 3000 ms); lease left at exit: ${Math.round(atExit.lease_left_ms)} ms of 8000; ` +
        `last heartbeat → exit: ${Math.round(atExit.heartbeat_to_exit_ms)} ms; inspector pause: ${pauseMs} ms`,
    );

    expect(exit).toEqual({ code: 2, signal: null });
    // Gone before its lease expired: the job is still this worker's, on a lease that is still valid.
    expect(atExit.status).toBe('running');
    expect(atExit.locked_by_worker).toBe(stalledId);
    expect(atExit.lease_left_ms).toBeGreaterThan(0);
    // The dump: the blocked main thread's stack, with the busy loop on top; the critical record.
    expect(stderr).toContain('taskq watchdog trip (loop-lag)');
    // spinFor on top, or under a frame it called (performance.now's internals).
    expect(stderr).toMatch(
      /main thread stack \(paused by the inspector in \d+ ms\):\n(?:\s+at .*\n){0,3}\s+at spinFor \(/,
    );
    expect(tripRecord).toMatchObject({ level: 60, detector: 'loop-lag', budgetMs: 3000 });
    expect(tripRecord!.lagMs as number).toBeGreaterThanOrEqual(3000);

    // Another worker reclaims the job once the lease expires and runs it to completion.
    const rescuer = start({});
    const { pid: rescuerPid } = await rescuer.ready;
    await waitFor(
      async () => (await handle.status()) === 'succeeded',
      30_000,
      'the job to succeed on the other worker',
    );
    const runs = await fleet.db.pool.query<{ pid: number; step: string }>(
      `SELECT pid, step FROM "${fleet.db.schema}".watchdog_runs WHERE job_id = $1 ORDER BY at`,
      [handle.jobId],
    );
    const sideEffects = runs.rows.filter((r) => r.step === 'side-effect');
    console.log(
      `[watchdog loop-lag] runs: ${runs.rows.map((r) => `${r.step}@${r.pid === stalledPid ? 'stalled' : 'rescuer'}`).join(', ')}; ` +
        `side effects: ${sideEffects.length}`,
    );
    expect(sideEffects).toEqual([{ pid: rescuerPid, step: 'side-effect' }]);
    expect(runs.rows.filter((r) => r.step === 'started').map((r) => r.pid)).toEqual([stalledPid, rescuerPid]);
    await rescuer.stop();
  }, 120_000);

  it('kills a worker blocked inside a native call (no inspector answer) with SIGKILL, after writing the dump, before its lease expires', async () => {
    const stalled = start({ TQ_STALL_MS: '20000', TQ_STALL_KIND: 'native' });
    const { pid: stalledPid } = await stalled.ready;
    const handle = await fleet.tq.enqueue(stall, {});
    const exit = await Promise.race([
      stalled.exited,
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 45_000).unref()),
    ]);
    const { rows } = await fleet.db.pool.query<{ status: string; lease_left_ms: number; blocked_ms: number }>(
      `SELECT j.status,
              (extract(epoch FROM j.lock_expires_at - clock_timestamp()) * 1000)::float8 AS lease_left_ms,
              (extract(epoch FROM clock_timestamp() - r.at) * 1000)::float8 AS blocked_ms
         FROM "${fleet.db.schema}".jobs j
         JOIN "${fleet.db.schema}".watchdog_runs r ON r.job_id = j.id AND r.step = 'started' AND r.pid = $2
        WHERE j.id = $1`,
      [handle.jobId, stalledPid],
    );
    const atExit = rows[0]!;
    const stderr = stalled.stderr.join('');
    console.log(
      `[watchdog loop-lag, native] exit ${JSON.stringify(exit)}; handler start → exit seen: ` +
        `${Math.round(atExit.blocked_ms)} ms (budget 3000 ms + 1000 ms for the inspector); ` +
        `lease left at exit: ${Math.round(atExit.lease_left_ms)} ms of 8000`,
    );
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(atExit.status).toBe('running');
    expect(atExit.lease_left_ms).toBeGreaterThan(0);
    expect(stderr).toContain('taskq watchdog trip (loop-lag)');
    expect(stderr).toContain('main thread stack: none');
    expect(stderr).toMatch(/"detector":"loop-lag".*"exit":"SIGKILL".*"msg":"watchdog-trip"/);
  }, 120_000);
});
