/**
 * The core of the processing, scale and memory workloads: pre-enqueue N no-op jobs, start the
 * system's worker processes, and time from the first handler start until the store reports every
 * job finished (or a time cap, for systems too slow to finish: then the rate is handler starts over
 * the capped window, and the run is marked partial).
 *
 * With a warm-up (`warmupPerProcess` w), w jobs per process more are enqueued and the window opens
 * once every process has started w handlers: the rate of a fleet whose processes have compiled
 * their hot path, as a fleet that has run for a while is, rather than of processes just started.
 */
import pg from 'pg';

import type { SystemAdapter } from '../systems/types.js';
import { PG_DSN, chunks, clockDisagreement, nowMs, sleep, type BenchPayload } from './common.js';
import { printBackendCpu } from './backend-cpu.js';
import { Fleet, type FleetOptions, type WorkerResult } from './fleet.js';
import { postgresCpuMicros } from './pg-cpu.js';
import { busyShare, machineCpu, type MachineCpu } from './proc-stat.js';

export interface DrainOptions {
  jobs: number;
  concurrency: number;
  processes: number;
  /** Stop waiting for handler starts after this long (from the first start). */
  capMs: number;
  /** Skip enqueueing (the jobs are there already, e.g. the scale workload's backlog). */
  preEnqueued?: boolean;
  fleet?: FleetOptions;
  /** Also measure the WAL the server wrote while the workers ran (server-wide: other clients count too). */
  measureWal?: boolean;
  /**
   * Jobs each worker process runs before the timed window opens (enqueued on top of `jobs`); 0 or
   * absent: the window opens at the first handler start. The CPU, WAL and busy figures cover the
   * whole run either way, so a warm drain reports its rate only.
   */
  warmupPerProcess?: number;
}

export interface DrainResult {
  /** Jobs per second. */
  rate: number;
  /** Handler starts seen. */
  started: number;
  /** Wall time measured, ms. */
  elapsedMs: number;
  partial: boolean;
  failed: number;
  failures: string[];
  workers: WorkerResult[];
  /** WAL bytes written from worker start to the end of the run (when measured). */
  walBytes?: number;
  /**
   * CPU time (µs) of the local Postgres server's processes from worker start to the end of the run,
   * the workers' connections closing included (when measured and readable; see pg-cpu.ts).
   */
  postgresCpuMicros?: number;
  /** CPU time (µs) of the worker processes from `go` to `stop` (their start-up excluded). */
  workerCpuMicros: number;
  /** The first handler start and the end of the run, on the `nowMs` clock (to combine drains). */
  firstStartMs: number;
  endMs: number;
  /**
   * The machine's busy share (%, every core) from the moment the harness learnt of the first
   * handler start (its workers report every 25 ms) to the end of the run, when `/proc/stat` could
   * be read: whether the drain was bound by the cores or by waits.
   */
  machineBusyPct?: number;
}

async function walLsn(client: pg.Client): Promise<bigint> {
  const r = await client.query<{ b: string }>(
    `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint::text AS b`,
  );
  return BigInt(r.rows[0]!.b);
}

/**
 * `BENCH_WAL_STATS=1`: prints (stderr) what the WAL of a drain was made of, per record type, from
 * the server's pg_walinspect (PostgreSQL 15+, created on first use): which writes to cut.
 */
async function printWalStats(client: pg.Client, start: bigint, jobs: number): Promise<void> {
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  const r = await client.query<{ rec: string; n: string; rec_b: string; fpi_b: string }>(
    `SELECT "resource_manager/record_type" AS rec, count::text AS n, record_size::text AS rec_b,
            fpi_size::text AS fpi_b
     FROM pg_get_wal_stats(('0/0'::pg_lsn + $1::numeric), pg_current_wal_flush_lsn(), true)
     WHERE count > 0 ORDER BY combined_size DESC LIMIT 20`,
    [start.toString()],
  );
  for (const row of r.rows)
    process.stderr.write(
      `    wal ${row.rec.padEnd(28)} ${(Number(row.n) / jobs).toFixed(2).padStart(6)}/job ` +
        `${(Number(row.rec_b) / jobs).toFixed(0).padStart(5)} B/job + FPI ${(Number(row.fpi_b) / jobs).toFixed(0).padStart(5)} B/job\n`,
    );
}

