/**
 * Features side by side with the closest peer feature (issue 68). Each case runs on a fresh system
 * (schema / flushed Redis database), its worker in a process of its own (`features/proc.ts`, c=10),
 * the systems in rotated order over rounds:
 * - cron: S schedules due every second for a window: fires/s (S expected) and the lag from each
 *   slot to its job's handler start. TaskQ only: graphile-worker's crontab is per-minute, so a window
 *   of seconds would hold at most one of its slots (the catch-up case compares the two);
 * - cron catch-up: S per-minute schedules that missed 10 slots each (a leader or worker that was
 *   down): time from the worker's go to the handler start of the last missed slot's job, and missed
 *   slots/s. TaskQ's catch-up window against graphile-worker's crontab backfill (`?fill=`);
 * - batch: one batch of K children with a finalizer: time from the enqueue call to the finalizer's
 *   run that sees every child done. TaskQ (`enqueueBatch` with `finalizer`, its `waitForBatch`
 *   snoozing 1 s between checks) against a BullMQ flow (a parent with K children) on Redis;
 * - sub-jobs: P parents each enqueueing C children from the handler: children/s from the parents'
 *   enqueue call to the last child's handler start. TaskQ `ctx.jobs.enqueueBatch`, graphile-worker
 *   `helpers.addJobs`, BullMQ `queue.addBulk` in the processor;
 * - retries: N jobs failing their first attempt and succeeding on the second, with the smallest
 *   backoff each system allows: time from the first attempt's start to the last job done, attempts/s;
 * - rate limit: N jobs behind a limit of 500 jobs/s (burst 50): the rate achieved after the burst
 *   and its error against the limit. TaskQ's Redis token bucket against BullMQ's queue limiter.
 */
import { checkpoint } from '../lib/checkpoint.js';
import { sleep } from '../lib/common.js';
import { rotate, shortError, withTimeout, type BenchContext } from '../lib/context.js';
import type { MetricSpec } from '../lib/results.js';
import { percentile } from '../lib/stats.js';
import { BullmqProducer } from './features/bullmq-side.js';
import { GraphileProducer } from './features/graphile-side.js';
import { FeatureProcess, type FeatureResult } from './features/process.js';
import type { FeatureCase, FeatureSystem } from './features/protocol.js';
import { BACKOFF_MS, BURST, MISSED_SLOTS, RATE, TaskqProducer } from './features/taskq-side.js';

/** Jobs each worker runs at once. */
const CONCURRENCY = 10;

type Producer = TaskqProducer | GraphileProducer | BullmqProducer;

/** One measurement: a name per size, the systems that have the feature, and the run on one system. */
interface Case {
  id: FeatureCase;
  /** Results workload (one report table per case: each has its own metrics). */
  workload: string;
  name: (quick: boolean) => string;
  systems: FeatureSystem[];
  /** Case parameters for the worker process (besides those `run` adds). */
  params: (quick: boolean) => Record<string, number>;
  run: (r: CaseRun) => Promise<void>;
}

/** What a case's run gets: the producer, the worker process (loaded, not started) and a recorder. */
interface CaseRun {
  producer: Producer;
  proc: FeatureProcess;
  params: Record<string, number>;
  quick: boolean;
  record(m: MetricSpec, value: number, note?: string): void;
  note(m: MetricSpec, note: string): void;
}

const m = (metric: string, better: 'higher' | 'lower', ratio = false): MetricSpec => ({
  metric,
  unit: metric.replace(/^.*\((.*)\)$/, '$1'),
  better,
  ratio,
});

const FIRES = m('fires/s', 'higher');
const LAG_P50 = m('lag p50 (ms)', 'lower');
const LAG_P99 = m('lag p99 (ms)', 'lower');
const CATCH_UP = m('go → last missed slot started (ms)', 'lower', true);
const SLOTS_RATE = m('missed slots/s', 'higher');
const FINALIZE = m('call → finalizer start (ms)', 'lower', true);
const CHILDREN_RATE = m('children/s', 'higher', true);
const WORKER_CPU_CHILD = m('worker CPU (µs/child)', 'lower');
const RETRY_DONE = m('first attempt → all done (ms)', 'lower', true);
const ATTEMPTS_RATE = m('attempts/s', 'higher');
const WORKER_CPU_ATTEMPT = m('worker CPU (µs/attempt)', 'lower');
const ACHIEVED = m('achieved after the burst (jobs/s)', 'higher');
const RATE_ERROR = m(`error vs ${RATE}/s (%)`, 'lower');

