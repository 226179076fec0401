/**
 * Issue 65's second acceptance point: a worker process SIGKILLed again and again while it settles
 * batch children, relaunched each time, beside a worker that stays up. The children retry (some fail
 * for good, some fail once, some are one-attempt jobs long enough to be running at a kill: reclaimed
 * as `crashed`; a killed attempt of the others is reclaimed and run again). Half the kills hold the
 * batch rows' locks from a transaction of the test's own until the victim's outcome write waits
 * inside it (its jobs updated, its batch counters not yet), then kill it there; the other half kill
 * it wherever it is.
 *
 * Batch counters are kept by a trigger in the transaction of every status change, so whatever a
 * kill interrupts, the counters equal the jobs table: in every snapshot sample while the fleet runs
 * and at the end, once the leader's sweep (short lease) has reclaimed every child a dead worker
 * held. The reference counts outside the outcome write and loses exactly this case. The test-only
 * audit trigger (test/helpers/batch-audit.ts) checks the row after every outcome, and that each
 * batch aborted exactly when its failure streak reached its threshold (or completed, never having
 * reached it).
 *
 * A private Postgres cluster (pg-cluster.ts), as the other fault tests use.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { batchItem } from '../../src/client/batch-items.js';
import type { BatchHandle } from '../../src/client/batch-handle.js';
import { TaskQ } from '../../src/client/taskq.js';
import { killChild, killFragile } from '../fixtures/batch-actors.js';
import {
  countersSnapshot,
  installBatchAudit,
  readAudit,
  replayAudit,
  TERMINAL,
} from '../helpers/batch-audit.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { FAST_RECLAIM_ENV } from '../helpers/process-fleet.js';
import { prng } from '../helpers/prng.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

/** SIGKILLs of the victim worker. */
const KILLS = 6;
const SEED = 0x65_c11;

/** A batch under test: its size, failure threshold and share of children that fail for good. */
interface Spec {
  name: string;
  size: number;
  threshold: number;
  pFail: number;
}
/**
 * `abortable` meets its threshold during the run; `steady` never can (a threshold above its size)
 * and completes. Failures cluster at the end of a run (children that fail for good take three
 * attempts, so the last outcomes are mostly theirs): a modest threshold would be met there.
 */
const SPECS: readonly Spec[] = [
  { name: 'abortable', size: 500, threshold: 4, pFail: 0.25 },
  { name: 'steady', size: 1000, threshold: 1001, pFail: 0.08 },
];
const TOTAL = SPECS.reduce((n, s) => n + s.size, 0);

let cluster: PgCluster;
let db: TestSchema;
let tq: TaskQ;
const procs: WorkerProcess[] = [];

beforeAll(async () => {
  cluster = await startPgCluster();
  db = await migratedSchema('batchkill', cluster.dsn);
  tq = await TaskQ.open({ dsn: cluster.dsn, schema: db.schema });
  await installBatchAudit(db.pool, db.schema);
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await tq?.close();
  await db?.drop();
  await cluster?.destroy();
});

const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<R[]> =>
  (await db.pool.query<R>(sql.replaceAll('$S', `"${db.schema}"`), values)).rows;

/** Starts a worker on the private cluster; its pool's connections carry `appName` (`application_name`). */
function startWorker(appName: string, maxConcurrency: number): WorkerProcess {
  const p = startWorkerProcess(db.schema, {
    ...FAST_RECLAIM_ENV,
    TASKQ_PG_DSN: `${cluster.dsn}?application_name=${appName}`,
    TQ_FIXTURE_ACTORS: 'batch',
    TASKQ_QUEUES: 'batch_kill',
    TASKQ_MAX_CONCURRENCY: String(maxConcurrency),
  });
  procs.push(p);
  return p;
}

/** Where the victim is when it dies: inside an outcome write (`writing`), or wherever it is (`anywhere`). */
type KillMode = 'writing' | 'anywhere';

/**
 * For `writing`: locks the batch rows in a transaction of the test's own and resolves once one of
 * the victim's connections waits for a lock (only a child's terminal write, inside the counting
 * trigger, waits for a batch row), with the function that rolls the test's transaction back.
 */
