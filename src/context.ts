import type { Logger } from './obs/logger.js';

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
  /** Logger bound to this job (job id, actor, queue, attempt). */
  readonly log: Logger;
  /**
   * Aborted when the job should stop: a cancel request (reason `CancelRequested`), the attempt's
   * `startToClose` timeout, or worker shutdown. Pass it to `fetch`, timers and drivers.
   */
  readonly signal: AbortSignal;
}
