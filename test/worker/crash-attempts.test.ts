/**
 * Issue 62, process level: what a SIGKILLed worker's jobs become once another worker's leader
 * reclaims them. A cancel requested before the crash survives it; jobs the dead worker had claimed
 * into its local queue but never started keep their attempt budget. Handler starts are counted from
 * the database (the fixture actors record each start before anything else).
 */
import { describe, expect, it } from 'vitest';

import { deaf, held } from '../fixtures/crash-actors.js';
import { useProcessFleet, FAST_RECLAIM_ENV, TEST_RUNS_TABLE } from '../helpers/process-fleet.js';
import { holdsFor, waitFor } from '../helpers/wait.js';

const fleet = useProcessFleet(
  'crash_attempts',
  { ...FAST_RECLAIM_ENV, TQ_FIXTURE_ACTORS: 'crash' },
  { test_runs: TEST_RUNS_TABLE },
);
const { start } = fleet;

/** Handler starts recorded for each job, by job id. */
async function startsOf(jobIds: readonly string[]): Promise<Map<string, { pid: number; attempt: number }[]>> {
  const { rows } = await fleet.db.pool.query<{ job_id: string; pid: number; attempt: number }>(
    `SELECT job_id, pid, attempt FROM "${fleet.db.schema}".test_runs WHERE job_id = ANY ($1::uuid[]) ORDER BY started_at`,
    [jobIds],
  );
  const out = new Map<string, { pid: number; attempt: number }[]>(jobIds.map((id) => [id, []]));
  for (const r of rows) out.get(r.job_id)!.push({ pid: r.pid, attempt: r.attempt });
  return out;
}

