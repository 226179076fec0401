/** What every workload gets: options, the result store, and the systems of this run. */
import { createSystem, type SystemId } from '../systems/index.js';
import type { SystemAdapter } from '../systems/types.js';
import { checkpoint } from './checkpoint.js';
import { errorMessage } from './common.js';
import type { Results } from './results.js';

export interface BenchOptions {
  quick: boolean;
  rounds: number;
  /** Workloads to run (null = all). */
  only: string[] | null;
  systems: SystemId[];
  /** Write CPU profiles of TaskQ worker processes (processing workload) here. */
  cpuProfDir: string | null;
  /**
   * Latency under load: offer every system this many jobs/s instead of half of its own measured
   * throughput (null = the definition, 50 % of each system's own).
   */
  loadRate: number | null;
  /**
   * Processing: drain this many jobs per case instead of 20,000 (2,000 in --quick); such cases are
   * named with their size and read by no target (null = the standard drains).
   */
  processingJobs: number | null;
  /**
   * Processing: jobs each worker process runs before the timed window opens (0 = none, the standard
   * cold drains); such cases are named "…, warm (n per process first)" and read by no target.
   */
  processingWarmup: number;
}

export interface BenchContext {
  opts: BenchOptions;
  results: Results;
  /** Systems that passed the availability check, in command-line order. */
  systems: SystemId[];
  /** Redis answered at startup (TaskQ's token-bucket cases need it). */
  redisAvailable: boolean;
  log(msg: string): void;
}

/** The systems in a different order each round, so no system always runs first (or last). */
export function rotate<T>(items: readonly T[], round: number): T[] {
  if (items.length === 0) return [];
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** Rejects after `ms` (the promise itself keeps running). */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: no answer within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `fn` against a freshly set-up system (new schema / flushed Redis database), right after a
 * server checkpoint (see checkpoint.ts), and tears it down afterwards, whatever happens.
 */
export async function withFreshSystem<T>(id: SystemId, fn: (sys: SystemAdapter) => Promise<T>): Promise<T> {
  const sys = await createSystem(id);
  try {
    await withTimeout(sys.setup(), 60_000, `${id} setup`);
    await checkpoint();
    return await fn(sys);
  } finally {
    await withTimeout(sys.teardown(), 30_000, `${id} teardown`).catch(() => undefined);
  }
}

/** Short, single-line error text for reports. */
export function shortError(err: unknown): string {
  return errorMessage(err).replace(/\s+/g, ' ').slice(0, 240);
}
