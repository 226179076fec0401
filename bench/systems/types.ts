/**
 * The common interface every benchmarked system implements. The producer side (`SystemAdapter`)
 * lives in the measuring process; the worker side (`WorkerStarter`) runs in worker processes that
 * `bench/worker-proc.ts` starts, so enqueueing and measuring never compete with handlers in-process.
 */
import type { BenchPayload } from '../lib/common.js';

/** Everything a worker process needs to start one system's worker (serialisable). */
export interface WorkerSpec {
  system: string;
  /** Schema name (Postgres systems) or key prefix (BullMQ on Redis) of this run. */
  namespace: string;
  /** Jobs run at once in this process. */
  concurrency: number;
  /** Worker processes in this run (pool sizes are capped so the fleet fits max_connections). */
  processes: number;
  /**
   * The Node binary the worker processes run under, when it is not the harness's own (the Node 22
   * systems, systems/node22.ts); their IPC messages are then JSON-serialised.
   */
  execPath?: string;
}

/** A started worker. */
export interface RunningWorker {
  /** Graceful stop; resolves when the worker has let go of its connections. */
  stop(): Promise<void>;
}

/** What a worker reports back to the harness. */
export interface WorkerHooks {
  /** Called first thing in the no-op handler. */
  onJob(payload: BenchPayload): void;
  /** A job attempt the system reports as failed (the handler itself never throws). */
  onFailed(message: string): void;
}

/** Starts a worker whose no-op handler calls `hooks.onJob(payload)` first thing. */
export type WorkerStarter = (spec: WorkerSpec, hooks: WorkerHooks) => Promise<RunningWorker>;

/** Background rows for the scale workload. */
export interface FillSpec {
  /** Rows in total. */
  rows: number;
  /** Of those, pending jobs of the benchmark queue (the backlog the worker drains from). */
  pending: number;
}

/** The producer side of one system and configuration. */
export interface SystemAdapter {
  /** Short id used on the command line (`--systems`). */
  readonly id: string;
  /** Name in report tables. */
  readonly title: string;
  /** The peer's package and version. */
  readonly pkg: string;
  readonly store: 'postgres' | 'redis';
  /** The exact settings of its workers (c = the run's concurrency per process, p = processes). */
  readonly settings: string;
  /** Creates a fresh namespace (schema / flushed Redis database) and connects. */
  setup(): Promise<void>;
  /** Drops the namespace and closes connections. Safe after a failed setup. */
  teardown(): Promise<void>;
  enqueueOne(payload: BenchPayload): Promise<void>;
  /** One bulk call (at most 1,000 payloads). */
  enqueueBulk(payloads: BenchPayload[]): Promise<void>;
  /**
   * Times `count` single enqueues (payloads `{ i }` numbered from `first`) made by `callers`
   * concurrent callers (1: one awaited call after another) where the system's client lives, and
   * resolves to the elapsed milliseconds. Only systems whose client runs in another process
   * (systems/node22.ts) have it: the enqueue workload's single cases then time no IPC round trip
   * per job.
   */
  timedSingles?: (count: number, callers: number, first?: number) => Promise<number>;
  /** A COPY-based fast path, when the system has one. */
  enqueueCopy?: (payloads: BenchPayload[]) => Promise<void>;
  /** Jobs not yet finished (queued, locked or running). */
  outstanding(): Promise<number>;
  /** Spec for worker processes of this run. */
  workerSpec(concurrency: number, processes: number): WorkerSpec;
  /** Scale workload: writes background rows straight into the system's tables (SQL). */
  fill?: (spec: FillSpec) => Promise<void>;
  /** Scale workload (TaskQ only): times the dispatch and settle statements called directly. */
  probeDispatch?: (jobs: number, batch: number, options?: { jitOff?: boolean }) => Promise<DispatchProbe>;
}

/**
 * Cost of the dispatch and settle statements per claimed job: the median over the probe's calls of
 * each call's time divided by the jobs it claimed.
 */
export interface DispatchProbe {
  jobs: number;
  dispatchMsPerJob: number;
  settleMsPerJob: number;
}