describe('a SIGKILLed worker’s jobs, reclaimed (issue 62)', () => {
  it('cancel then SIGKILL: the job ends cancelled and its handler never runs again', async () => {
    // The victim's graces are the longest its 4 s lease allows (their sum must stay below it): its
    // handler, deaf to the cancel, is still running (phase 1, nothing escalated for 2 s) when the
    // process is killed right after the request.
    const victim = start({
      TASKQ_QUEUES: 'cancel_crash',
      TASKQ_CANCELLATION_GRACE_PERIOD: '2',
      TASKQ_CLEANUP_GRACE_PERIOD: '1',
    });
    const { workerId: victimId, pid: victimPid } = await victim.ready;
    const job = await fleet.tq.enqueue(deaf, { ms: 600_000 });
    await waitFor(
      async () => (await startsOf([job.jobId])).get(job.jobId)!.length === 1,
      15_000,
      'the handler to start',
    );
    expect(await fleet.tq.cancel(job.jobId, 'stop')).toMatchObject({
      previousStatus: 'running',
      newStatus: 'running',
      cancellationInitiated: true,
    });
    const killedAt = Date.now();
    victim.proc.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    const row = await fleet.tq.getRow(job.jobId);
    expect(row).toMatchObject({ status: 'running', attempt: 1, cancelPhase: 1 });
    expect(row!.attempt).toBeLessThan(row!.maxAttempts);

    // The rescuer runs the same queue: had the job gone back to pending, it would run it again.
    const rescuer = start({ TASKQ_QUEUES: 'cancel_crash' });
    await rescuer.ready;

    // Lease (4 s) + the headroom of a job being cancelled (cancel grace + cleanup grace + 60 s).
    await waitFor(
      async () => (await fleet.tq.getRow(job.jobId))?.status !== 'running',
      120_000,
      'the reclaim',
    );
    const reclaimedMs = Date.now() - killedAt;
    const after = await fleet.tq.getRow(job.jobId);
    // A rescuer that had claimed the job again would have started its handler within its poll.
    await holdsFor(
      async () => (await startsOf([job.jobId])).get(job.jobId)!.length === 1,
      3000,
      'no second handler start',
    );
    const starts = (await startsOf([job.jobId])).get(job.jobId)!;
    const attempts = await job.attempts();
    console.log(
      `cancel then SIGKILL: reclaimed ${reclaimedMs} ms after the kill as ${after?.status}; ` +
        `handler starts ${starts.length} (pids ${starts.map((s) => s.pid).join(', ')}; victim ${victimPid}); ` +
        `attempts ${JSON.stringify(attempts.map((a) => [a.attempt, a.outcome]))}; attempt ${after?.attempt}/${after?.maxAttempts}`,
    );
    expect(after).toMatchObject({ status: 'cancelled', attempt: 1, lockedByWorker: null });
    expect(starts).toEqual([{ pid: victimPid, attempt: 1 }]);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.workerId])).toEqual([[1, 'crashed', victimId]]);
    expect((await job.events()).at(-1)?.detail).toMatchObject({
      from_state: 'running',
      to_state: 'cancelled',
      reason: 'lock_expired',
      worker_id: victimId,
    });
    await expect(job.wait({ timeout: '1s' })).rejects.toThrow();
    await rescuer.stop();
  }, 180_000);

  it('prefetch then SIGKILL: the jobs that never started keep their attempt budget', async () => {
    // Four one-attempt jobs wait before the victim starts: its first claim takes all four (two slots
    // and, before any handler has run, a prefetch of as many again).
    const jobs = await Promise.all([1, 2, 3, 4].map(() => fleet.tq.enqueue(held, { ms: 600_000 })));
    const ids = jobs.map((j) => j.jobId);
    const handle = (id: string) => jobs[ids.indexOf(id)]!;
    const victim = start({ TASKQ_QUEUES: 'prefetch_crash', TASKQ_MAX_CONCURRENCY: '2', TQ_HOLD: '1' });
    const { workerId: victimId, pid: victimPid } = await victim.ready;
    await waitFor(
      async () => {
        const rows = await Promise.all(ids.map((id) => fleet.tq.getRow(id)));
        const started = [...(await startsOf(ids)).values()].filter((s) => s.length > 0).length;
        return rows.every((r) => r?.status === 'running' && r.lockedByWorker === victimId) && started === 2;
      },
      15_000,
      'four jobs held by the victim, two of them started',
    );
    const before = await startsOf(ids);
    const startedIds = ids.filter((id) => before.get(id)!.length === 1);
    const waitingIds = ids.filter((id) => before.get(id)!.length === 0);
    expect(startedIds).toHaveLength(2);
    // How the database tells them apart (asserted at the end): only the started ones carry started_at.
    const startedAtBefore = new Map(
      await Promise.all(ids.map(async (id) => [id, (await fleet.tq.getRow(id))?.startedAt ?? null] as const)),
    );

    const rescuer = start({ TASKQ_QUEUES: 'prefetch_crash', TASKQ_MAX_CONCURRENCY: '2' });
    await rescuer.ready;
    const killedAt = Date.now();
    victim.proc.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');

    await waitFor(
      async () => {
        const rows = await Promise.all(ids.map((id) => fleet.tq.getRow(id)));
        return rows.every((r) => r?.status === 'crashed' || r?.status === 'succeeded');
      },
      60_000,
      'every job to end',
    );
    const recoveredMs = Date.now() - killedAt;
    const after = await startsOf(ids);
    const summary = await Promise.all(
      ids.map(async (id, i) => {
        const row = await fleet.tq.getRow(id);
        const attempts = await jobs[i]!.attempts();
        return {
          id: id.slice(-6),
          startedBeforeKill: startedIds.includes(id),
          startedAtBeforeKill: startedAtBefore.get(id) !== null,
          status: row?.status,
          attempt: `${row?.attempt}/${row?.maxAttempts}`,
          attempts: attempts.map((a) => `${a.attempt}:${a.outcome}`).join(' '),
          handlerStarts: after
            .get(id)!
            .map((s) => (s.pid === victimPid ? 'victim' : 'rescuer'))
            .join(' '),
        };
      }),
    );
    console.log(`prefetch then SIGKILL: all four ended ${recoveredMs} ms after the kill`);
    console.table(summary);

    for (const id of startedIds) {
      expect(await fleet.tq.getRow(id)).toMatchObject({ status: 'crashed', attempt: 1 });
      expect((await handle(id).attempts()).map((a) => [a.attempt, a.outcome])).toEqual([[1, 'crashed']]);
      expect(after.get(id)).toEqual([{ pid: victimPid, attempt: 1 }]);
    }
    for (const id of waitingIds) {
      // No attempt was used by the crash: the rescuer ran the job's one attempt.
      expect(await fleet.tq.getRow(id)).toMatchObject({ status: 'succeeded', attempt: 1 });
      expect((await handle(id).attempts()).map((a) => [a.attempt, a.outcome])).toEqual([[1, 'succeeded']]);
      expect(after.get(id)).toHaveLength(1);
      expect(after.get(id)![0]!.pid).not.toBe(victimPid);
      const reclaim = (await handle(id).events()).find((e) => e.detail.reason === 'lock_expired');
      expect(reclaim?.detail).toMatchObject({ to_state: 'pending', handler_started: false });
    }
    for (const id of ids) expect(startedAtBefore.get(id) !== null).toBe(startedIds.includes(id));
    await rescuer.stop();
  }, 120_000);
});
