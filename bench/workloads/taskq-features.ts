/**
 * TaskQ-only features, one worker process at c=10, each against a plain TaskQ run in the same
 * rounds:
 * - a rate-limited actor whose Redis token bucket never binds: the cost of acquiring per job;
 * - a rate-limited actor with a binding bucket (500 jobs/s, burst 50): the rate actually achieved;
 * - a keyed-reservation actor (10 keys × 1 slot, Postgres): throughput with the slots acquired and
 *   released around every job;
 * - observability on — the worker's Prometheus endpoint, with a tracer provider (batch processor)
 *   sampling every attempt, or 10 % of them, or none registered — against `otelEnabled: false`
 *   (issue 63's target: within 10 % at c=10). The plain actor above is `otelEnabled` true with no
 *   SDK registered: the library's own instrumentation alone.
 */
import { rotate, shortError, withFreshSystem, type BenchContext } from '../lib/context.js';
import { drain } from '../lib/drain.js';
import type { MetricSpec } from '../lib/results.js';
import type { SystemId } from '../systems/index.js';
import { WORKER_CPU } from './processing.js';

const RATE: MetricSpec = { metric: 'jobs/s', unit: 'jobs/s', better: 'higher' };

interface FeatureCase {
  name: string;
  system: SystemId;
  jobs: (quick: boolean) => number;
}

/**
 * The observability cases drain 50,000 jobs: over 10,000 the JIT's warm-up of the SDK's code is a
 * visible share of a drain that lasts half a second, and a worker pays it once, not per job.
 */
const OTEL_JOBS = (quick: boolean): number => (quick ? 2000 : 50_000);

const CASES: FeatureCase[] = [
  { name: 'plain actor (reference)', system: 'taskq', jobs: (q) => (q ? 2000 : 10_000) },
  {
    name: 'rate-limited actor, Redis token bucket, not binding',
    system: 'taskq-rl-open',
    jobs: (q) => (q ? 2000 : 10_000),
  },
  {
    name: 'rate-limited actor, Redis token bucket 500/s, burst 50',
    system: 'taskq-rl-binding',
    jobs: (q) => (q ? 1000 : 3000),
  },
  {
    name: 'observability: every attempt traced, metrics on metricsPort',
    system: 'taskq-otel-on',
    jobs: OTEL_JOBS,
  },
  {
    name: 'observability: 10 % of traces sampled, metrics on metricsPort',
    system: 'taskq-otel-sampled',
    jobs: OTEL_JOBS,
  },
  {
    name: 'observability: metrics on metricsPort, no tracing SDK',
    system: 'taskq-otel-metrics',
    jobs: OTEL_JOBS,
  },
  {
    name: 'observability off (otelEnabled false)',
    system: 'taskq-otel-off',
    jobs: OTEL_JOBS,
  },
  {
    name: 'keyed-reservation actor, 10 keys × 1 slot',
    system: 'taskq-reservation',
    jobs: (q) => (q ? 1000 : 5000),
  },
];

export async function runTaskqFeatures(ctx: BenchContext): Promise<void> {
  if (!ctx.systems.includes('taskq')) return;
  const cases = CASES.filter(
    (c) =>
      (ctx.redisAvailable || !c.system.startsWith('taskq-rl')) &&
      (!process.env.TQ_CASES || process.env.TQ_CASES.split(',').includes(c.system)),
  );
  if (cases.length < CASES.length)
    ctx.results.placeholder('taskq-features', 'rate-limited actor', 'not measured: Redis unavailable');
  for (let round = 0; round < ctx.opts.rounds; round++) {
    for (const fc of rotate(cases, round)) {
      const jobs = fc.jobs(ctx.opts.quick);
      try {
        const r = await withFreshSystem(fc.system, (sys) =>
          drain(sys, {
            jobs,
            concurrency: 10,
            processes: 1,
            capMs: ctx.opts.quick ? 8000 : 30_000,
            fleet: process.env.TQ_PROF ? { cpuProfDir: `${process.env.TQ_PROF}/${fc.system}` } : {},
          }),
        );
        const note = r.partial ? `partial: ${r.started} of ${jobs} jobs within the cap` : undefined;
        ctx.results.record('taskq-features', fc.name, RATE, fc.system, r.rate, note);
        // CPU per job varies less than the rate with what else the machine does: the cost of a
        // feature reads better from it.
        if (!r.partial)
          ctx.results.record('taskq-features', fc.name, WORKER_CPU, fc.system, r.workerCpuMicros / jobs);
        ctx.log(
          `  taskq-features [${fc.name}] round ${round + 1}: ${r.rate.toFixed(0)} jobs/s, ` +
            `worker CPU ${(r.workerCpuMicros / jobs).toFixed(1)} µs/job`,
        );
      } catch (err) {
        ctx.results.fail('taskq-features', fc.name, RATE, fc.system, shortError(err));
        ctx.log(`  taskq-features [${fc.name}] round ${round + 1}: FAILED ${shortError(err)}`);
      }
    }
  }
}
