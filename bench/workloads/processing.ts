/**
 * Processing throughput of no-op jobs: N pre-enqueued, drained by worker processes (1, 2 and 4
 * processes at concurrency 10 and 50 each), with the WAL, the server's and the workers' CPU per job,
 * and the machine's busy share through the drain; and two deployments of a Postgres system (two
 * schemas) on one server, 2 processes each, draining at once.
 */
import { mkdirSync } from 'node:fs';

import { rotate, shortError, withFreshSystem, type BenchContext } from '../lib/context.js';
import { drain, drainPair } from '../lib/drain.js';
import { LOAD_CPU_METRICS } from '../lib/load-cpu.js';
import type { MetricSpec } from '../lib/results.js';
import { createSystem, type SystemId } from '../systems/index.js';

export const THROUGHPUT: MetricSpec = { metric: 'jobs/s', unit: 'jobs/s', better: 'higher', ratio: true };
/** WAL written per job while the workers ran (Postgres systems; complete runs only). */
export const WAL: MetricSpec = { metric: 'WAL (kB/job)', unit: 'kB/job', better: 'lower' };
/** CPU of the worker processes per job, from their start signal to their stop (start-up excluded). */
export const WORKER_CPU: MetricSpec = { metric: 'worker CPU (µs/job)', unit: 'µs/job', better: 'lower' };
/** CPU of the local Postgres server per job while the workers ran (Postgres systems; complete runs only). */
export const PG_CPU: MetricSpec = { metric: 'Postgres CPU (µs/job)', unit: 'µs/job', better: 'lower' };

export interface ProcessingCase {
  name: string;
  /** Short name for BENCH_PROCESSING_CASES. */
  label: string;
  concurrency: number;
  processes: number;
  /** Two deployments (schemas) of the system, each with `processes` worker processes and half the jobs. */
  twoSchemas?: boolean;
}

export const PROCESSING_CASES: ProcessingCase[] = [
  { name: '1 process, c=10', label: '1p-c10', concurrency: 10, processes: 1 },
  { name: '1 process, c=50', label: '1p-c50', concurrency: 50, processes: 1 },
  { name: '2 processes, c=10 each', label: '2p-c10', concurrency: 10, processes: 2 },
  { name: '4 processes, c=10 each', label: '4p-c10', concurrency: 10, processes: 4 },
  { name: '2 processes, c=50 each', label: '2p-c50', concurrency: 50, processes: 2 },
  { name: '4 processes, c=50 each', label: '4p-c50', concurrency: 50, processes: 4 },
  {
    name: '2 schemas × 2 processes, c=10 each',
    label: '2x2p-c10',
    concurrency: 10,
    processes: 2,
    twoSchemas: true,
  },
  {
    name: '2 schemas × 2 processes, c=50 each',
    label: '2x2p-c50',
    concurrency: 50,
    processes: 2,
    twoSchemas: true,
  },
];

/** Jobs per drain unless `--processing-jobs` says otherwise; the targets are read on drains of this size. */
export const DEFAULT_PROCESSING_JOBS = 20_000;

/**
 * How long one run may take before it is cut short and reported as partial: the cap of a drain of
 * {@link DEFAULT_PROCESSING_JOBS}, longer in proportion for more jobs (`--processing-jobs`).
 */
export function capMs(quick: boolean, system: string, jobs = DEFAULT_PROCESSING_JOBS): number {
  // pg-boss 10 is polling-bound (batch ÷ interval): its rate is the same over any window.
  if (system === 'pgboss') return quick ? 3000 : 6000;
  return (quick ? 8000 : 12_000) * Math.max(1, jobs / DEFAULT_PROCESSING_JOBS);
}

