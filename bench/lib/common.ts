/**
 * Shared constants and small helpers of the benchmark harness: where the services are, a clock that
 * agrees across processes, and the job payload every system carries.
 */
import { randomBytes } from 'node:crypto';

/** Postgres the benchmark uses (each run gets a fresh schema in it). */
export const PG_DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Redis host/port for BullMQ; the benchmark uses its own logical database and flushes only that one. */
export const REDIS_HOST = process.env.BENCH_REDIS_HOST ?? '127.0.0.1';
export const REDIS_PORT = Number(process.env.BENCH_REDIS_PORT ?? 6379);
export const REDIS_DB = Number(process.env.BENCH_REDIS_DB ?? 11);

/** Queue (or task identifier) every system's benchmark jobs go to. */
export const BENCH_QUEUE = 'bench';
/** Actor / task name of the no-op job. */
export const BENCH_TASK = 'noop';

/**
 * Milliseconds on the machine's monotonic clock (`CLOCK_MONOTONIC`, through `process.hrtime`), with
 * sub-millisecond resolution. Every process on the machine reads the same clock, so values from
 * different processes are comparable (the enqueue → handler-start latency, a drain's first start
 * against its end), and no step of the wall clock moves it: a per-process wall-clock origin would put
 * a process started after a clock step seconds ahead of the harness.
 */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * The error for a reading that two processes' `nowMs` values cannot give when they share the
 * clock (a drain window that is not positive, a handler that started before its job was
 * enqueued): every figure of the measurement would be off, so it fails instead of being reported.
 */
export function clockDisagreement(what: string): Error {
  return new Error(`${what}: the worker's and the harness's clocks disagree`);
}

/** The payload of a benchmark job: an index and, for latency runs, the enqueue call's time. */
export interface BenchPayload {
  i: number;
  /** `nowMs()` just before the enqueue call (latency workloads only). */
  t?: number;
}

/** A short random suffix for schema names and Redis key prefixes. */
export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Splits an array into chunks of at most `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Message of an unknown thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message.split('\n')[0] ?? err.message;
  return String(err);
}
