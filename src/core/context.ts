import type { Span } from '@opentelemetry/api';

import type { Logger } from '../obs/logger.js';
import type { ProgressUpdate } from '../progress/progress-event.js';
import type { SubJobEnqueuer } from '../worker/sub-jobs.js';

/**
 * What a handler receives besides its payload, built fresh for every attempt by the worker.
 * Tests can build one with `createTestContext()` from `taskq/testing`.
 */
export interface JobContext<P = unknown> {
  /** The job's id. */
  readonly jobId: string;
  /** Actor name. */
  readonly actor: string;
  /** Queue the job was claimed from. */
  readonly queue: string;
  /** This attempt's number (1-based). */
  readonly attempt: number;
  /** The worker running the attempt. */
  readonly workerId: string;
  /** The validated payload (same value as the handler's first argument). */
  readonly payload: P;
  /**
   * The worker's logger bound to this attempt: every line carries `jobId`, `actor`, `queue`,
   * `attempt` and, when the job has one, `traceId` (docs/logging.md). Code the handler calls gets
   * the same logger from `jobLogger()` without being passed `ctx`.
   */
  readonly log: Logger;
  /**
   * Aborted when the job should stop: a cancel request (reason `CancelRequested`), the attempt's
   * `startToClose` timeout, or worker shutdown. Pass it to `fetch`, timers and drivers.
   */
  readonly signal: AbortSignal;
  /**
   * Reports progress: merged into the job's state in memory (never waits for the network), written
   * to Postgres every `progressCoalesceInterval`, published live when Redis is configured. Counts
   * as a heartbeat. @throws ProgressTooLarge when `data` exceeds `progressDataMaxBytes`.
   */
  progress(update: ProgressUpdate): Promise<void>;
  /**
   * Proves the handler is alive (required within `heartbeatTimeout` when the job has one). `details`
   * (JSON) are stored and handed to the next attempt as `heartbeatDetails`, e.g. a resume offset.
   */
  heartbeat(details?: unknown): void;
  /** Details of the previous attempt's last `heartbeat(details)`, or null. */
  readonly heartbeatDetails: unknown;
  /** True once `signal` has aborted (the polling form, for loops that cannot take a signal). */
  shouldAbort(): boolean;
  /**
   * This attempt's `process <actor>` span (OpenTelemetry API), for the handler's own attributes and
   * events (`ctx.span.setAttribute('order.id', id)`). It is also the active span while the handler
   * runs, so spans the handler starts are its children. A non-recording span (calls do nothing)
   * when tracing is off (`otelEnabled: false`).
   */
  readonly span: Span;
  /**
   * Enqueues jobs from the handler ("sub-jobs"). By default they are written in the same
   * transaction as this attempt's success: they exist if and only if it succeeds, and a failed,
   * retried, snoozed or cancelled attempt leaves none. `{ autonomous: true }` writes at once on the
   * worker's pool, `{ connection }` at once in your transaction. Only handlers the worker runs in
   * its own thread have it (thread-isolated actors get `SubJobsUnavailableError`). See
   * docs/sub-jobs.md.
   */
  readonly jobs: SubJobEnqueuer;
}
