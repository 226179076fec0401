import type { JobRow } from '../backend/types.js';
import type { Logger } from '../obs/logger.js';
import { withTimeout } from './sleep.js';

/**
 * Receives every job that failed for good (retries exhausted or not retryable), with the error.
 * Vendor-neutral: wire it to Sentry, an incident tool or a log. A failing reporter never affects
 * the worker.
 */
export interface ErrorReporter {
  report(job: JobRow, error: unknown): void | Promise<void>;
}

/** The default reporter: does nothing. */
export class NullErrorReporter implements ErrorReporter {
  report(): void {}
}

/** Calls the reporter, bounded and isolated: failures and time-outs are logged, never thrown. */
export async function reportSafely(
  reporter: ErrorReporter,
  job: JobRow,
  error: unknown,
  log: Logger,
  timeoutMs = 3000,
  onFailure?: (reporterType: string) => void,
): Promise<void> {
  try {
    await withTimeout(
      Promise.resolve().then(() => reporter.report(job, error)),
      timeoutMs,
      () => new Error(`error reporter timed out after ${timeoutMs} ms`),
    );
  } catch (err) {
    const reporterType = reporter.constructor?.name ?? 'unknown';
    log.warn({ err, reporter: reporterType }, 'error-reporter-failed');
    onFailure?.(reporterType);
  }
}