/** The database's activity counters (pg_stat_database), for the per-job figures of BENCH_WAL_STATS. */
async function dbStats(client: pg.Client): Promise<Record<string, number>> {
  const r = await client.query<Record<string, string>>(
    `SELECT xact_commit::text AS commits, xact_rollback::text AS rollbacks, blks_hit::text AS buffer_hits,
            tup_returned::text AS returned, tup_fetched::text AS fetched, tup_inserted::text AS inserted,
            tup_updated::text AS updated
     FROM pg_stat_database WHERE datname = current_database()`,
  );
  return Object.fromEntries(Object.entries(r.rows[0]!).map(([k, v]) => [k, Number(v)]));
}

export async function enqueueAll(sys: SystemAdapter, n: number, startIndex = 0): Promise<void> {
  const payloads: BenchPayload[] = Array.from({ length: n }, (_, i) => ({ i: startIndex + i }));
  for (const batch of chunks(payloads, 1000)) await sys.enqueueBulk(batch);
}

export async function drain(sys: SystemAdapter, o: DrainOptions): Promise<DrainResult> {
  const warmup = o.warmupPerProcess ?? 0;
  const total = o.jobs + warmup * o.processes;
  if (!o.preEnqueued) await enqueueAll(sys, total);
  let wal: pg.Client | null = null;
  let walStart = 0n;
  if (o.measureWal) {
    wal = new pg.Client({ connectionString: PG_DSN });
    await wal.connect();
    walStart = await walLsn(wal);
  }
  const dbStart = wal && process.env.BENCH_WAL_STATS ? await dbStats(wal) : null;
  const fleet = await Fleet.start(sys.workerSpec(o.concurrency, o.processes), {
    ...o.fleet,
    ...(warmup > 0 ? { recordStarts: true } : {}),
  });
  const pgCpuStart = o.measureWal ? postgresCpuMicros() : null;
  let workers: WorkerResult[] = [];
  let end = 0;
  let partial = false;
  let startsAtEnd = 0;
  let walBytes: number | undefined;
  let busyFrom: MachineCpu | null = null;
  let busyTo: MachineCpu | null = null;
  try {
    // Wait for the first handler start, then for all of them (or the cap).
    const firstDeadline = Date.now() + 30_000;
    if (!(await fleet.waitForCount(1, firstDeadline))) throw new Error('no job started within 30 s');
    busyFrom = machineCpu();
    const capDeadline = Date.now() + o.capMs;
    const all = await fleet.waitForCount(total, capDeadline);
    if (!all) {
      partial = true;
      end = nowMs();
      startsAtEnd = fleet.count;
    } else {
      // Every handler has started: the run ends when the store has recorded every outcome.
      const deadline = Date.now() + 15_000;
      while ((await sys.outstanding()) > 0) {
        if (Date.now() > deadline)
          throw new Error('jobs still outstanding 15 s after the last handler start');
        await sleep(5);
      }
      end = nowMs();
    }
    busyTo = machineCpu();
    if (wal && process.env.BENCH_BACKEND_CPU) await printBackendCpu(wal, total).catch(() => undefined);
    if (wal) walBytes = Number((await walLsn(wal)) - walStart);
    if (wal && process.env.BENCH_WAL_STATS) await printWalStats(wal, walStart, o.jobs).catch(() => undefined);
  } finally {
    try {
      workers = await fleet.stop().catch((err: unknown) => {
        fleet.kill();
        throw err;
      });
    } finally {
      if (wal && dbStart) {
        // Backends report their counters when they end: read them once the workers have gone.
        await sleep(1200);
        const end = await dbStats(wal).catch(() => null);
        if (end)
          process.stderr.write(
            '    db ' +
              Object.keys(end)
                .map((k) => `${k} ${((end[k]! - dbStart[k]!) / o.jobs).toFixed(2)}`)
                .join(' · ') +
              ' per job\n',
          );
      }
      await wal?.end().catch(() => undefined);
    }
  }
  // After the stop, so that backends which ended with their worker are booked to the postmaster.
  const pgCpuEnd = pgCpuStart !== null ? postgresCpuMicros() : null;
  const startedTotal = workers.reduce((a, w) => a + w.count, 0);
  let first: number;
  let counted: number;
  if (warmup > 0) {
    ({ first, counted } = warmWindow(workers, warmup, end));
  } else {
    first = Math.min(...workers.filter((w) => w.count > 0).map((w) => w.firstStart));
    // A partial run counts the starts inside the window; a complete one counts the jobs.
    counted = partial ? startsAtEnd : o.jobs;
  }
  const elapsedMs = end - first;
  // The first start is the worker process's reading, the end the harness's (see `nowMs`).
  if (!(elapsedMs > 0)) throw clockDisagreement(`a drain window of ${elapsedMs.toFixed(1)} ms`);
  return {
    rate: counted / (elapsedMs / 1000),
    started: startedTotal,
    elapsedMs,
    partial,
    failed: workers.reduce((a, w) => a + w.failed, 0),
    failures: workers.flatMap((w) => w.failures).slice(0, 3),
    workers,
    walBytes,
    postgresCpuMicros: pgCpuStart !== null && pgCpuEnd !== null ? pgCpuEnd - pgCpuStart : undefined,
    workerCpuMicros: workers.reduce((a, w) => a + w.cpuMicros, 0),
    machineBusyPct: busyShare(busyFrom, busyTo),
    firstStartMs: first,
    endMs: end,
  };
}

