/**
 * Benchmark harness entry: `npm run bench` (full) or `npm run bench -- --quick` (CI smoke test).
 *
 * Options:
 *   --quick               small N, one round, no 1M-row scale and no 100k-job memory run
 *   --only <w[,w…]>       workloads: enqueue, processing, latency, scale, memory, taskq-features,
 *                         features (BENCH_FEATURES_CASES=cron,batch,… runs some of its cases)
 *   --systems <s[,s…]>    taskq, taskq-tuned, graphile, graphile-tuned, pgboss, bullmq-redis, bullmq-pg,
 *                         graphile-018-tuned, pgboss12 (the last two run under Node 22: named here,
 *                         bench/node22/ is installed on demand; in the default list they run only
 *                         when it is installed already, else they are listed as unavailable).
 *                         Default: all of them for --quick; a full run leaves out pgboss and
 *                         bullmq-pg unless named (systems/index.ts says why)
 *   --rounds <n>          rounds per measurement (default 3 full, 1 quick)
 *   --cpu-prof            write V8 CPU profiles of TaskQ worker processes (processing, round 1)
 *   --load-rate <n>       latency under load: offer every system n jobs/s (default: half of its own
 *                         measured throughput); reported as its own case, not against the targets
 *   --processing-jobs <n> processing: drain n jobs per case (default 20,000); reported as cases of
 *                         their own ("…, n jobs"), not against the targets
 *   --processing-warmup <n>
 *                         processing: each worker process first runs n jobs more, and the window
 *                         opens once all have; cases of their own ("…, warm"), rate only
 *   --out <dir>           results directory (default bench/results)
 *
 * TaskQ runs from its compiled package (`dist/`, rebuilt first when `src/` is newer), as the peers run
 * from theirs; `BENCH_TASKQ_FROM=src` runs its sources through tsx instead (see
 * systems/taskq-package.ts).
 *
 * Writes <out>/<timestamp>.json and <out>/latest.md and prints the markdown. Exits 1 only when the
 * harness itself breaks or TaskQ (defaults) failed a measurement; a failing or unavailable peer is
 * reported and the run goes on.
 */
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';
import pg from 'pg';

import { PG_DSN, REDIS_DB, REDIS_HOST, REDIS_PORT, errorMessage } from './lib/common.js';
import { shortError, withTimeout, type BenchContext, type BenchOptions } from './lib/context.js';
import { node22Installed } from './lib/node22.js';
import { describeSystems, renderMarkdown, type Environment, type Report } from './lib/report.js';
import { Results } from './lib/results.js';
import { median } from './lib/stats.js';
import { checkTargets } from './lib/targets.js';
import {
  createSystem,
  isSystemId,
  NAMED_ONLY_SYSTEM_IDS,
  NODE22_SYSTEM_IDS,
  SYSTEM_IDS,
  type SystemId,
} from './systems/index.js';
import { ensureTaskqBuild, taskqSource } from './systems/taskq-package.js';
import type { SystemAdapter } from './systems/types.js';
import { runEnqueue } from './workloads/enqueue.js';
import { runFeatures } from './workloads/features.js';
import { runLatency } from './workloads/latency.js';
import { runMemory } from './workloads/memory.js';
import { runProcessing } from './workloads/processing.js';
import { runScale } from './workloads/scale.js';
import { runTaskqFeatures } from './workloads/taskq-features.js';

const WORKLOADS: Record<string, (ctx: BenchContext) => Promise<void>> = {
  enqueue: runEnqueue,
  processing: runProcessing,
  latency: runLatency,
  scale: runScale,
  memory: runMemory,
  'taskq-features': runTaskqFeatures,
  features: runFeatures,
};

const HERE = dirname(fileURLToPath(import.meta.url));

