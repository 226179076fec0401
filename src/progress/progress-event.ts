import type { JobStatus } from '../backend/types.js';

/** What a handler reports with `ctx.progress()`. Every field is optional; fields merge last-writer-wins. */
export interface ProgressUpdate {
  /** Name of the current step, e.g. `'resizing'`. */
  step?: string;
  /** Completion 0–100. */
  percent?: number;
  /** A human-readable line. */
  detail?: string;
  /** Any JSON value (bounded by `progressDataMaxBytes`, 16 KiB by default). */
  data?: unknown;
}

/** The merged progress of a job, as stored in `jobs.progress_state`. */
export type ProgressState = ProgressUpdate;

/**
 * One event of a progress stream (version 1). `seq` is strictly increasing per job; consumers
 * drop anything at or below the last `seq` they saw. `ts` comes from the publishing process's
 * clock (ordering uses `seq`, never `ts`).
 */
export interface ProgressEvent {
  v: 1;
  kind: 'progress' | 'state_change';
  jobId: string;
  actor: string;
  /** ISO time at the publisher. */
  ts: string;
  seq: number;
  status: JobStatus;
  step?: string;
  percent?: number;
  detail?: string;
  data?: unknown;
  /** True on the last event of a job (a terminal status). */
  terminal: boolean;
}

/** A snapshot of a job for `TaskQ.stream()`: flat, ready to forward over SSE or WebSocket. */
export interface JobEvent {
  jobId: string;
  status: JobStatus;
  progressState: Record<string, unknown>;
  progressSeq: number;
  terminal: boolean;
}

/** Where a worker sends live progress (fire-and-forget; Redis pub/sub in production). */
export interface ProgressPublisher {
  /** Sends one event; never throws and never waits on the network. */
  publish(event: ProgressEvent): void;
  /**
   * Announces that a job reached a terminal status (a `kind: 'state_change'` event with
   * `terminal: true`, carrying the job's final progress). Called by the worker after the terminal
   * write. Optional: publishers without it only see progress.
   */
  publishTerminal?(
    jobId: string,
    actor: string,
    status: JobStatus,
    seq: number,
    state: Record<string, unknown>,
  ): void;
  /** Waits briefly for publishes in flight, then releases what the publisher owns. */
  close(): Promise<void>;
}
