/**
 * Issue 62 §3, process-level: a maintenance leader frozen with SIGSTOP while another worker is
 * SIGKILLed. A third worker takes the lease over once it expires and its sweeps reclaim the killed
 * worker's jobs; on SIGCONT the old leader steps down without sweeping, and every reclaimed job
 * carries exactly one reclaim.
 *
 * The documented bound (docs/maintenance.md): a worker's jobs are reclaimed within
 * `lockLease + max(sweepInterval, heartbeatInterval)` (each loop jittered by up to 10 %) of the later
 * of its death and the leader's freeze. The figures are printed; the test asserts order and outcome.
 */
import { describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { crashy, fragile } from '../fixtures/fleet-actors.js';
import { useProcessFleet, TEST_RUNS_TABLE } from '../helpers/process-fleet.js';
import { holdsFor, waitFor } from '../helpers/wait.js';
import type { WorkerProcess } from '../helpers/worker-process.js';

const LOCK_LEASE_S = 4;
const HEARTBEAT_S = 1;
const SWEEP_S = 1;
const fast = {
  TASKQ_HEARTBEAT_INTERVAL: String(HEARTBEAT_S),
  TASKQ_LOCK_LEASE: String(LOCK_LEASE_S),
  TASKQ_SWEEP_INTERVAL: String(SWEEP_S),
  TASKQ_CANCELLATION_GRACE_PERIOD: '1',
  TASKQ_CLEANUP_GRACE_PERIOD: '1',
  TASKQ_TERMINATION_GRACE_PERIOD: '10',
  TASKQ_NOTIFY_POLL_INTERVAL: '1',
};

const fleet = useProcessFleet('freeze', fast, { test_runs: TEST_RUNS_TABLE });
const { start } = fleet;

const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<R[]> =>
  (await fleet.db.pool.query<R>(sql.replaceAll('$S', `"${fleet.db.schema}"`), values)).rows;

/** The database clock, now. */
const dbNow = async (): Promise<Date> => (await q<{ now: Date }>(`SELECT clock_timestamp() AS now`))[0]!.now;

/** The leader row as a JSON object (its columns differ before and after migration 0003). */
const leaderRow = async (): Promise<Record<string, unknown> | null> =>
  (await q<{ row: Record<string, unknown> }>(`SELECT to_jsonb(l) AS row FROM $S.maintenance_leader l`))[0]
    ?.row ?? null;

/** Log lines of a worker process with the given message. */
const logged = (p: WorkerProcess, msg: string): Record<string, unknown>[] =>
  p.stdout
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return {};
      }
    })
    .filter((o) => o.msg === msg);

