import type { AnyActor } from '../core/actor.js';
import { isTerminal } from '../backend/state-machine.js';
import type { ClaimedJob, JobRow } from '../backend/types.js';
import type { ProgressSnapshot, Settlement, SettleResult } from '../backend/worker-types.js';
import { runInJobScope, type JobScopedLogger } from '../obs/job-log-context.js';
import type { ProgressPublisher } from '../progress/progress-event.js';
import { reportSafely, type ErrorReporter } from './error-reporter.js';
import { logOutcome } from './outcome-log.js';
import { withTimeout } from './sleep.js';
import { readStoredRow } from './stored-row.js';

/** Collaborators of the aftermath (the runner's). */
export interface OutcomeAftermathDeps {
  /** Receives jobs that failed for good. */
  reporter: ErrorReporter;
  /** Reads a job's current row (for hooks and the error reporter). */
  readRow: (jobId: string) => Promise<JobRow | null>;
  /** Live progress publisher: told when a job reached a terminal status. */
  publisher: ProgressPublisher | null;
  /** Called when a job was rescheduled (the leader's promoter may need to look sooner). */
  onRescheduled: () => void;
  /** Called when the error reporter threw or timed out, with its class name (metrics). */
  onReporterFailed?: (reporterType: string) => void;
}

/**
 * What follows an attempt's written outcome: a warning when the job was no longer this worker's,
 * the outcome's log line ({@link logOutcome}), the terminal progress event, the promoter's nudge, and the actor's hooks and the error reporter
 * (which read the stored row).
 */
export class OutcomeAftermath {
  constructor(private readonly deps: OutcomeAftermathDeps) {}

  /**
   * Runs the aftermath of one written outcome. A plain success with no hook and no publisher
   * returns at once, without a promise (the usual case, once per job).
   */
  afterWrite(
    job: ClaimedJob,
    log: JobScopedLogger,
    outcome: Settlement,
    thrown: unknown,
    actor: AnyActor | null,
    progress: ProgressSnapshot | null,
    result: SettleResult,
  ): Promise<void> | undefined {
    if (result.status === 'noop') {
      log.warn({ kind: outcome.kind }, 'settle-noop-not-owner');
      return;
    }
    logOutcome(log, outcome, result);
    const publisher = this.deps.publisher;
    if (isTerminal(result.status) && publisher?.publishTerminal) {
      // After the write: a stream that sees this event reads the final row.
      const final = progress ?? { seq: job.progressSeq, state: job.progressState };
      try {
        publisher.publishTerminal(job.id, job.actor, result.status, final.seq, final.state);
      } catch (err) {
        log.warn({ err }, 'progress-publish-failed');
      }
    }
    if (result.status === 'scheduled') this.deps.onRescheduled();
    if (!actor) return;
    const needsRow =
      (result.status === 'succeeded' && actor.onSuccess !== null) || result.status === 'failed';
    if (!needsRow) return;
    return this.runHooks(job, log, outcome, thrown, actor, result);
  }

  /** The success hook, or the exhausted-retries hook and the error reporter, with the stored row. */
  private async runHooks(
    job: ClaimedJob,
    log: JobScopedLogger,
    outcome: Settlement,
    thrown: unknown,
    actor: AnyActor,
    result: SettleResult,
  ): Promise<void> {
    // Hooks and the reporter see the row as stored (read only on these paths, not per job).
    const row = await readStoredRow(this.deps.readRow, job.id, log);
    if (row === null) return;
    if (result.status === 'succeeded' && actor.onSuccess && outcome.kind === 'succeeded') {
      const value: unknown = outcome.resultJson === null ? undefined : JSON.parse(outcome.resultJson);
      await runHook(() => actor.onSuccess!(row, value), actor.onSuccessTimeoutMs, log, 'on-success');
    }
    if (result.status === 'failed') {
      const error = thrown ?? new Error(result.errorClass ?? 'failed');
      if (actor.onRetryExhausted)
        await runHook(
          () => actor.onRetryExhausted!(row, error),
          actor.onRetryExhaustedTimeoutMs,
          log,
          'on-retry-exhausted',
        );
      await reportSafely(this.deps.reporter, row, error, log, undefined, this.deps.onReporterFailed);
    }
  }
}

/**
 * Runs a hook under its timeout, in the attempt's log scope (its `jobLogger()` calls carry the
 * job's fields); a failure or a timeout is logged, never thrown.
 */
async function runHook(
  fn: () => unknown,
  timeoutMs: number,
  log: JobScopedLogger,
  name: string,
): Promise<void> {
  try {
    await withTimeout(
      Promise.resolve().then(() => runInJobScope(log, fn)),
      timeoutMs,
      () => new Error(`${name} hook timed out after ${timeoutMs} ms`),
    );
  } catch (err) {
    log.warn({ err, hook: name }, 'hook-failed');
  }
}