/**
 * The window of a warm drain: it opens when the last process to get there starts its `warmup`-th
 * handler, and counts the handler starts from then to `end`. Throws when a process never got there
 * (the rate would be that of a cold process).
 */
export function warmWindow(
  workers: WorkerResult[],
  warmup: number,
  end: number,
): { first: number; counted: number } {
  const short = workers.find((w) => w.starts.length < warmup);
  if (short)
    throw new Error(
      `a worker process started ${short.starts.length} handlers, fewer than its warm-up of ${warmup}: enqueue more or warm up less`,
    );
  const first = Math.max(...workers.map((w) => w.starts[warmup - 1]!));
  let counted = 0;
  for (const w of workers) for (const t of w.starts) if (t > first && t <= end) counted++;
  return { first, counted };
}

/** What two deployments draining side by side did together. */
export interface PairDrainResult {
  /** Jobs of both per second, over the union of their windows (first start of either to the end of both). */
  rate: number;
  partial: boolean;
  failed: number;
  failures: string[];
  workerCpuMicros: number;
}

/**
 * Two deployments of one system (each its own schema, or key prefix) on the same server, each
 * drained by its own worker processes at once: `o.jobs` in total, half each. Whether one fleet's
 * work slows the other's down beyond sharing the machine (a shared notification channel, a lock,
 * a catalog read) shows as a rate below the single deployment's with as many processes.
 */
export async function drainPair(
  systems: [SystemAdapter, SystemAdapter],
  o: DrainOptions,
): Promise<PairDrainResult> {
  const half = Math.floor(o.jobs / 2);
  const both = await Promise.all(
    systems.map((sys) => drain(sys, { ...o, jobs: half, measureWal: false, fleet: { ...o.fleet } })),
  );
  const first = Math.min(...both.map((r) => r.firstStartMs));
  const end = Math.max(...both.map((r) => r.endMs));
  const partial = both.some((r) => r.partial);
  const counted = both.reduce((a, r) => a + (r.rate * r.elapsedMs) / 1000, 0);
  return {
    rate: counted / ((end - first) / 1000),
    partial,
    failed: both.reduce((a, r) => a + r.failed, 0),
    failures: both.flatMap((r) => r.failures).slice(0, 3),
    workerCpuMicros: both.reduce((a, r) => a + r.workerCpuMicros, 0),
  };
}