describe('a frozen maintenance leader', () => {
  it('loses its lease; another worker reclaims a killed worker’s jobs; on SIGCONT the old leader steps down and no sweep runs twice', async () => {
    // A leads and runs nothing of the 'crash' queue; B runs the jobs; C stands by.
    const a = start({ TASKQ_QUEUES: 'fleet' });
    const { workerId: aId } = await a.ready;
    await waitFor(async () => (await leaderRow())?.worker_id === aId, 15_000, 'A to lead');
    const b = start({ TASKQ_QUEUES: 'crash', TASKQ_MAX_CONCURRENCY: '8' });
    const { workerId: bId } = await b.ready;
    const retried = await Promise.all([1, 2, 3].map(() => fleet.tq.enqueue(crashy, { ms: 120_000 })));
    const lost = await fleet.tq.enqueue(fragile, { ms: 120_000 });
    const jobIds = [...retried.map((h) => h.jobId), lost.jobId];
    await waitFor(
      async () =>
        (await q(`SELECT 1 FROM $S.jobs WHERE status = 'running' AND locked_by_worker = $1`, [bId]))
          .length === 4,
      15_000,
      'B to run the four jobs',
    );
    const c = start({ TASKQ_QUEUES: 'crash,fleet', TASKQ_MAX_CONCURRENCY: '8' });
    const { workerId: cId } = await c.ready;
    const before = await leaderRow();
    expect(before?.worker_id).toBe(aId);
    const termA = String(before?.term);

    a.proc.kill('SIGSTOP');
    const frozenAt = await dbNow();
    b.proc.kill('SIGKILL');
    expect((await b.exited).signal).toBe('SIGKILL');
    const killedAt = await dbNow();

    // C takes the lease over and its sweeps reclaim B's four jobs (generous timeout: the bound is
    // about 5 s; on the advisory-lock-only leader this never happens while A stays frozen).
    const reclaims = (): Promise<{ job_id: string; occurred_at: Date; to_state: string }[]> =>
      q(
        `SELECT job_id, occurred_at, detail ->> 'to_state' AS to_state FROM $S.job_events
         WHERE kind = 'state_change' AND detail ->> 'reason' = 'lock_expired' ORDER BY id`,
      );
    await waitFor(async () => (await reclaims()).length >= 4, 40_000, 'B’s four jobs to be reclaimed');
    const events = await reclaims();
    const lease = await leaderRow();
    const lastReclaim = Math.max(...events.map((e) => new Date(e.occurred_at).getTime()));
    const bound = (LOCK_LEASE_S + Math.max(SWEEP_S, HEARTBEAT_S)) * 1000;
    console.log(
      `leader frozen → lease taken over by the third worker: ${new Date(String(lease?.acquired_at)).getTime() - frozenAt.getTime()} ms; ` +
        `SIGKILL → last of 4 jobs reclaimed: ${lastReclaim - killedAt.getTime()} ms ` +
        `(documented bound lockLease + max(sweepInterval, heartbeatInterval) = ${bound} ms, +10 % jitter; ` +
        `lockLease ${LOCK_LEASE_S} s, heartbeat ${HEARTBEAT_S} s, sweep ${SWEEP_S} s; database clock)`,
    );
    expect(lease).toMatchObject({ worker_id: cId });
    const termC = String(lease?.term);
    expect(BigInt(termC)).toBeGreaterThan(BigInt(termA));
    // Order: every reclaim happened under C's term, after it took over.
    for (const e of events)
      expect(new Date(e.occurred_at).getTime()).toBeGreaterThanOrEqual(
        new Date(String(lease?.acquired_at)).getTime(),
      );
    expect(events.map((e) => e.job_id).sort()).toEqual([...jobIds].sort());

    // SIGCONT: A notices that its lease is gone and steps down, without sweeping.
    a.proc.kill('SIGCONT');
    await waitFor(() => logged(a, 'leader-stepped-down').length > 0, 15_000, 'A to step down');
    const stepDown = logged(a, 'leader-stepped-down')[0]!;
    console.log(`old leader on SIGCONT: ${JSON.stringify({ term: stepDown.term, reason: stepDown.reason })}`);
    expect(stepDown.term).toBe(termA);
    // A resumed: for a few of its ticks and sweeps, nothing is reclaimed again and C keeps its term.
    await holdsFor(
      async () => (await reclaims()).length === 4 && (await leaderRow())?.term === lease?.term,
      3 * SWEEP_S * 1000,
      'one reclaim per job and C’s lease',
    );
    expect(logged(a, 'expired-leases-reclaimed')).toEqual([]);
    expect(logged(c, 'expired-leases-reclaimed').length).toBeGreaterThan(0);
    expect(await leaderRow()).toMatchObject({ worker_id: cId, term: lease?.term });

    // No sweep ran twice: each job has one reclaim event and one crashed attempt.
    for (const id of jobIds) {
      expect(events.filter((e) => e.job_id === id)).toHaveLength(1);
      const crashed = await q(`SELECT 1 FROM $S.job_attempts WHERE job_id = $1 AND outcome = 'crashed'`, [
        id,
      ]);
      expect(crashed).toHaveLength(1);
    }
    // And A's term is refused by the backend itself.
    const backend = new PostgresBackend(fleet.db.driver, { schema: fleet.db.schema });
    const refused = await backend.reclaimExpiredLocks(0, 0, 10, { workerId: aId, term: termA }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ code: 'TASKQ_LEADERSHIP_LOST', term: termA });

    // The reclaimed jobs ran again on C (attempt 2), the one-attempt job ended crashed.
    for (const h of retried) expect(await h.wait({ timeout: '30s' })).toEqual({ attempt: 2 });
    expect((await fleet.tq.getRow(lost.jobId))?.status).toBe('crashed');
    await Promise.all([a.stop(), c.stop()]);
  }, 120_000);
});
