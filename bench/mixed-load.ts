// A mixed, production-like load for minutes, sampled over time and plotted (issue 68).
//
//   npx tsx bench/mixed-load.ts [--minutes 10] [--rate 1500] [--interval 10] [--processes 2]
//                               [--concurrency 10] [--svg-dir docs/performance] [--prune-retention 60]
//                               [--no-prune] [--vacuum 60] [--seed 1]
//   npx tsx bench/mixed-load.ts --replot bench/results/mixed-<ts>.json [--svg-dir DIR]
//
// This process is the producer: an open-loop load of `--rate` jobs/s (the mix of bench/lib/mixed-mix.ts:
// kinds, priorities, a second queue, batch and single enqueues) through TaskQ's public client, to
// `--processes` worker processes (bench/mixed-worker.ts, TaskQ Worker, maxConcurrency
// `--concurrency`). Every `--interval` seconds it records completed jobs/s, enqueue → start latency
// p50/p99 of the interval's first attempts, each worker's RSS and heap, Postgres CPU, the backlog and
// the jobs table's size. At the end: the series as JSON (bench/results/mixed-<ts>.json), three SVG
// charts (throughput, latency, memory) and a verdict on growth (bench/lib/mixed-verdict.ts). The exit
// code is 1 only on errors (a failed enqueue, a worker process that died, a job that failed for
// good), never on times.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import pg from 'pg';

import type { TaskQ as TaskQInstance } from '../src/client/taskq.js';
import type { EnqueueItem } from '../src/index.js';
import { checkpoint } from './lib/checkpoint.js';
import { errorMessage, nowMs, PG_DSN, sleep, uniqueSuffix } from './lib/common.js';
import { MixedFleet, type MixedReport } from './lib/mixed-ipc.js';
import {
  BATCH_SHARE,
  drawJob,
  HIGH_PRIORITY,
  HIGH_PRIORITY_SHARE,
  MIX,
  mixedActors,
  seededRandom,
  type MixedPayload,
} from './lib/mixed-mix.js';
import { formatVerdict, mixedVerdict, type MixedSample } from './lib/mixed-verdict.js';
import { postgresCpuMicros } from './lib/pg-cpu.js';
import { busyShare, machineCpu, processCpuMicros, type MachineCpu } from './lib/proc-stat.js';
import { percentile } from './lib/stats.js';
import { CHART_PALETTE, renderLineChart } from './lib/svg-line-chart.js';
import { ensureTaskqBuild, loadTaskq } from './systems/taskq-package.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '1500' },
    interval: { type: 'string', default: '10' },
    processes: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '10' },
    'svg-dir': { type: 'string', default: join(ROOT, 'docs', 'performance') },
    'prune-retention': { type: 'string', default: '60' },
    'no-prune': { type: 'boolean', default: false },
    vacuum: { type: 'string', default: '60' },
    seed: { type: 'string', default: '1' },
    replot: { type: 'string' },
  },
});

