/**
 * Memory of one worker process at concurrency 50 over 100k jobs: RSS sampled every 200 ms. Reports
 * the peak, and the growth after warm-up: the largest RSS seen after half of the jobs had started
 * minus the largest seen between 10 % and 50 % (a leak shows as growth; a flat process shows ~0).
 * Every round starts each system's worker afresh, systems alternating in rotated order.
 */
import { rotate, shortError, withFreshSystem, type BenchContext } from '../lib/context.js';
import { drain } from '../lib/drain.js';
import type { MetricSpec } from '../lib/results.js';
import type { SystemId } from '../systems/index.js';

export const MEMORY_METRICS = {
  peak: { metric: 'peak RSS (MB)', unit: 'MB', better: 'lower', ratio: true } as MetricSpec,
  growth: { metric: 'RSS growth after warm-up (MB)', unit: 'MB', better: 'lower' } as MetricSpec,
  rate: { metric: 'throughput (jobs/s)', unit: 'jobs/s', better: 'higher' } as MetricSpec,
};

const MB = 1024 * 1024;
/**
 * Systems slower than ~3.3k jobs/s are cut short: their memory is still sampled for 30 s, long enough
 * for a flat or growing line to show.
 */
const CAP_MS = 30_000;

export async function runMemory(ctx: BenchContext): Promise<void> {
  if (ctx.opts.quick) {
    ctx.results.placeholder('memory', '100k jobs, c=50', 'skipped in --quick mode');
    return;
  }
  const jobs = 100_000;
  const label = `${jobs / 1000}k jobs, 1 process, c=50`;
  const systems = ctx.systems.filter((id) => id !== 'pgboss');
  if (ctx.systems.includes('pgboss'))
    ctx.results.placeholder(
      'memory',
      'pg-boss',
      'pg-boss not measured: polling-bound at 100 jobs/s with batchSize 50, 100k jobs would take ~17 minutes',
    );
  for (let round = 0; round < ctx.opts.rounds; round++) {
    for (const id of rotate(systems, round)) await measure(ctx, id, jobs, label, round);
  }
}

/** One round of one system: a fresh schema, one worker process draining `jobs` at c=50. */
async function measure(
  ctx: BenchContext,
  id: SystemId,
  jobs: number,
  label: string,
  round: number,
): Promise<void> {
  try {
    const r = await withFreshSystem(id, (sys) =>
      drain(sys, { jobs, concurrency: 50, processes: 1, capMs: CAP_MS, fleet: { sampleRss: true } }),
    );
    const samples = r.workers[0]?.rss ?? [];
    const total = r.started;
    const warm = samples.filter(([, , n]) => n >= total * 0.1 && n < total * 0.5).map((s) => s[1]);
    const late = samples.filter(([, , n]) => n >= total * 0.5).map((s) => s[1]);
    const peak = Math.max(...samples.map((s) => s[1]));
    ctx.results.record('memory', label, MEMORY_METRICS.peak, id, peak / MB);
    if (warm.length && late.length)
      ctx.results.record(
        'memory',
        label,
        MEMORY_METRICS.growth,
        id,
        (Math.max(...late) - Math.max(...warm)) / MB,
      );
    const note = r.partial
      ? `partial: ${r.started} of ${jobs} jobs within the ${CAP_MS / 1000} s cap`
      : undefined;
    ctx.results.record('memory', label, MEMORY_METRICS.rate, id, r.rate, note);
    ctx.log(
      `  memory ${id} round ${round + 1}: peak ${(peak / MB).toFixed(0)} MB, ${r.rate.toFixed(0)} jobs/s${note ? ` (${note})` : ''}`,
    );
  } catch (err) {
    ctx.results.fail('memory', label, MEMORY_METRICS.peak, id, shortError(err));
    ctx.log(`  memory ${id} round ${round + 1}: FAILED ${shortError(err)}`);
  }
}