function usage(msg: string): never {
  process.stderr.write(`bench: ${msg}\nsee the header of bench/run.ts for the options\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): BenchOptions & { out: string; systemsNamed: boolean } {
  let quick = false;
  let rounds: number | null = null;
  let only: string[] | null = null;
  let systems: SystemId[] = [...SYSTEM_IDS];
  let systemsNamed = false;
  let cpuProf = false;
  let loadRate: number | null = null;
  let processingJobs: number | null = null;
  let processingWarmup = 0;
  let out = join(HERE, 'results');
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') quick = true;
    else if (a === '--rounds') {
      rounds = Number(value());
      if (!Number.isInteger(rounds) || rounds < 1) usage('--rounds must be a positive integer');
    } else if (a === '--only') {
      only = value().split(',').filter(Boolean);
      for (const w of only) if (!(w in WORKLOADS)) usage(`unknown workload ${w}`);
    } else if (a === '--systems') {
      const list = value().split(',').filter(Boolean);
      for (const s of list)
        if (!isSystemId(s)) usage(`unknown system ${s} (known: ${SYSTEM_IDS.join(', ')})`);
      systems = list as SystemId[];
      systemsNamed = true;
    } else if (a === '--load-rate') {
      loadRate = Number(value());
      if (!Number.isFinite(loadRate) || loadRate <= 0)
        usage('--load-rate must be a positive number of jobs/s');
    } else if (a === '--processing-jobs') {
      processingJobs = Number(value());
      if (!Number.isInteger(processingJobs) || processingJobs < 1)
        usage('--processing-jobs must be a positive integer');
    } else if (a === '--processing-warmup') {
      processingWarmup = Number(value());
      if (!Number.isInteger(processingWarmup) || processingWarmup < 1)
        usage('--processing-warmup must be a positive integer');
    } else if (a === '--cpu-prof') cpuProf = true;
    else if (a === '--out') out = resolve(value());
    else usage(`unknown option ${a}`);
  }
  if (!systemsNamed && !quick) systems = systems.filter((id) => !NAMED_ONLY_SYSTEM_IDS.includes(id));
  return {
    quick,
    rounds: rounds ?? (quick ? 1 : 3),
    only,
    systems,
    cpuProfDir: cpuProf ? join(out, 'profiles') : null,
    loadRate,
    processingJobs,
    processingWarmup,
    out,
    systemsNamed,
  };
}

async function postgresVersion(): Promise<string> {
  const c = new pg.Client({ connectionString: PG_DSN, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    const r = await c.query<{ v: string }>(`SELECT current_setting('server_version') AS v`);
    return `PostgreSQL ${r.rows[0]?.v ?? '?'}`;
  } finally {
    await c.end();
  }
}

async function redisVersion(): Promise<string> {
  const r = new Redis({
    host: REDIS_HOST,
    port: REDIS_PORT,
    db: REDIS_DB,
    lazyConnect: true,
    connectTimeout: 3000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => undefined);
  try {
    await r.connect();
    const info = await r.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  } finally {
    r.disconnect();
  }
}

function commit(): string {
  try {
    const sha = execSync('git rev-parse --short HEAD', { cwd: HERE, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    const dirty = execSync('git status --porcelain -- src', {
      cwd: HERE,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .trim();
    return dirty ? `${sha} (src/ modified)` : sha;
  } catch {
    return 'unknown commit';
  }
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const log = (msg: string): void => {
    process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);
  };
  mkdirSync(opts.out, { recursive: true });

  // TaskQ runs from its compiled package, as users run it; build it first if src/ changed since.
  log(ensureTaskqBuild());

  // Services and peers: whatever is missing is reported, the rest runs.
  let pgInfo = 'PostgreSQL unavailable';
  let pgError: string | null = null;
  try {
    pgInfo = await withTimeout(postgresVersion(), 10_000, 'PostgreSQL');
  } catch (err) {
    pgError = shortError(err);
  }
  let redisInfo = 'unavailable';
  let redisError: string | null = null;
  try {
    redisInfo = await withTimeout(redisVersion(), 10_000, 'Redis');
  } catch (err) {
    redisError = shortError(err);
  }
  const unavailable: Report['unavailable'] = [];
  const adapters: SystemAdapter[] = [];
  const available: SystemId[] = [];
  for (const id of opts.systems) {
    try {
      // The default list takes the Node 22 systems only when bench/node22/ is installed: a full
      // run or CI downloads nothing it was not asked for.
      if (!opts.systemsNamed && NODE22_SYSTEM_IDS.includes(id) && !node22Installed())
        throw new Error(
          'bench/node22 is not installed (npm ci --prefix bench/node22, or name the system in --systems to install it on demand)',
        );
      const a = await createSystem(id);
      if (a.store === 'postgres' && pgError) throw new Error(`PostgreSQL unreachable: ${pgError}`);
      if (a.store === 'redis' && redisError) throw new Error(`Redis unreachable: ${redisError}`);
      adapters.push(a);
      available.push(id);
    } catch (err) {
      unavailable.push({ id, reason: shortError(err) });
      log(`${id}: unavailable (${errorMessage(err)})`);
    }
  }

  const results = new Results();
  const ctx: BenchContext = { opts, results, systems: available, redisAvailable: redisError === null, log };
  const env: Environment = {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    node: process.versions.node,
    postgres: pgInfo,
    redis: redisInfo,
    commit: process.env.BENCH_COMMIT ?? commit(),
    taskqFrom: taskqSource() === 'dist' ? 'dist/ (its compiled package)' : 'src/ through tsx',
    loadAvg: { min: 0, median: 0, max: 0, samples: [] },
  };
  log(`bench ${opts.quick ? '--quick' : 'full'}: rounds ${opts.rounds}, systems ${available.join(', ')}`);

  env.loadAvg.samples.push(loadavg()[0] ?? 0);
  const loadTimer = setInterval(() => env.loadAvg.samples.push(loadavg()[0] ?? 0), 10_000);
  let harnessError: string | null = null;
  for (const [name, run] of Object.entries(WORKLOADS)) {
    if (opts.only && !opts.only.includes(name)) continue;
    log(`workload ${name}`);
    try {
      await run(ctx);
    } catch (err) {
      harnessError = `${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
      log(`workload ${name} broke: ${harnessError}`);
    }
  }

  clearInterval(loadTimer);
  const loads = env.loadAvg.samples;
  env.loadAvg.min = Math.min(...loads);
  env.loadAvg.max = Math.max(...loads);
  env.loadAvg.median = median(loads);
  const report: Report = {
    env,
    options: opts,
    systems: describeSystems(adapters),
    unavailable,
    series: results.summaries(),
    placeholders: results.placeholders,
    targets: checkTargets(results),
    durationS: (Date.now() - started) / 1000,
  };
  const md = renderMarkdown(report);
  const stamp = env.date.replace(/[:.]/g, '-');
  writeFileSync(join(opts.out, `${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(opts.out, 'latest.md'), md);
  process.stdout.write(`${md}\n`);
  log(`wrote ${join(opts.out, `${stamp}.json`)} and latest.md`);

  const taskqFailures = report.series.filter((s) => s.system === 'taskq' && s.errors.length > 0);
  if (harnessError) {
    process.stderr.write(`bench: harness error: ${harnessError}\n`);
    process.exitCode = 1;
  } else if (taskqFailures.length > 0) {
    process.stderr.write(
      `bench: TaskQ failed: ${taskqFailures.map((s) => `${s.workload}/${s.case}: ${s.errors[0]}`).join('; ')}\n`,
    );
    process.exitCode = 1;
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  // Peer clients may keep sockets or timers alive; the run is over.
  .finally(() => setTimeout(() => process.exit(), 100));
