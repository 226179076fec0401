/**
 * Cost per job as the jobs table grows. For each size the table is filled with SQL (half pending
 * backlog of the benchmark queue, half terminal history), vacuumed and analysed, and the server
 * checkpointed (see {@link checkpoint}); then:
 * - enqueue cost: single enqueues and bulk calls into the filled table (ms per job);
 * - drain cost: one worker process at c=10 drains the backlog; ms per job between the 20 % and
 *   100 % marks of `drainJobs` handler starts (warm-up excluded; both marks seen with the same lag;
 *   6,000 jobs in a full run: a smaller drain gives too short a window for steady readings);
 * - TaskQ only: the dispatch and settle statements called directly, batches of 10 (the median
 *   call's ms per job, so that a few stalls of the instance do not decide the row), and the
 *   dispatch statement again on sessions with `jit = off` (a diagnostic of the JIT cost).
 * Runs for systems that can be filled with SQL: TaskQ and graphile-worker. Each round fills every
 * system's table afresh, systems alternating in rotated order as in the other workloads.
 */
import pg from 'pg';

import { nowMs, PG_DSN } from '../lib/common.js';
import { rotate, shortError, withFreshSystem, type BenchContext } from '../lib/context.js';
import { Fleet } from '../lib/fleet.js';
import type { MetricSpec } from '../lib/results.js';

const ms = (metric: string): MetricSpec => ({ metric, unit: 'ms/job', better: 'lower' });
export const SCALE_METRICS = {
  drain: { ...ms('drain, worker c=10 (ms/job)'), ratio: true },
  dispatch: ms('dispatch statement, direct (ms/job)'),
  settle: ms('settle statement, direct (ms/job)'),
  dispatchJitOff: ms('dispatch statement, direct, session jit=off (ms/job)'),
  single: ms('single enqueue (ms/job)'),
  bulk: ms('bulk enqueue (ms/job)'),
  fill: { metric: 'fill + VACUUM ANALYZE (s)', unit: 's', better: 'lower' } as MetricSpec,
};

/**
 * A `CHECKPOINT` between the fill and the measurements. A fill of 1M rows writes more than half of
 * the server's `max_wal_size` in WAL, so without it the checkpoints that WAL forces would run during
 * the next measurements, and whichever system was measured then would pay for another system's fill.
 */
async function checkpoint(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_DSN });
  await client.connect();
  try {
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
}

export function sizeLabel(rows: number): string {
  return rows >= 1_000_000 ? `${rows / 1_000_000}M rows` : `${rows / 1000}k rows`;
}

export async function runScale(ctx: BenchContext): Promise<void> {
  const sizes = ctx.opts.quick ? [10_000] : [10_000, 100_000, 1_000_000];
  // The 10k-row table holds 5,000 pending jobs plus the 5,200 the enqueue probes add: enough for
  // the drain (and what its worker has claimed ahead when it stops) and the 3,000 the probes claim.
  const drainJobs = ctx.opts.quick ? 2000 : 6000;
  const rounds = ctx.opts.rounds;
  const systems = ctx.systems.filter((id) => id === 'taskq' || id === 'graphile' || id === 'graphile-tuned');
  if (systems.length === 0) return;
  for (const rows of sizes) {
    const label = sizeLabel(rows);
    for (let round = 0; round < rounds; round++) {
      for (const id of rotate(systems, round)) {
        try {
          await withFreshSystem(id, async (sys) => {
            if (!sys.fill) throw new Error('no SQL fill for this system');
            let t = nowMs();
            await sys.fill({ rows, pending: Math.floor(rows / 2) });
            ctx.results.record('scale', label, SCALE_METRICS.fill, id, (nowMs() - t) / 1000);
            await checkpoint();

            const single = 200;
            t = nowMs();
            for (let i = 0; i < single; i++) await sys.enqueueOne({ i });
            ctx.results.record('scale', label, SCALE_METRICS.single, id, (nowMs() - t) / single);
            t = nowMs();
            for (let b = 0; b < 5; b++)
              await sys.enqueueBulk(Array.from({ length: 1000 }, (_, i) => ({ i: b * 1000 + i })));
            ctx.results.record('scale', label, SCALE_METRICS.bulk, id, (nowMs() - t) / 5000);

            const fleet = await Fleet.start(sys.workerSpec(10, 1));
            let perJob = NaN;
            try {
              const from = Math.floor(drainJobs * 0.2);
              if (!(await fleet.waitForCount(from, Date.now() + 60_000))) throw new Error('drain too slow');
              const t0 = nowMs();
              if (!(await fleet.waitForCount(drainJobs, Date.now() + 120_000)))
                throw new Error('drain too slow');
              perJob = (nowMs() - t0) / (drainJobs - from);
            } finally {
              await fleet.stop();
            }
            ctx.results.record('scale', label, SCALE_METRICS.drain, id, perJob);

            let probeText = '';
            if (sys.probeDispatch) {
              const p = await sys.probeDispatch(ctx.opts.quick ? 500 : 2000, 10);
              ctx.results.record('scale', label, SCALE_METRICS.dispatch, id, p.dispatchMsPerJob);
              ctx.results.record('scale', label, SCALE_METRICS.settle, id, p.settleMsPerJob);
              // Diagnostic: the same statements on sessions with JIT compilation off.
              const q = await sys.probeDispatch(ctx.opts.quick ? 200 : 1000, 10, { jitOff: true });
              ctx.results.record('scale', label, SCALE_METRICS.dispatchJitOff, id, q.dispatchMsPerJob);
              probeText = `, dispatch ${p.dispatchMsPerJob.toFixed(3)} (jit off ${q.dispatchMsPerJob.toFixed(3)}) + settle ${p.settleMsPerJob.toFixed(3)} ms/job`;
            }
            ctx.log(
              `  scale [${label}] ${id} round ${round + 1}: drain ${perJob.toFixed(3)} ms/job${probeText}`,
            );
          });
        } catch (err) {
          ctx.results.fail('scale', label, SCALE_METRICS.drain, id, shortError(err));
          ctx.log(`  scale [${label}] ${id} round ${round + 1}: FAILED ${shortError(err)}`);
        }
      }
    }
  }
  if (ctx.opts.quick) ctx.results.placeholder('scale', '100k and 1M rows', 'skipped in --quick mode');
}