export async function runProcessing(ctx: BenchContext): Promise<void> {
  const jobs = ctx.opts.processingJobs ?? (ctx.opts.quick ? 2000 : DEFAULT_PROCESSING_JOBS);
  // Quick mode keeps one single-process and one multi-process case (the smoke test covers both paths).
  // BENCH_PROCESSING_CASES=1p-c10,2p-c10 runs only those cases (an A/B of one change).
  const only = process.env.BENCH_PROCESSING_CASES?.split(',').filter(Boolean);
  const chosen = only
    ? PROCESSING_CASES.filter((c) => only.includes(c.label))
    : ctx.opts.quick
      ? PROCESSING_CASES.filter((c) => c.concurrency === 10 && c.processes <= 2)
      : PROCESSING_CASES;
  // Drains of another size, or warm ones, are cases of their own: neither the targets nor a summary
  // of runs reads them as the standard ones.
  const warmup = ctx.opts.processingWarmup;
  const sized =
    ctx.opts.processingJobs === null
      ? chosen
      : chosen.map((c) => ({ ...c, name: `${c.name}, ${jobs.toLocaleString('en-US')} jobs` }));
  const cases =
    warmup === 0
      ? sized
      : sized.map((c) => ({
          ...c,
          name: `${c.name}, warm (${warmup.toLocaleString('en-US')} per process first)`,
        }));
  for (const pc of cases) {
    for (let round = 0; round < ctx.opts.rounds; round++) {
      for (const id of rotate(ctx.systems, round)) {
        if (pc.twoSchemas) {
          await runTwoSchemas(ctx, pc, id, jobs, round);
          continue;
        }
        const profile = ctx.opts.cpuProfDir && id.startsWith('taskq') && round === 0;
        const profDir = profile ? `${ctx.opts.cpuProfDir}/${id}-c${pc.concurrency}-p${pc.processes}` : null;
        if (profDir) mkdirSync(profDir, { recursive: true });
        try {
          const r = await withFreshSystem(id, (sys) =>
            drain(sys, {
              jobs,
              concurrency: pc.concurrency,
              processes: pc.processes,
              capMs: capMs(ctx.opts.quick, id, jobs + warmup * pc.processes),
              fleet: profDir ? { cpuProfDir: profDir } : {},
              // A warm drain's CPU and WAL figures would include its warm-up: its rate only.
              measureWal: sys.store === 'postgres' && warmup === 0,
              warmupPerProcess: warmup,
            }),
          );
          if (r.walBytes !== undefined && !r.partial)
            ctx.results.record('processing', pc.name, WAL, id, r.walBytes / jobs / 1024);
          if (r.postgresCpuMicros !== undefined && !r.partial)
            ctx.results.record('processing', pc.name, PG_CPU, id, r.postgresCpuMicros / jobs);
          if (!r.partial && warmup === 0)
            ctx.results.record('processing', pc.name, WORKER_CPU, id, r.workerCpuMicros / jobs);
          // Cores busy near 100 % mean the CPU per job decides the rate; well below, waits do.
          if (r.machineBusyPct !== undefined && !r.partial && warmup === 0)
            ctx.results.record('processing', pc.name, LOAD_CPU_METRICS.busy, id, r.machineBusyPct);
          const note = r.partial
            ? `partial: not all ${jobs} jobs started within the ${Math.round(capMs(ctx.opts.quick, id, jobs) / 1000)} s cap (rate over the window)`
            : undefined;
          recordRate(ctx, pc, id, round, r, note);
        } catch (err) {
          ctx.results.fail('processing', pc.name, THROUGHPUT, id, shortError(err));
          ctx.log(`  processing [${pc.name}] ${id} round ${round + 1}: FAILED ${shortError(err)}`);
        }
      }
    }
  }
  if (ctx.opts.quick) ctx.results.placeholder('processing', 'c=50, 4 processes', 'skipped in --quick mode');
}

/** Records a round's rate (with its note and failed attempts, if any) and logs it. */
function recordRate(
  ctx: BenchContext,
  pc: ProcessingCase,
  id: SystemId,
  round: number,
  r: { rate: number; partial: boolean; failed: number; failures: string[] },
  note: string | undefined,
): void {
  ctx.results.record('processing', pc.name, THROUGHPUT, id, r.rate, note);
  if (r.failed > 0)
    ctx.results.note(
      'processing',
      pc.name,
      THROUGHPUT,
      id,
      `${r.failed} failed attempts in round ${round + 1} (${r.failures[0] ?? ''})`,
    );
  ctx.log(
    `  processing [${pc.name}] ${id} round ${round + 1}: ${r.rate.toFixed(0)} jobs/s${r.partial ? ' (partial)' : ''}${r.failed ? `, ${r.failed} failed` : ''}`,
  );
}

/** One round of a two-deployment case: the system set up twice, both fleets draining at once. */
async function runTwoSchemas(
  ctx: BenchContext,
  pc: ProcessingCase,
  id: SystemId,
  jobs: number,
  round: number,
): Promise<void> {
  const probe = await createSystem(id);
  // Redis systems flush their database on setup: two of them cannot share one.
  if (probe.store !== 'postgres') {
    if (round === 0) ctx.results.note('processing', pc.name, THROUGHPUT, id, 'Postgres systems only');
    return;
  }
  try {
    const r = await withFreshSystem(id, (a) =>
      withFreshSystem(id, (b) =>
        drainPair([a, b], {
          jobs,
          concurrency: pc.concurrency,
          processes: pc.processes,
          capMs: capMs(ctx.opts.quick, id, jobs + 2 * ctx.opts.processingWarmup * pc.processes),
          warmupPerProcess: ctx.opts.processingWarmup,
        }),
      ),
    );
    if (!r.partial && ctx.opts.processingWarmup === 0)
      ctx.results.record('processing', pc.name, WORKER_CPU, id, r.workerCpuMicros / jobs);
    const note = r.partial
      ? 'partial: a deployment did not finish within the time cap (rate over the window)'
      : undefined;
    recordRate(ctx, pc, id, round, r, note);
  } catch (err) {
    ctx.results.fail('processing', pc.name, THROUGHPUT, id, shortError(err));
    ctx.log(`  processing [${pc.name}] ${id} round ${round + 1}: FAILED ${shortError(err)}`);
  }
}