function positive(name: string, raw: string | undefined, integer = false): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
    throw new Error(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got ${raw}`);
  return n;
}

const MINUTES = positive('minutes', args.minutes);
const RATE = positive('rate', args.rate);
const INTERVAL_MS = positive('interval', args.interval) * 1000;
const PROCESSES = positive('processes', args.processes, true);
const CONCURRENCY = positive('concurrency', args.concurrency, true);
const SVG_DIR = resolve(args['svg-dir']!);
/**
 * Seconds between the load's own `VACUUM (ANALYZE)` of the job tables, when the server's autovacuum
 * is off (0: never). Over minutes a queue's tables need vacuuming as production servers do by
 * autovacuum; this machine's server runs without it (every benchmark gets a fresh schema), and
 * without vacuum the dead versions of every finished job pile up in the tables and their indexes.
 */
const VACUUM_SEC = Number(args.vacuum);
if (!Number.isFinite(VACUUM_SEC) || VACUUM_SEC < 0)
  throw new Error('--vacuum must be a number of seconds ≥ 0');
const PRUNE_RETENTION_MS = args['no-prune']
  ? null
  : positive('prune-retention', args['prune-retention']) * 1000;
const SEED = positive('seed', args.seed, true);

/** The producer wakes this often and offers what the rate says is due since its start. */
const TICK_MS = 10;
/**
 * Enqueue calls in flight at most, twice the client's pool: past it the producer waits for calls
 * to return and records how far behind its schedule it is (`producerLag`), rather than queueing
 * calls on the pool, where their wait would count as enqueue time without bound.
 */
const MAX_IN_FLIGHT = 16;
/** Client pool: single enqueues at ~500/s and one batch call per tick. */
const CLIENT_POOL = 8;
/** How long the workers get to finish the backlog after the load stops. */
const DRAIN_TIMEOUT_MS = 60_000;

function log(line: string): void {
  process.stderr.write(`[mixed] ${line}\n`);
}

/** Per-interval accumulators, finalised into a {@link MixedSample} one interval late. */
interface Bucket {
  latencies: number[];
  high: number[];
  /** Enqueue call durations (ms), by the call's start. */
  calls: number[];
  done: number;
  thrown: number;
  offered: number;
}

async function main(): Promise<number> {
  log(ensureTaskqBuild());
  const pkg = await loadTaskq();
  const { TaskQ, PgDriver, Migrator, batchItem } = pkg.main;
  const schema = `bench_mixed_${uniqueSuffix()}`;
  const admin = new pg.Pool({ connectionString: PG_DSN, max: 2 });
  let tq: TaskQInstance | null = null;
  let fleet: MixedFleet | null = null;
  const errors: string[] = [];
  try {
    const driver = new PgDriver({ connection: PG_DSN, maxPoolSize: 2 });
    try {
      await new Migrator(driver, { schema }).up();
    } finally {
      await driver.close();
    }
    tq = await TaskQ.open({ dsn: PG_DSN, schema, maxPoolSize: CLIENT_POOL });
    const client = tq;
    const actors = mixedActors(pkg, { onStart() {}, onDone() {}, onThrow() {} });
    // Stands in for autovacuum (see VACUUM_SEC) while the load runs; stopped before the drain ends.
    const autovacuum = (await admin.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]!.autovacuum;
    const vacuuming = VACUUM_SEC > 0 && autovacuum === 'off';
    let vacuumRuns = 0;
    const vacuumTimer = vacuuming
      ? setInterval(() => {
          const tables = ['jobs', 'job_attempt_log', 'job_event_log', 'jobs_archive'].map(
            (t) => `"${schema}".${t}`,
          );
          void admin
            .query(`VACUUM (ANALYZE) ${tables.join(', ')}`)
            .then(() => void vacuumRuns++)
            .catch((err: unknown) => void errors.push(`vacuum failed: ${errorMessage(err)}`));
        }, VACUUM_SEC * 1000)
      : null;
    log(
      vacuuming
        ? `the server's autovacuum is off: the load vacuums its tables every ${VACUUM_SEC} s instead`
        : `vacuum: ${autovacuum === 'off' ? 'off (--vacuum 0)' : "the server's autovacuum"}`,
    );
    const checkpointed = await checkpoint();
    if (!checkpointed) log('no CHECKPOINT (the role lacks pg_checkpoint); going on');

    const buckets: Bucket[] = [];
    const bucket = (i: number): Bucket =>
      (buckets[i] ??= { latencies: [], high: [], calls: [], done: 0, thrown: 0, offered: 0 });
    let t0 = 0;
    const indexOf = (t: number) => Math.max(0, Math.floor((t - t0) / INTERVAL_MS));
    let failedForGood = 0;
    let totalDone = 0;
    const onReport = (_p: number, r: MixedReport) => {
      const now = indexOf(nowMs());
      for (let i = 0; i < r.starts.length; i += 3) {
        const b = bucket(indexOf(r.starts[i]!));
        const latency = r.starts[i + 1]!;
        if (latency < 0 && errors.length < 5)
          errors.push(`negative latency ${latency} ms: the clocks disagree`);
        b.latencies.push(latency);
        if (r.starts[i + 2] === 1) b.high.push(latency);
      }
      bucket(now).done += r.done;
      bucket(now).thrown += r.thrown;
      totalDone += r.done;
      failedForGood += r.failedForGood;
    };
    fleet = await MixedFleet.start(
      { schema, concurrency: CONCURRENCY, pruneRetentionMs: PRUNE_RETENTION_MS },
      PROCESSES,
      onReport,
    );
    const workers = fleet;
    log(
      `schema ${schema}; ${PROCESSES} worker processes × c=${CONCURRENCY}; ${RATE} jobs/s for ${MINUTES} min, sampled every ${INTERVAL_MS / 1000} s; prune ${PRUNE_RETENTION_MS === null ? 'off' : `every minute, retention ${PRUNE_RETENTION_MS / 1000} s`}`,
    );

    // Readings taken at each interval's end.
    const samples: MixedSample[] = [];
    const ends: {
      pgCpu: number | null;
      workerCpu: (number | null)[];
      producerCpu: NodeJS.CpuUsage;
      machine: MachineCpu | null;
      memory: ReturnType<MixedFleet['memory']>;
      producerRss: number;
      pending: number;
      scheduled: number;
      running: number;
      jobsTableBytes: number;
      lag: number;
    }[] = [];
    const jobsTable = `"${schema}".jobs`;
    const readStore = async () => {
      const counts = await admin.query<{ status: string; n: number }>(
        `SELECT status::text AS status, count(*)::int AS n FROM ${jobsTable}
         WHERE status IN ('pending', 'scheduled', 'running') GROUP BY 1`,
      );
      const by = (s: string) => counts.rows.find((r) => r.status === s)?.n ?? 0;
      const size = await admin.query<{ b: string }>(`SELECT pg_total_relation_size($1::regclass) AS b`, [
        jobsTable,
      ]);
      return {
        pending: by('pending'),
        scheduled: by('scheduled'),
        running: by('running'),
        jobsTableBytes: Number(size.rows[0]!.b),
      };
    };
    let due = 0;
    let offered = 0;
    const startPg = postgresCpuMicros();
    const startMachine = machineCpu();
    const startWorkerCpu = workers.pids.map((pid) => processCpuMicros(pid));
    const startProducerCpu = process.cpuUsage();
    const takeReading = async () => {
      const pgCpu = postgresCpuMicros();
      const machine = machineCpu();
      const store = await readStore();
      ends.push({
        pgCpu,
        machine,
        workerCpu: workers.pids.map((pid) => processCpuMicros(pid)),
        producerCpu: process.cpuUsage(),
        memory: workers.memory(),
        producerRss: process.memoryUsage.rss(),
        ...store,
        lag: Math.max(0, due - offered),
      });
    };
    /** Builds the sample of interval i (its reports have all arrived once interval i + 1 has ended). */
    const finalise = (i: number) => {
      const b = bucket(i);
      const end = ends[i]!;
      const prevPg = i === 0 ? startPg : ends[i - 1]!.pgCpu;
      const prevMachine = i === 0 ? startMachine : ends[i - 1]!.machine;
      const prevWorkerCpu = i === 0 ? startWorkerCpu : ends[i - 1]!.workerCpu;
      const prevProducer = i === 0 ? startProducerCpu : ends[i - 1]!.producerCpu;
      const cpuPercent = (a: number | null | undefined, b: number | null | undefined) =>
        a != null && b != null ? ((b - a) / 1000 / INTERVAL_MS) * 100 : null;
      const sec = INTERVAL_MS / 1000;
      const p = (v: number[], q: number) => (v.length ? percentile(v, q) : null);
      samples.push({
        tSec: ((i + 1) * INTERVAL_MS) / 1000,
        offeredPerSec: b.offered / sec,
        completedPerSec: b.done / sec,
        thrownPerSec: b.thrown / sec,
        latencyP50Ms: p(b.latencies, 50),
        latencyP99Ms: p(b.latencies, 99),
        highP50Ms: p(b.high, 50),
        highP99Ms: p(b.high, 99),
        latencyN: b.latencies.length,
        enqueueCallP50Ms: p(b.calls, 50),
        enqueueCallP99Ms: p(b.calls, 99),
        rssBytes: end.memory.map((m) => m.rss),
        heapUsedBytes: end.memory.map((m) => m.heapUsed),
        producerRssBytes: end.producerRss,
        workerCpuPercent: end.workerCpu.map((c, w) => cpuPercent(prevWorkerCpu[w], c)),
        producerCpuPercent:
          cpuPercent(
            prevProducer.user + prevProducer.system,
            end.producerCpu.user + end.producerCpu.system,
          ) ?? 0,
        pgCpuPercent:
          end.pgCpu !== null && prevPg !== null ? ((end.pgCpu - prevPg) / 1000 / INTERVAL_MS) * 100 : null,
        machineBusyPercent: busyShare(prevMachine, end.machine) ?? null,
        pending: end.pending,
        scheduled: end.scheduled,
        running: end.running,
        jobsTableBytes: end.jobsTableBytes,
        producerLag: end.lag,
      });
      // The interval's latencies are summarised: free them (10 minutes at 2,000/s would be 1.2 M).
      b.latencies = [];
      b.high = [];
      b.calls = [];
      const s = samples[samples.length - 1]!;
      log(
        `t=${s.tSec}s offered ${s.offeredPerSec.toFixed(0)}/s done ${s.completedPerSec.toFixed(0)}/s p50/p99 ${fmt(s.latencyP50Ms)}/${fmt(s.latencyP99Ms)} ms (high ${fmt(s.highP99Ms)}, call ${fmt(s.enqueueCallP99Ms)}) lag ${s.producerLag} cpu w ${s.workerCpuPercent.map((c) => fmt(c, 0)).join('/')} p ${s.producerCpuPercent.toFixed(0)} % rss ${s.rssBytes.map((r) => (r / 2 ** 20).toFixed(0)).join('/')} MB pg ${fmt(s.pgCpuPercent, 0)} % backlog ${s.pending} jobs ${(s.jobsTableBytes / 2 ** 20).toFixed(1)} MB`,
      );
    };

    // The load: open loop, `due` follows the clock; the producer offers what is due each tick.
    const random = seededRandom(SEED);
    const intervals = Math.round((MINUTES * 60_000) / INTERVAL_MS);
    t0 = nowMs();
    const tEnd = t0 + intervals * INTERVAL_MS;
    let inFlight = 0;
    let nextReading = 1;
    let readingBusy: Promise<void> = Promise.resolve();
    const failEnqueue = (err: unknown) => {
      if (errors.length < 5) errors.push(`enqueue failed: ${errorMessage(err)}`);
    };
    while (errors.length === 0) {
      const now = nowMs();
      if (now >= t0 + nextReading * INTERVAL_MS) {
        // Reading i ends interval i - 1; interval i - 2's reports are complete by now.
        const i = nextReading - 1;
        nextReading++;
        readingBusy = readingBusy
          .then(async () => {
            await takeReading();
            if (i >= 1) finalise(i - 1);
          })
          .catch((err: unknown) => void errors.push(`reading failed: ${errorMessage(err)}`));
        if (i + 1 >= intervals) break;
      }
      workers.check();
      due = Math.floor(((Math.min(now, tEnd) - t0) / 1000) * RATE);
      const batch: EnqueueItem[] = [];
      while (offered < due && inFlight < MAX_IN_FLIGHT) {
        const job = drawJob(random);
        const payload: MixedPayload = job.high ? { k: job.k, t: nowMs(), h: 1 } : { k: job.k, t: nowMs() };
        const ref = actors[job.k]!;
        const options = job.high ? { priority: HIGH_PRIORITY } : undefined;
        offered++;
        bucket(indexOf(now)).offered++;
        if (job.batched) {
          batch.push(batchItem(ref as (typeof actors)[0], payload, options));
        } else {
          inFlight++;
          client
            .enqueue(ref as (typeof actors)[0], payload, options)
            .then(() => void bucket(indexOf(payload.t)).calls.push(nowMs() - payload.t), failEnqueue)
            .finally(() => inFlight--);
        }
      }
      if (batch.length > 0) {
        // The batch's items were stamped as they were drawn, just before this call.
        inFlight++;
        const called = nowMs();
        client
          .enqueueBatch(batch)
          .then(() => void bucket(indexOf(called)).calls.push(nowMs() - called), failEnqueue)
          .finally(() => inFlight--);
      }
      await sleep(Math.max(1, t0 + Math.ceil((nowMs() - t0) / TICK_MS) * TICK_MS - nowMs()));
    }
    await readingBusy;
    if (vacuumTimer) {
      clearInterval(vacuumTimer);
      log(`vacuumed ${vacuumRuns} times`);
    }
    while (inFlight > 0) await sleep(5);
    if (errors.length > 0) throw new Error(errors.join('; '));
    log(`load stopped: ${offered} jobs offered; draining`);

    // Drain: every offered job done (or the timeout), then the last interval's reports are in.
    const drainStart = Date.now();
    while (totalDone < offered && Date.now() - drainStart < DRAIN_TIMEOUT_MS) {
      workers.check();
      await sleep(100);
    }
    const drainedMs = Date.now() - drainStart;
    const drained = totalDone >= offered;
    await workers.stop();
    fleet = null;
    finalise(intervals - 1);
    const final = await readStore();

    const totalSec = (intervals * INTERVAL_MS) / 1000;
    const verdict = mixedVerdict(samples, totalSec, RATE);
    const verdictLines = formatVerdict(verdict);
    if (failedForGood > 0)
      errors.push(`${failedForGood} job(s) failed for good (the mix retries every failure once)`);

    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const resultsDir = join(ROOT, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const jsonPath = join(resultsDir, `mixed-${stamp}.json`);
    writeFileSync(
      jsonPath,
      JSON.stringify(
        {
          settings: {
            minutes: MINUTES,
            rate: RATE,
            intervalSec: INTERVAL_MS / 1000,
            processes: PROCESSES,
            concurrency: CONCURRENCY,
            pruneRetentionSec: PRUNE_RETENTION_MS === null ? null : PRUNE_RETENTION_MS / 1000,
            seed: SEED,
            mix: MIX,
            highPriorityShare: HIGH_PRIORITY_SHARE,
            batchShare: BATCH_SHARE,
            taskqFrom: process.env.BENCH_TASKQ_FROM ?? 'dist',
          },
          offered,
          completed: totalDone,
          drained,
          drainMs: drainedMs,
          failedForGood,
          finalBacklog: final,
          workerWarnings: workers.warnings,
          samples,
          verdict,
        },
        null,
        2,
      ),
    );
    const svgs = writeCharts(samples, {
      rate: RATE,
      processes: PROCESSES,
      concurrency: CONCURRENCY,
      minutes: MINUTES,
    });
    log(`wrote ${jsonPath} and ${svgs.join(', ')}`);
    const done = drained
      ? `all ${offered} offered jobs done ${(drainedMs / 1000).toFixed(1)} s after the load stopped`
      : `${offered - totalDone} of ${offered} offered jobs not done ${DRAIN_TIMEOUT_MS / 1000} s after the load stopped`;
    process.stdout.write(`${done}\n${verdictLines.join('\n')}\n`);
    if (errors.length > 0) {
      process.stderr.write(`errors: ${errors.join('; ')}\n`);
      return 1;
    }
    return 0;
  } finally {
    fleet?.kill();
    await tq?.close().catch(() => undefined);
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
}