async function holdVictimInOutcomeWrite(batchIds: string[], appName: string): Promise<() => Promise<void>> {
  const client = await db.pool.connect();
  await client.query('BEGIN');
  await client.query(`SELECT 1 FROM "${db.schema}".batches WHERE id = ANY($1::uuid[]) FOR UPDATE`, [
    batchIds,
  ]);
  const release = async (): Promise<void> => {
    await client.query('ROLLBACK');
    client.release();
  };
  try {
    await waitFor(
      async () =>
        (
          await q(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [
            appName,
          ])
        ).length > 0,
      15_000,
      `an outcome write of ${appName} to wait for the batch rows`,
    );
  } catch (err) {
    const seen = await q(
      `SELECT application_name, state, wait_event_type, left(query, 100) AS query FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    await release();
    throw new Error(`${(err as Error).message}; sessions: ${JSON.stringify(seen)}`);
  }
  return release;
}

describe('batch counters under SIGKILL of a worker settling children', () => {
  it('equal the jobs table in every sample and at the end; each batch completes or aborts by its streak', async () => {
    const t0 = Date.now();
    const rand = prng(SEED);
    const handles: BatchHandle[] = [];
    for (const spec of SPECS) {
      const items = Array.from({ length: spec.size }, () => {
        const r = rand();
        const ms = 20 + Math.floor(rand() * 20);
        if (r < 0.1) return batchItem(killFragile, { ms: 300 });
        if (r < 0.1 + spec.pFail) return batchItem(killChild, { plan: 'fail', ms });
        if (r < 0.25 + spec.pFail) return batchItem(killChild, { plan: 'flaky', ms });
        return batchItem(killChild, { plan: 'ok', ms });
      });
      handles.push(await tq.enqueueBatch(items, { failurePolicy: new AbortBatchAfter(spec.threshold) }));
    }
    const batchIds = handles.map((h) => h.batchId);
    const terminalCount = async (): Promise<number> =>
      (
        await q<{ n: number }>(
          `SELECT count(*)::int AS n FROM $S.jobs WHERE batch_id = ANY($1::uuid[])
             AND status::text = ANY($2::text[])`,
          [batchIds, TERMINAL],
        )
      )[0]!.n;

    // Snapshot samples for as long as the fleet runs.
    const mismatches: string[] = [];
    let samples = 0;
    let sampling = true;
    const sampler = waitFor(
      async () => {
        for (const id of batchIds)
          for (const m of (await countersSnapshot(db.pool, db.schema, id)).mismatches)
            mismatches.push(`sample ${samples}, batch ${id}: ${m}`);
        samples++;
        return !sampling;
      },
      170_000,
      'the sampler to be stopped',
    );

    const modes: KillMode[] = [];
    const heldAtKill: number[] = [];
    let killPhaseMs = 0;
    try {
      const stable = startWorker('bk-stable', 2);
      await stable.ready;
      for (let k = 0; k < KILLS; k++) {
        const appName = `bk-victim-${k}`;
        const victim = startWorker(appName, 12);
        const { workerId } = await victim.ready;
        const due = Math.floor(TOTAL * (0.08 + 0.1 * k));
        await waitFor(async () => (await terminalCount()) >= due, 30_000, `${due} children terminal`);
        const mode: KillMode = k % 2 === 0 ? 'writing' : 'anywhere';
        const release = mode === 'writing' ? await holdVictimInOutcomeWrite(batchIds, appName) : null;
        heldAtKill.push(
          (
            await q<{ n: number }>(`SELECT count(*)::int AS n FROM $S.jobs WHERE locked_by_worker = $1`, [
              workerId,
            ])
          )[0]!.n,
        );
        victim.proc.kill('SIGKILL');
        expect((await victim.exited).signal).toBe('SIGKILL');
        // The dead worker's write goes on waiting; whether it commits or rolls back once the lock
        // is released, its counters and its job rows go together.
        await release?.();
        modes.push(mode);
      }
      killPhaseMs = Date.now() - t0;
      // One more worker helps finish; the leader's sweep reclaims what the dead ones held.
      await startWorker('bk-last', 12).ready;
      await waitFor(async () => (await terminalCount()) === TOTAL, 90_000, 'every child to be terminal');
    } finally {
      sampling = false;
      await sampler;
    }

    expect(mismatches).toEqual([]);
    let crashed = 0;
    const summary: string[] = [];
    for (const [i, spec] of SPECS.entries()) {
      const id = batchIds[i]!;
      const snap = await countersSnapshot(db.pool, db.schema, id);
      expect(snap.mismatches, spec.name).toEqual([]);
      expect(snap.total).toBe(spec.size);
      const replay = replayAudit(await readAudit(db.pool, db.schema, id), spec.threshold);
      expect(replay.mismatches, spec.name).toEqual([]);
      expect(
        replay.abortedAt,
        `${spec.name}: aborted exactly where the streak reached ${spec.threshold}`,
      ).toBe(replay.streakReachedAt);
      const row = (await tq.getBatch(id))!;
      expect(row.completedAt).not.toBeNull();
      if (replay.streakReachedAt === null) {
        expect(row.status, spec.name).toBe('complete');
        expect(replay.outcomes).toBe(spec.size);
      } else {
        expect(row.status, spec.name).toBe('aborted');
        expect(replay.streakAtAbort).toBe(spec.threshold);
        expect(replay.outcomes + replay.abortCancels).toBe(spec.size);
      }
      expect(await handles[i]!.status()).toMatchObject({
        total: spec.size,
        pending: 0,
        isComplete: true,
        ...Object.fromEntries(TERMINAL.map((s) => [s, snap.row[s]])),
      });
      crashed += snap.row.crashed;
      summary.push(
        `${spec.name} ${row.status}${replay.abortedAt === null ? '' : ` at outcome ${replay.abortedAt}`} ` +
          `(${TERMINAL.map((s) => `${s} ${snap.row[s]}`).join(', ')})`,
      );
    }
    expect(modes).toHaveLength(KILLS);
    expect(crashed, 'one-attempt children running at a kill, reclaimed as crashed').toBeGreaterThan(0);
    const rerun = (
      await q<{ n: number }>(
        `SELECT count(*)::int AS n FROM $S.job_attempts a JOIN $S.jobs j ON j.id = a.job_id
         WHERE j.batch_id = ANY($1::uuid[]) AND a.outcome = 'crashed'`,
        [batchIds],
      ).catch(() => [{ n: -1 }])
    )[0]!.n;

    console.log(
      `batch counters under SIGKILL: ${KILLS} kills (${modes.join(', ')}; jobs held by the victim at each: ` +
        `${heldAtKill.join(', ')}) in ${killPhaseMs} ms, all terminal after ${Date.now() - t0} ms; ` +
        `${samples} samples, counters equal the table in each; ${summary.join('; ')}; ` +
        `crashed attempts recorded: ${rerun}`,
    );
  }, 180_000);
});
