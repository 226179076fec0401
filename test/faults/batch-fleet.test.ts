/**
 * Issue 65's first acceptance point: a batch of 10,000 children run by three worker processes, with
 * planned random failures and `AbortBatchAfter(5)`.
 *
 * - While the fleet runs, every sample reads the batch row's counters and the jobs table's counts in
 *   one REPEATABLE READ snapshot: they are equal. `BatchHandle.status()` between two snapshots is
 *   internally consistent and lies between them, counter by counter.
 * - A test-only audit trigger (test/helpers/batch-audit.ts) logs every outcome in the order the
 *   batch row's lock counted it; replaying that order alone, the batch aborts at exactly the outcome
 *   that makes the fifth consecutive failure, never earlier, and the row agrees after every outcome.
 * - The finalizer (snooze mode, 1 s) decides exactly once, when no child is left running.
 *
 * Failures are drawn from a seeded PRNG on the child's index (10 %: a run of five is rare) plus a
 * block of 40 failing children past the middle, so the abort lands mid-batch. The workers share the
 * test database in a schema of their own (no fault to Postgres); the file is under test/faults so
 * it runs alone, its three processes not competing with the rest of the suite.
 */
import { describe, expect, it } from 'vitest';

import { BatchHandle } from '../../src/client/batch-handle.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem } from '../../src/client/batch-items.js';
import { newJobId } from '../../src/core/ids.js';
import { batchChild, batchFinal, FINAL_RUNS_TABLE } from '../fixtures/batch-actors.js';
import {
  countersSnapshot,
  installBatchAudit,
  readAudit,
  replayAudit,
  TERMINAL,
  type CountersSnapshot,
} from '../helpers/batch-audit.js';
import { FAST_RECLAIM_ENV, useProcessFleet } from '../helpers/process-fleet.js';
import { prng } from '../helpers/prng.js';
import { waitFor } from '../helpers/wait.js';

const CHILDREN = 10_000;
const THRESHOLD = 5;
const P_FAIL = 0.1;
/** Children [BLOCK_START, BLOCK_START + BLOCK) all fail. */
const BLOCK_START = 6_000;
const BLOCK = 40;
const SEED = 0x65_ba7c;

const fleet = useProcessFleet(
  'batchfleet',
  { ...FAST_RECLAIM_ENV, TQ_FIXTURE_ACTORS: 'batch', TASKQ_QUEUES: 'batch', TASKQ_MAX_CONCURRENCY: '16' },
  { final_runs: FINAL_RUNS_TABLE },
);

/** Writes one batch of more children than `enqueueBatch` takes in a call, with the streaming enqueue. */
async function writeLargeBatch(batchId: string, plan: { fail: boolean; ms: number }[]): Promise<void> {
  await fleet.tq.enqueueBatchStreaming(
    plan.map((p, i) => batchItem(batchChild, { i, ...p })),
    {
      batchId,
      failurePolicy: new AbortBatchAfter(THRESHOLD),
      finalizer: batchItem(batchFinal, { batchId }),
    },
  );
}

const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<R[]> =>
  (await fleet.db.pool.query<R>(sql.replaceAll('$S', `"${fleet.db.schema}"`), values)).rows;