function fmt(v: number | null, digits = 1): string {
  return v === null ? '–' : v.toFixed(digits);
}

/** The three charts of issue 68, x in minutes since the load started. */
/** The settings a chart's title and target line show. */
interface ChartSettings {
  rate: number;
  processes: number;
  concurrency: number;
  minutes: number;
}

function writeCharts(samples: readonly MixedSample[], settings: ChartSettings): string[] {
  const { rate: RATE, processes: PROCESSES, concurrency: CONCURRENCY, minutes: MINUTES } = settings;
  mkdirSync(SVG_DIR, { recursive: true });
  const x = (s: MixedSample) => s.tSec / 60;
  const sub = `target ${RATE.toLocaleString('en-US')} jobs/s, ${PROCESSES} × c=${CONCURRENCY}, ${MINUTES} min`;
  const charts: [string, string][] = [
    [
      'mixed-throughput.svg',
      renderLineChart({
        title: `Mixed load: throughput (${sub})`,
        xLabel: 'minutes since the load started',
        yLabel: 'jobs/s',
        series: [
          { name: 'completed', points: samples.map((s) => [x(s), s.completedPerSec]) },
          {
            name: 'offered (enqueue calls issued)',
            points: samples.map((s) => [x(s), s.offeredPerSec]),
            dashed: true,
          },
          {
            name: 'target rate',
            points: samples.map((s) => [x(s), RATE]),
            color: '#999999',
            dashed: true,
          },
        ],
      }),
    ],
    [
      'mixed-latency.svg',
      renderLineChart({
        title: `Mixed load: enqueue → start latency (${sub})`,
        xLabel: 'minutes since the load started',
        yLabel: 'ms',
        series: [
          { name: 'p50', points: samples.map((s) => [x(s), s.latencyP50Ms]) },
          { name: 'p99', points: samples.map((s) => [x(s), s.latencyP99Ms]) },
          { name: 'p99, high priority', points: samples.map((s) => [x(s), s.highP99Ms]), dashed: true },
          { name: 'enqueue call p99', points: samples.map((s) => [x(s), s.enqueueCallP99Ms]), dashed: true },
        ],
      }),
    ],
    [
      'mixed-memory.svg',
      renderLineChart({
        title: `Mixed load: worker memory (${sub})`,
        xLabel: 'minutes since the load started',
        yLabel: 'MB',
        series: Array.from({ length: PROCESSES }, (_, p) => [
          {
            name: `worker ${p + 1} RSS`,
            color: CHART_PALETTE[p % CHART_PALETTE.length]!,
            points: samples.map((s) => [x(s), (s.rssBytes[p] ?? 0) / 2 ** 20] as const),
          },
          {
            name: `worker ${p + 1} heap used (floor)`,
            color: CHART_PALETTE[p % CHART_PALETTE.length]!,
            points: samples.map((s) => [x(s), (s.heapUsedBytes[p] ?? 0) / 2 ** 20] as const),
            dashed: true,
          },
        ]).flat(),
      }),
    ],
  ];
  return charts.map(([file, svg]) => {
    const path = join(SVG_DIR, file);
    writeFileSync(path, svg);
    return path;
  });
}

/** `--replot <json>`: the charts of a saved run again, without a load. */
function replot(path: string): number {
  const run = JSON.parse(readFileSync(path, 'utf8')) as {
    settings: { rate: number; processes: number; concurrency: number; minutes: number };
    samples: MixedSample[];
  };
  const svgs = writeCharts(run.samples, run.settings);
  log(`wrote ${svgs.join(', ')}`);
  return 0;
}

(args.replot === undefined ? main() : Promise.resolve().then(() => replot(args.replot!))).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
