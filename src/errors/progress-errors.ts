import { TaskQError } from './taskq-error.js';

/** `ctx.progress({ data })` serialised above `progressDataMaxBytes`. Nothing was recorded. */
export class ProgressTooLarge extends TaskQError {
  /** The configured limit in bytes. */
  readonly limit: number;
  /** The serialised size in bytes. */
  readonly actual: number;

  constructor(limit: number, actual: number) {
    super(
      'TASKQ_PROGRESS_TOO_LARGE',
      `progress data serialises to ${actual} bytes, above progressDataMaxBytes (${limit}); report a summary and store details elsewhere`,
    );
    this.limit = limit;
    this.actual = actual;
  }
}

/** Abort reason of `ctx.signal` when a handler with `heartbeatTimeout` stopped heartbeating; the attempt fails and retries. */
export class HeartbeatTimeout extends TaskQError {
  /** The timeout that elapsed, in ms. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(
      'TASKQ_HEARTBEAT_TIMEOUT',
      `the handler did not call ctx.heartbeat() or ctx.progress() within its heartbeatTimeout of ${timeoutMs} ms`,
    );
    this.timeoutMs = timeoutMs;
  }
}