describe('a 10,000-child batch over three worker processes', () => {
  it('keeps its counters equal to the jobs table, aborts at the fifth consecutive failure, finalizes once', async () => {
    const t0 = Date.now();
    const rand = prng(SEED);
    const plan = Array.from({ length: CHILDREN }, (_, i) => ({
      fail: (i >= BLOCK_START && i < BLOCK_START + BLOCK) || rand() < P_FAIL,
      ms: 1 + Math.floor(rand() * 3),
    }));
    await installBatchAudit(fleet.db.pool, fleet.db.schema);
    const batchId = newJobId();
    await writeLargeBatch(batchId, plan);
    const handle = new BatchHandle(fleet.tq.backend, batchId, [], CHILDREN);
    const row = (await fleet.tq.getBatch(batchId))!;
    expect(row).toMatchObject({ status: 'active', sealed: true, expectedSize: CHILDREN });
    const finalizerId = row.finalizerJobId!;
    const enqueuedMs = Date.now() - t0;

    await Promise.all([fleet.start().ready, fleet.start().ready, fleet.start().ready]);

    // Sample until every child is terminal and the finalizer has ended.
    const mismatches: string[] = [];
    let samples = 0;
    let midRun = 0;
    let prev: CountersSnapshot | null = null;
    const terminalOf = (s: CountersSnapshot): number => TERMINAL.reduce((n, k) => n + s.row[k], 0);
    const progress = async (): Promise<string> =>
      JSON.stringify({
        snapshot: prev,
        finalizer: await fleet.tq.getRow(finalizerId),
        stderr: fleet.procs.map((p) => p.stderr.join('').slice(-1500)),
      });
    await waitFor(
      async () => {
        const st = await handle.status();
        const snap = await countersSnapshot(fleet.db.pool, fleet.db.schema, batchId);
        samples++;
        for (const m of snap.mismatches) mismatches.push(`sample ${samples}: ${m}`);
        const sum = st.pending + TERMINAL.reduce((n, k) => n + st[k], 0);
        if (st.total !== CHILDREN || sum !== st.total)
          mismatches.push(`sample ${samples}: status() total ${st.total}, parts add up to ${sum}`);
        for (const k of TERMINAL) {
          // status() was read after the previous snapshot and before this one.
          if (prev && st[k] < prev.row[k])
            mismatches.push(`sample ${samples}: status() ${k} ${st[k]} < earlier ${prev.row[k]}`);
          if (st[k] > snap.row[k])
            mismatches.push(`sample ${samples}: status() ${k} ${st[k]} > later ${snap.row[k]}`);
        }
        const done = terminalOf(snap);
        if (done > 0 && done < CHILDREN) midRun++;
        prev = snap;
        if (done < CHILDREN) return false;
        const fin = await fleet.tq.getRow(finalizerId);
        return (
          fin !== null && ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'].includes(fin.status)
        );
      },
      80_000,
      'every child to be terminal and the finalizer to end',
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; at the last sample: ${await progress()}`);
    });
    const runMs = Date.now() - t0 - enqueuedMs;

    expect(mismatches).toEqual([]);
    expect(midRun, 'samples taken while children ran').toBeGreaterThanOrEqual(5);
    const last = await countersSnapshot(fleet.db.pool, fleet.db.schema, batchId);
    expect(last.mismatches).toEqual([]);
    expect(last.total).toBe(CHILDREN);
    expect(last.row.status).toBe('aborted');

    // The abort, from the order the outcomes were counted in.
    const audit = await readAudit(fleet.db.pool, fleet.db.schema, batchId);
    const replay = replayAudit(audit, THRESHOLD);
    expect(replay.mismatches).toEqual([]);
    expect(replay.streakReachedAt, 'a run of five failures was counted').not.toBeNull();
    expect(replay.abortedAt).toBe(replay.streakReachedAt);
    expect(replay.streakAtAbort).toBe(THRESHOLD);
    expect(replay.abortCancels).toBe(last.row.cancelled);
    expect(replay.outcomes + replay.abortCancels).toBe(CHILDREN);
    const trip = (await fleet.tq.getRow(replay.abortedBy!))!;
    expect(trip.status).toBe('failed');
    // Every cancelled child was cancelled by the abort; every other one ran to its planned outcome.
    const ran = await q<{ i: number; status: string; error_class: string | null }>(
      `SELECT (payload ->> 'i')::int AS i, status::text AS status, error_class FROM $S.jobs WHERE batch_id = $1`,
      [batchId],
    );
    for (const r of ran) {
      if (r.status === 'cancelled') expect(r.error_class).toBe('BatchAborted');
      else expect(r.status, `child ${r.i}`).toBe(plan[r.i]!.fail ? 'failed' : 'succeeded');
    }

    // The finalizer decided once, after every child was terminal.
    const runs = await q<{
      outcome: string;
      non_terminal: number;
      last_child_finished: Date;
      recorded_at: Date;
      counts: unknown;
    }>(
      `SELECT outcome, non_terminal, last_child_finished, recorded_at, counts FROM $S.final_runs ORDER BY recorded_at`,
    );
    const decided = runs.filter((r) => r.outcome !== 'snoozed');
    expect(decided).toHaveLength(1);
    expect(runs.at(-1)).toBe(decided[0]);
    expect(decided[0]).toMatchObject({ outcome: 'aborted', non_terminal: 0 });
    expect(decided[0]!.last_child_finished.getTime()).toBeLessThanOrEqual(decided[0]!.recorded_at.getTime());
    expect((await fleet.tq.getRow(finalizerId))!.status).toBe('succeeded');

    console.log(
      `10k batch over 3 processes: enqueued in ${enqueuedMs} ms, run in ${runMs} ms; ${samples} samples ` +
        `(${midRun} mid-run), counters equal the table in each; aborted at outcome ${replay.abortedAt} ` +
        `(streak ${replay.streakAtAbort}), ${replay.abortCancels} children cancelled by the abort, ` +
        `${last.row.succeeded} succeeded, ${last.row.failed} failed; finalizer: ${runs.length - 1} snoozes, ` +
        `then ${decided[0]!.outcome} (seed ${SEED.toString(16)})`,
    );
  }, 120_000);
});
