/**
 * Process-level crash recovery: a worker killed with SIGKILL, its jobs reclaimed by another
 * worker's leader and reported on the reclaim feed; leader failover.
 */
import { describe, expect, it } from 'vitest';

import type { EventRow } from '../../src/backend/types.js';
import { crashy, fragile, record_ } from '../fixtures/fleet-actors.js';
import { useProcessFleet, FAST_RECLAIM_ENV, TEST_RUNS_TABLE } from '../helpers/process-fleet.js';
import { holdsFor, waitFor } from '../helpers/wait.js';

const fleet = useProcessFleet('crash', FAST_RECLAIM_ENV, { test_runs: TEST_RUNS_TABLE });
const { start } = fleet;

const leaderRow = async (): Promise<string | null> =>
  ((await fleet.db.pool.query(`SELECT worker_id FROM "${fleet.db.schema}".maintenance_leader`)).rows[0]
    ?.worker_id as string | undefined) ?? null;

describe('crash recovery', () => {
  it('reclaims a SIGKILLed worker’s jobs: retried when attempts remain, crashed otherwise, each reported once on the feed', async () => {
    const retried = await Promise.all([1, 2, 3].map(() => fleet.tq.enqueue(crashy, { ms: 120_000 })));
    const lost = await fleet.tq.enqueue(fragile, { ms: 120_000 });
    const victim = start({ TASKQ_QUEUES: 'crash', TASKQ_MAX_CONCURRENCY: '8' });
    const { workerId: victimId } = await victim.ready;
    await waitFor(
      async () =>
        (await fleet.tq.countActiveJobs(['crash'])) === 4 &&
        (await fleet.tq.list({ status: 'running', limit: 10 })).jobs.length === 4,
      10_000,
      'four running jobs',
    );

    const seen: EventRow[] = [];
    const controller = new AbortController();
    const watching = (async () => {
      for await (const e of fleet.tq.watchReclaims({
        afterId: '0',
        visibilityDelay: '300ms',
        pollTimeout: '2s',
        signal: controller.signal,
      }))
        seen.push(e);
    })();

    const rescuer = start({ TASKQ_QUEUES: 'crash', TASKQ_MAX_CONCURRENCY: '8' });
    await rescuer.ready;
    const killedAt = Date.now();
    victim.proc.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');

    for (const h of retried) expect(await h.wait({ timeout: '30s' })).toEqual({ attempt: 2 });
    const lostRow = await fleet.tq.getRow(lost.jobId);
    await waitFor(
      async () => (await fleet.tq.getRow(lost.jobId))?.status === 'crashed',
      30_000,
      'the fragile job to crash',
    );
    console.log(`SIGKILL to all jobs recovered: ${Date.now() - killedAt} ms (lease 4 s)`);
    expect(lostRow).not.toBeNull();
    for (const h of retried) {
      const attempts = await h.attempts();
      expect(attempts.map((a) => [a.attempt, a.outcome, a.workerId])).toEqual([
        [1, 'crashed', victimId],
        [2, 'succeeded', expect.any(String)],
      ]);
    }
    expect((await lost.attempts()).map((a) => a.outcome)).toEqual(['crashed']);

    await waitFor(() => seen.length >= 4, 15_000, 'four reclaim events');
    controller.abort();
    await watching;
    expect(seen).toHaveLength(4);
    expect(new Set(seen.map((e) => e.eventId)).size).toBe(4);
    expect(seen.map((e) => e.jobId).sort()).toEqual([...retried.map((h) => h.jobId), lost.jobId].sort());
    expect(seen.filter((e) => e.detail.to_state === 'pending')).toHaveLength(3);
    expect(seen.filter((e) => e.detail.to_state === 'crashed')).toHaveLength(1);
    expect(seen.every((e) => e.detail.worker_id === victimId && e.detail.reason === 'lock_expired')).toBe(
      true,
    );

    // Resuming from a persisted cursor yields nothing twice; from the start, the same four again.
    const again: EventRow[] = [];
    const c2 = new AbortController();
    const resume = (async () => {
      for await (const e of fleet.tq.watchReclaims({
        afterId: seen[3]!.eventId,
        visibilityDelay: '300ms',
        pollTimeout: '200ms',
        signal: c2.signal,
      }))
        again.push(e);
    })();
    // Four polls' worth: the resumed feed yields nothing.
    await holdsFor(() => again.length === 0, 800, 'an empty resumed feed');
    c2.abort();
    await resume;
    expect(again).toEqual([]);
    const replay: EventRow[] = [];
    for await (const e of fleet.tq.watchReclaims({ afterId: '0', visibilityDelay: '300ms' })) {
      replay.push(e);
      if (replay.length === 4) break;
    }
    expect(replay.map((e) => e.eventId)).toEqual(seen.map((e) => e.eventId));
    await rescuer.stop();
  });

  // The failover gap (spec: at most heartbeatInterval + 1 s) is logged, not asserted: a timing goal is
  // a benchmark's, and a loaded test machine would make a bound here flaky.
  it('elects a new maintenance leader once the leader is killed, and sweeps continue under it', async () => {
    const a = start({ TASKQ_QUEUES: 'fleet' });
    const { workerId: aId } = await a.ready;
    await waitFor(async () => (await leaderRow()) === aId, 10_000, 'the first worker to lead');
    const b = start({ TASKQ_QUEUES: 'fleet' });
    const { workerId: bId } = await b.ready;
    const t0 = Date.now();
    a.proc.kill('SIGKILL');
    await waitFor(async () => (await leaderRow()) === bId, 10_000, 'the second worker to take over');
    const gap = Date.now() - t0;
    console.log(`leader failover gap: ${gap} ms (heartbeat interval 1000 ms, SLA 2000 ms)`);
    // Sweeps continue under the new leader: a delayed job is promoted and runs.
    const h = await fleet.tq.enqueue(record_, { ms: 1 }, { delay: '300ms' });
    await h.wait({ timeout: '10s' });
    await b.stop();
  });
});