/** The time a reported event happened (the worker's `nowMs()`), or a failure when it never did. */
function at(r: FeatureResult, kind: 'first' | 'last', event: string): number {
  const t = r[kind][event];
  if (t === undefined) throw new Error(`no '${event}' event reported`);
  return t;
}

/** Waits for `n` events of `kind`, failing the measurement at the cap. */
async function expect(proc: FeatureProcess, kind: string, n: number, capMs: number): Promise<void> {
  if (!(await proc.waitFor(kind, n, Date.now() + capMs)))
    throw new Error(
      `${proc.count(kind)} of ${n} '${kind}' events within ${capMs / 1000} s${proc.stderrTail() ? `; worker stderr: ${proc.stderrTail()}` : ''}`,
    );
}

function positive(ms: number, what: string): number {
  if (!(ms > 0)) throw new Error(`${what}: not positive (${ms} ms): the clocks disagree`);
  return ms;
}

const CASES: Case[] = [
  {
    id: 'cron',
    workload: 'features: cron',
    name: (q) => `${q ? 50 : 200} schedules every second, ${q ? 6 : 15} s window`,
    systems: ['taskq'],
    params: (q) => ({ schedules: q ? 50 : 200, windowS: q ? 6 : 15 }),
    async run({ proc, params, record }) {
      const s = params.schedules!;
      await proc.go();
      // Leadership, the schedules' creation and the first slot: then a second more, and count.
      await expect(proc, 'fire', s, 20_000);
      await sleep(1000);
      proc.reset();
      const resetWall = Date.now();
      await sleep(params.windowS! * 1000);
      const endWall = Date.now();
      const r = await proc.stop();
      // Whole seconds of slots inside the window: from the first slot after the reset (an earlier
      // one may have fired before it) to one whose job had 2 s to start before the stop.
      const from = Math.ceil(resetWall / 1000) * 1000 + 1000;
      const to = Math.floor(endWall / 1000) * 1000 - 2000;
      if (to <= from) throw new Error(`window of ${params.windowS} s too short`);
      const slots = r.samples['fire slot'] ?? [];
      const lags = (r.samples.fire ?? []).filter((_, i) => slots[i]! >= from && slots[i]! < to);
      record(FIRES, lags.length / ((to - from) / 1000), `expected ${s}/s`);
      record(
        LAG_P50,
        percentile(lags, 50),
        "lag: slot → handler start (wall clock); the leader's cron loop ticks every second",
      );
      record(LAG_P99, percentile(lags, 99));
    },
  },
  {
    id: 'cron-catch-up',
    workload: 'features: cron catch-up',
    name: (q) => `${q ? 50 : 200} per-minute schedules × ${MISSED_SLOTS} missed slots`,
    systems: ['taskq', 'graphile'],
    params: (q) => ({ schedules: q ? 50 : 200 }),
    async run({ proc, params, record }) {
      const s = params.schedules!;
      const t0 = await goTimed(proc);
      await expect(proc, 'backfill', s * MISSED_SLOTS, 60_000);
      const r = await proc.stop();
      const ms = positive(at(r, 'last', 'backfill') - t0, 'catch-up');
      record(CATCH_UP, ms, 'from the worker start (both fire missed slots at their start)');
      record(SLOTS_RATE, (s * MISSED_SLOTS) / (ms / 1000));
    },
  },
  {
    id: 'batch',
    workload: 'features: batch fan-out and finalize',
    name: (q) => `1 batch of ${q ? 500 : 1000} children + finalizer`,
    systems: ['taskq', 'bullmq-redis'],
    params: (q) => ({ children: q ? 500 : 1000 }),
    async run({ proc, params, record, producer }) {
      const p = producer as TaskqProducer | BullmqProducer;
      await proc.go();
      // A small batch first: statements planned, scripts loaded, connections open.
      await p.enqueueBatchWithFinalizer(10);
      await expect(proc, 'final', 1, 30_000);
      proc.reset();
      const t0 = nowMsHere();
      await p.enqueueBatchWithFinalizer(params.children!);
      await expect(proc, 'final', 1, 60_000);
      const r = await proc.stop();
      if ((r.counts.child ?? 0) !== params.children)
        throw new Error(`${r.counts.child ?? 0} children ran, expected ${params.children}`);
      const ms = positive(r.samples.final![0]! - t0, 'finalize');
      record(
        FINALIZE,
        ms,
        producer.id === 'taskq'
          ? 'the finalizer runs at once and snoozes (waitForBatch, default 10 s) until the batch ends, which makes it pending'
          : 'the parent becomes ready when its last child completes',
      );
      record(CHILDREN_RATE, params.children! / (ms / 1000));
    },
  },
  {
    id: 'sub-jobs',
    workload: 'features: sub-jobs',
    name: (q) => (q ? '20 parents × 50 children' : '50 parents × 100 children'),
    systems: ['taskq', 'graphile', 'bullmq-redis'],
    params: (q) => ({ parents: q ? 20 : 50, children: q ? 50 : 100 }),
    async run({ proc, params, record, producer }) {
      const p = producer as TaskqProducer | GraphileProducer | BullmqProducer;
      const total = params.parents! * params.children!;
      await proc.go();
      const t0 = nowMsHere();
      await p.enqueueParents(params.parents!, params.children!);
      await expect(proc, 'child', total, 90_000);
      const r = await proc.stop();
      const ms = positive(at(r, 'last', 'child') - t0, 'sub-jobs');
      record(CHILDREN_RATE, total / (ms / 1000), 'parents enqueue call → last child start');
      record(WORKER_CPU_CHILD, r.cpuMicros / total);
    },
  },
  {
    id: 'retries',
    workload: 'features: retries with backoff',
    name: (q) => `${q ? 1000 : 5000} jobs, first attempt fails`,
    systems: ['taskq', 'graphile', 'bullmq-redis'],
    params: (q) => ({ jobs: q ? 1000 : 5000 }),
    async run({ proc, params, record, note, producer }) {
      const p = producer as TaskqProducer | GraphileProducer | BullmqProducer;
      const n = params.jobs!;
      await p.enqueueFlaky(n);
      await proc.go();
      await expect(proc, 'done', n, 120_000);
      const r = await proc.stop();
      const ms = positive(at(r, 'last', 'done') - at(r, 'first', 'attempt'), 'retries');
      record(RETRY_DONE, ms);
      record(ATTEMPTS_RATE, (r.counts.attempt ?? 0) / (ms / 1000));
      record(WORKER_CPU_ATTEMPT, r.cpuMicros / (r.counts.attempt ?? 1));
      note(
        RETRY_DONE,
        p.id === 'graphile'
          ? 'backoff fixed by the library: exp(1) ≈ 2.7 s'
          : `backoff fixed ${BACKOFF_MS} ms${p.id === 'taskq' ? ', jitter 0' : ''}`,
      );
    },
  },
  {
    id: 'rate-limit',
    workload: 'features: rate-limited actor',
    name: (q) => `${q ? 1000 : 3000} jobs, limit ${RATE}/s, burst ${BURST}`,
    systems: ['taskq', 'bullmq-redis'],
    params: (q) => ({ jobs: q ? 1000 : 3000 }),
    async run({ proc, params, record, producer }) {
      const p = producer as TaskqProducer | BullmqProducer;
      const n = params.jobs!;
      await p.enqueueLimited(n);
      await proc.go();
      await expect(proc, 'job', n, 60_000);
      const r = await proc.stop();
      // The first BURST jobs go at once; the rest at the limit: (n − BURST) jobs over the span.
      const ms = positive(at(r, 'last', 'job') - at(r, 'first', 'job'), 'rate limit');
      const achieved = (n - BURST) / (ms / 1000);
      record(ACHIEVED, achieved, `(jobs − ${BURST}) / (last start − first start)`);
      record(RATE_ERROR, ((achieved - RATE) / RATE) * 100, 'signed: above 0 the limit was exceeded');
    },
  },
];

