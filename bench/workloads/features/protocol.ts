/**
 * What the features workload's harness and its worker processes (`proc.ts`) tell each other, and
 * the interface every system's worker side implements.
 */

/** The cases of the features workload. */
export type FeatureCase = 'cron' | 'cron-catch-up' | 'batch' | 'sub-jobs' | 'retries' | 'rate-limit';

/** The systems that have a side in the features workload (ids shared with `bench/systems`). */
export type FeatureSystem = 'taskq' | 'graphile' | 'bullmq-redis';

/** Everything a worker process needs to start one system's worker for one case (serialisable). */
export interface FeatureSpec {
  case: FeatureCase;
  system: FeatureSystem;
  /** Schema (Postgres) or key prefix (Redis) of this run. */
  namespace: string;
  /** Jobs run at once in the worker. */
  concurrency: number;
  /** Case parameters (schedule counts, the catch-up's minute, …). */
  params: Record<string, number>;
}

/** What a worker side reports: named events, each with an optional sample (a lag in ms, a time). */
export interface FeatureHooks {
  mark(kind: string, sample?: number): void;
}

/** A started worker side. */
export interface RunningSide {
  stop(): Promise<void>;
}

/** Starts one system's worker for one case, in the worker process. */
export type SideStarter = (spec: FeatureSpec, hooks: FeatureHooks) => Promise<RunningSide>;

/** Counts, samples and first/last `nowMs()` per event kind, as the worker process collected them. */
export interface FeatureTally {
  counts: Record<string, number>;
  samples: Record<string, number[]>;
  first: Record<string, number>;
  last: Record<string, number>;
}

/** Harness → worker process. `reset` forgets what was collected so far (the end of a warm-up). */
export type ToChild = { type: 'go' } | { type: 'reset' } | { type: 'stop' };

/** Worker process → harness. */
export type FromChild =
  | { type: 'loaded' }
  | { type: 'started' }
  | { type: 'progress'; counts: Record<string, number> }
  | ({ type: 'result'; cpuMicros: number } & FeatureTally)
  | { type: 'error'; message: string };
