/**
 * The core of the processing, scale and memory workloads: pre-enqueue N no-op jobs, start the
 * system's worker processes, and time from the first handler start until the store reports every
 * job finished (or a time cap, for systems too slow to finish: then the rate is handler starts over
 * the capped window, and the run is marked partial).
 */
import pg from 'pg';

import type { SystemAdapter } from '../systems/types.js';
import { PG_DSN, chunks, clockDisagreement, nowMs, sleep, type BenchPayload } from './common.js';
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

export async function enqueueAll(sys: SystemAdapter, n: number, startIndex = 0): Promise<void> {
  const payloads: BenchPayload[] = Array.from({ length: n }, (_, i) => ({ i: startIndex + i }));
  for (const batch of chunks(payloads, 1000)) await sys.enqueueBulk(batch);
}

export async function drain(sys: SystemAdapter, o: DrainOptions): Promise<DrainResult> {
  if (!o.preEnqueued) await enqueueAll(sys, o.jobs);
  let wal: pg.Client | null = null;
  let walStart = 0n;
  if (o.measureWal) {
    wal = new pg.Client({ connectionString: PG_DSN });
    await wal.connect();
    walStart = await walLsn(wal);
  }
  const fleet = await Fleet.start(sys.workerSpec(o.concurrency, o.processes), o.fleet);
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
    const all = await fleet.waitForCount(o.jobs, capDeadline);
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
    if (wal) walBytes = Number((await walLsn(wal)) - walStart);
  } finally {
    try {
      workers = await fleet.stop().catch((err: unknown) => {
        fleet.kill();
        throw err;
      });
    } finally {
      await wal?.end().catch(() => undefined);
    }
  }
  // After the stop, so that backends which ended with their worker are booked to the postmaster.
  const pgCpuEnd = pgCpuStart !== null ? postgresCpuMicros() : null;
  const first = Math.min(...workers.filter((w) => w.count > 0).map((w) => w.firstStart));
  const startedTotal = workers.reduce((a, w) => a + w.count, 0);
  // A partial run counts the starts inside the window; a complete one counts the jobs.
  const counted = partial ? startsAtEnd : o.jobs;
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
  };
}