/** `nowMs()` in the harness (the clock every worker process reads too). */
function nowMsHere(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Says go, returning the harness's time just before. */
async function goTimed(proc: FeatureProcess): Promise<number> {
  const t0 = nowMsHere();
  await proc.go();
  return t0;
}

function producerFor(system: FeatureSystem): Producer {
  if (system === 'taskq') return new TaskqProducer();
  if (system === 'graphile') return new GraphileProducer();
  return new BullmqProducer();
}

/**
 * The start of the current minute (wall-clock ms): the catch-up's missed slots are the 10 minutes
 * before it. A minute that ends during the run changes nothing: only slots before it are counted.
 */
function catchUpMinute(): number {
  return Math.floor(Date.now() / 60_000) * 60_000;
}

async function runCase(ctx: BenchContext, c: Case, system: FeatureSystem): Promise<void> {
  const quick = ctx.opts.quick;
  const caseName = c.name(quick);
  const producer = producerFor(system);
  const params = c.params(quick);
  let proc: FeatureProcess | null = null;
  const record = (metric: MetricSpec, value: number, note?: string) =>
    ctx.results.record(c.workload, caseName, metric, system, value, note);
  try {
    await withTimeout(
      producer instanceof TaskqProducer ? producer.setup(params) : producer.setup(),
      60_000,
      `${system} setup`,
    );
    if (c.id === 'cron-catch-up') {
      params.catchUpMinute = catchUpMinute();
      await (producer as TaskqProducer | GraphileProducer).prepareCatchUp(
        params.schedules!,
        params.catchUpMinute,
      );
    }
    await checkpoint();
    proc = await FeatureProcess.load({
      case: c.id,
      system,
      namespace: producer.namespace,
      concurrency: CONCURRENCY,
      params,
    });
    await c.run({
      producer,
      proc,
      params,
      quick,
      record,
      note: (metric, note) => ctx.results.note(c.workload, caseName, metric, system, note),
    });
    const s = ctx.results.series.filter(
      (x) => x.workload === c.workload && x.case === caseName && x.system === system,
    );
    ctx.log(
      `  ${c.workload} [${caseName}] ${system}: ${s.map((x) => `${x.metric} ${x.values.at(-1)?.toFixed(1)}`).join(', ')}`,
    );
  } catch (err) {
    const first = ctx.results.series.find((x) => x.workload === c.workload && x.case === caseName);
    const metric: MetricSpec = first ?? m('result', 'higher');
    ctx.results.fail(c.workload, caseName, metric, system, shortError(err));
    ctx.log(`  ${c.workload} [${caseName}] ${system}: FAILED ${shortError(err)}`);
  } finally {
    proc?.kill();
    await withTimeout(producer.teardown(), 30_000, `${system} teardown`).catch(() => undefined);
  }
}

/** Runs every case on the systems of this run that have the feature. */
export async function runFeatures(ctx: BenchContext): Promise<void> {
  const only = process.env.BENCH_FEATURES_CASES?.split(',');
  for (let round = 0; round < ctx.opts.rounds; round++) {
    for (const c of CASES) {
      if (only && !only.includes(c.id)) continue;
      const systems = c.systems.filter(
        (s) => ctx.systems.includes(s) && (s !== 'bullmq-redis' || ctx.redisAvailable),
      );
      // TaskQ's token bucket lives in Redis too.
      const usable = c.id === 'rate-limit' && !ctx.redisAvailable ? [] : systems;
      if (round === 0 && c.id === 'cron' && ctx.systems.includes('graphile'))
        ctx.results.placeholder(
          c.workload,
          c.name(ctx.opts.quick),
          'graphile-worker: not measured: its crontab fires per minute at most, so a window of seconds holds one slot at best; see the catch-up case',
        );
      // A system asked for but unavailable is said so; one left out of --systems is not.
      const missing = c.systems.filter((s) => ctx.opts.systems.includes(s) && !usable.includes(s));
      if (round === 0 && missing.length > 0)
        ctx.results.placeholder(
          c.workload,
          c.name(ctx.opts.quick),
          `not measured on ${missing.join(', ')}: unavailable in this run (package or service down)`,
        );
      for (const system of rotate(usable, round)) await runCase(ctx, c, system);
    }
  }
}
