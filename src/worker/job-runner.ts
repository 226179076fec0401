import type { AnyActor } from '../actor.js';
import type { JobContext } from '../context.js';
import type { JobRow } from '../backend/types.js';
import type { Settlement, SettleResult } from '../backend/worker-types.js';
import { ResultTooLarge } from '../errors/job-errors.js';
import { TaskQError } from '../errors/taskq-error.js';
import type { Logger } from '../obs/logger.js';
import {
  CancelRequested,
  RetryAfter,
  Snooze,
  StartToCloseTimeout,
  WorkerShutdown,
} from '../retry/control-flow.js';
import { classifyFailure } from '../retry/retry-classifier.js';
import { toJsonText, validateSchema } from '../schema-validation.js';
import type { Completer } from './completer.js';
import { toErrorInfo } from './error-info.js';
import { reportSafely, type ErrorReporter } from './error-reporter.js';
import { withTimeout } from './sleep.js';

/** Abort reason when the heartbeat finds the job no longer owned (reclaimed after a lost lease). */
export class LeaseLost extends TaskQError {
  constructor(jobId: string) {
    super(
      'TASKQ_LEASE_LOST',
      `job ${jobId} is no longer owned by this worker (its lease expired and it was reclaimed)`,
    );
  }
}

/** What the runner needs from the worker's settings. */
export interface RunnerSettings {
  resultMaxBytes: number;
  defaultStartToCloseMs: number | null;
  maxRetryBackoffMs: number;
  exceptionMessageMaxChars: number;
  exceptionRedactionEnabled: boolean;
  cleanupGracePeriodMs: number;
}

/** One job this worker holds: claimed, running, or finished but not yet written. */
interface ActiveJob {
  row: JobRow;
  controller: AbortController;
  /** Set once the outcome is handed to the completer (or the job was given up). */
  settled: boolean;
  /** The handler's promise while it runs. */
  handler: Promise<unknown> | null;
  started: boolean;
}

/**
 * Runs claimed jobs: re-validates the payload, builds the context, enforces `startToClose`,
 * validates and size-checks the result, classifies failures, and hands the outcome to the
 * completer. Holds each job's concurrency slot until its handler has settled (or the cleanup grace
 * passed after it was given up).
 */
export class JobRunner {
  private readonly active = new Map<string, ActiveJob>();
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly actors: ReadonlyMap<string, AnyActor>,
    private readonly workerId: string,
    private readonly settings: RunnerSettings,
    private readonly completer: Completer,
    private readonly logger: Logger,
    private readonly reporter: ErrorReporter,
    private readonly onSlotFreed: () => void,
    /** Called when a job was rescheduled (the leader's promoter may need to look sooner). */
    private readonly onRescheduled: () => void = () => undefined,
  ) {}

  /** Jobs holding a slot (claimed, running, or held until an orphaned handler settles). */
  get inFlight(): number {
    return this.active.size;
  }

  /** Ids this worker must keep renewing: held and not yet written. */
  ownedJobIds(): string[] {
    return [...this.active.values()].filter((j) => !j.settled).map((j) => j.row.id);
  }

  /** Ids of jobs whose handler has not started (for re-pending at shutdown). */
  unstartedJobIds(): string[] {
    return [...this.active.values()].filter((j) => !j.started && !j.settled).map((j) => j.row.id);
  }

  /** Resolves when no job holds a slot. */
  whenIdle(): Promise<void> {
    if (this.active.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Takes a claimed job; it starts on the next turn of the event loop. */
  accept(row: JobRow): void {
    const job: ActiveJob = {
      row,
      controller: new AbortController(),
      settled: false,
      handler: null,
      started: false,
    };
    this.active.set(row.id, job);
    setImmediate(() => {
      if (job.settled) return;
      void this.execute(job).catch((err: unknown) =>
        this.logger.error({ err, jobId: row.id }, 'job-runner-crashed'),
      );
    });
  }

  /** Drops jobs that were re-pended before they started. */
  forget(jobIds: readonly string[]): void {
    for (const id of jobIds) {
      const job = this.active.get(id);
      if (job && !job.started) {
        job.settled = true;
        this.release(id);
      }
    }
  }

  /** Phase 1 of a cancel: aborts the job's signal. No database write. */
  requestCancel(jobId: string, reason?: string | null): boolean {
    const job = this.active.get(jobId);
    if (!job || job.settled || job.controller.signal.aborted) return false;
    job.controller.abort(new CancelRequested(reason));
    return true;
  }

  /** The heartbeat found these jobs owned elsewhere: stop them and do not write their outcome. */
  leaseLost(jobIds: readonly string[]): void {
    for (const id of jobIds) {
      const job = this.active.get(id);
      if (!job || job.settled) continue;
      this.logger.warn({ jobId: id }, 'job-lease-lost');
      job.settled = true;
      if (!job.controller.signal.aborted) job.controller.abort(new LeaseLost(id));
      if (!job.handler) this.release(id);
    }
  }

  /** Shutdown: aborts every running handler's signal with `WorkerShutdown`. */
  abortAll(): void {
    for (const job of this.active.values()) {
      if (!job.settled && !job.controller.signal.aborted) job.controller.abort(new WorkerShutdown());
    }
  }

  /**
   * Shutdown, last resort: jobs whose handlers are still running go back to `pending` now (their
   * handlers are orphaned and logged), so another worker can run them.
   */
  async releaseRemaining(): Promise<number> {
    const stuck = [...this.active.values()].filter((j) => !j.settled);
    await Promise.all(
      stuck.map(async (job) => {
        job.settled = true;
        this.logger.warn({ jobId: job.row.id, actor: job.row.actor }, 'job-orphaned-at-shutdown');
        await this.completer
          .settle({
            kind: 'release',
            jobId: job.row.id,
            workerId: this.workerId,
            handlerStartedAt: null,
            durationMs: null,
            error: {
              errorClass: 'WorkerShutdown',
              message: 'the worker shut down before the handler finished',
              traceback: null,
            },
          })
          .catch((err: unknown) => this.logger.error({ err, jobId: job.row.id }, 'release-failed'));
        this.release(job.row.id);
      }),
    );
    return stuck.length;
  }

  private release(jobId: string): void {
    if (!this.active.delete(jobId)) return;
    this.onSlotFreed();
    if (this.active.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async execute(job: ActiveJob): Promise<void> {
    const row = job.row;
    job.started = true;
    const log = this.logger.child({
      jobId: row.id,
      actor: row.actor,
      queue: row.queue,
      attempt: row.attempt,
    });
    const actor = this.actors.get(row.actor);
    const startedAt = new Date();
    const t0 = performance.now();
    const timing = (): { handlerStartedAt: Date; durationMs: number } => ({
      handlerStartedAt: startedAt,
      durationMs: performance.now() - t0,
    });
    if (!actor) {
      // Dispatch only claims registered actors; this guards a mismatch between claim and registry.
      await this.finish(
        job,
        log,
        {
          kind: 'failed',
          jobId: row.id,
          workerId: this.workerId,
          ...timing(),
          retryDelayMs: null,
          error: {
            errorClass: 'UnknownActor',
            message: `no actor named ${row.actor} is registered on this worker`,
            traceback: null,
          },
        },
        null,
        null,
      );
      return;
    }
    let payload: unknown;
    try {
      payload = actor.payloadSchema
        ? await validateSchema(actor.payloadSchema, row.payload, {
            actor: actor.name,
            what: 'payload',
            payloadSchemaVer: row.payloadSchemaVer,
          })
        : row.payload;
    } catch (err) {
      await this.finish(job, log, this.failure(actor, row, err, timing()), err, actor);
      return;
    }

    const ctx: JobContext = Object.freeze({
      jobId: row.id,
      actor: row.actor,
      queue: row.queue,
      attempt: row.attempt,
      workerId: this.workerId,
      payload,
      log,
      signal: job.controller.signal,
    });
    const startToCloseMs = row.startToCloseMs ?? actor.startToCloseMs ?? this.settings.defaultStartToCloseMs;
    const handler = Promise.resolve().then(() => actor.handler(payload, ctx));
    job.handler = handler;
    let timer: NodeJS.Timeout | undefined;
    const aborted = new Promise<never>((_, reject) => {
      const onAbort = (): void => reject(job.controller.signal.reason);
      if (job.controller.signal.aborted) onAbort();
      else job.controller.signal.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    if (startToCloseMs !== null) {
      timer = setTimeout(() => job.controller.abort(new StartToCloseTimeout(startToCloseMs)), startToCloseMs);
    }

    let outcome: Settlement;
    let thrown: unknown = null;
    try {
      // A handler that honours the signal settles through its own promise; one that ignores a
      // timeout is not awaited past it (its slot stays held until it settles, see below).
      const value = await Promise.race([
        handler,
        startToCloseMs !== null ? abortedOnTimeout(aborted, job) : handler,
      ]);
      outcome = await this.success(actor, row, value, timing());
    } catch (err) {
      thrown = err;
      outcome = this.outcomeOfError(actor, row, err, job.controller.signal, timing());
    } finally {
      clearTimeout(timer);
    }
    if (!job.settled) await this.finish(job, log, outcome, thrown, actor);
    else if (!this.active.has(row.id)) return;
    // Keep the slot until the handler really settled, bounded by the cleanup grace.
    await withTimeout(
      handler.then(
        () => undefined,
        () => undefined,
      ),
      this.settings.cleanupGracePeriodMs,
      () => new Error('grace'),
    ).catch(() => {
      log.warn({ graceMs: this.settings.cleanupGracePeriodMs }, 'handler-orphaned');
    });
    this.release(row.id);
  }

  private async success(
    actor: AnyActor,
    row: JobRow,
    value: unknown,
    timing: { handlerStartedAt: Date; durationMs: number },
  ): Promise<Settlement> {
    let out: unknown = value;
    try {
      if (actor.resultSchema)
        out = await validateSchema(actor.resultSchema, value, { actor: actor.name, what: 'result' });
      const json = out === undefined ? null : toJsonText(out, { actor: actor.name, what: 'result' });
      const size = json === null ? null : Buffer.byteLength(json, 'utf8');
      if (size !== null && size > this.settings.resultMaxBytes)
        throw new ResultTooLarge(this.settings.resultMaxBytes, size);
      return {
        kind: 'succeeded',
        jobId: row.id,
        workerId: this.workerId,
        ...timing,
        resultJson: json,
        resultSizeBytes: size,
        fallbackResultTtlMs: actor.resultTtlMs,
      };
    } catch (err) {
      return this.failure(actor, row, err, timing);
    }
  }

  private outcomeOfError(
    actor: AnyActor,
    row: JobRow,
    err: unknown,
    signal: AbortSignal,
    timing: { handlerStartedAt: Date; durationMs: number },
  ): Settlement {
    const base = { jobId: row.id, workerId: this.workerId, ...timing };
    const info = (e: unknown) =>
      toErrorInfo(e, {
        maxChars: this.settings.exceptionMessageMaxChars,
        redact: this.settings.exceptionRedactionEnabled,
      });
    if (err instanceof Snooze)
      return {
        ...base,
        kind: 'reschedule',
        delayMs: err.delayMs,
        consumeBudget: false,
        outcome: 'snoozed',
        error: null,
      };
    if (err instanceof RetryAfter)
      return {
        ...base,
        kind: 'reschedule',
        delayMs: err.delayMs,
        consumeBudget: err.consumeBudget,
        outcome: 'retry_after',
        error: info(err),
      };
    const reason: unknown = signal.aborted ? signal.reason : null;
    if (reason instanceof CancelRequested) return { ...base, kind: 'cancelled', error: info(reason) };
    if (reason instanceof WorkerShutdown) return { ...base, kind: 'release', error: info(reason) };
    if (reason instanceof StartToCloseTimeout) return this.failure(actor, row, reason, timing);
    return this.failure(actor, row, err, timing);
  }

  private failure(
    actor: AnyActor,
    row: JobRow,
    err: unknown,
    timing: { handlerStartedAt: Date; durationMs: number },
  ): Settlement {
    const decision = classifyFailure(actor, err, row.attempt, {
      maxRetryBackoffMs: this.settings.maxRetryBackoffMs,
      logger: this.logger,
    });
    return {
      kind: 'failed',
      jobId: row.id,
      workerId: this.workerId,
      ...timing,
      retryDelayMs: decision.kind === 'retry' ? decision.delayMs : null,
      error: toErrorInfo(err, {
        maxChars: this.settings.exceptionMessageMaxChars,
        redact: this.settings.exceptionRedactionEnabled,
      }),
    };
  }

  private async finish(
    job: ActiveJob,
    log: Logger,
    outcome: Settlement,
    thrown: unknown,
    actor: AnyActor | null,
  ): Promise<void> {
    job.settled = true;
    let result: SettleResult;
    try {
      result = await this.completer.settle(outcome);
    } catch (err) {
      log.error({ err }, 'settle-gave-up');
      return;
    }
    if (result.status === 'noop') {
      log.warn({ kind: outcome.kind }, 'settle-noop-not-owner');
      return;
    }
    log.debug({ status: result.status, kind: outcome.kind }, 'job-settled');
    if (result.status === 'scheduled') this.onRescheduled();
    if (!actor) return;
    const row: JobRow = { ...job.row, status: result.status, errorClass: result.errorClass };
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
      await reportSafely(this.reporter, row, error, log);
    }
  }
}

/** Rejects when the job's signal aborts with a StartToCloseTimeout (other aborts are the handler's to honour). */
function abortedOnTimeout(aborted: Promise<never>, job: ActiveJob): Promise<never> {
  return aborted.catch((reason: unknown) => {
    if (reason instanceof StartToCloseTimeout) throw reason;
    // Cancels and shutdown aborts: wait for the handler itself (cooperative), i.e. never settle here.
    void job;
    return new Promise<never>(() => undefined);
  });
}

async function runHook(fn: () => unknown, timeoutMs: number, log: Logger, name: string): Promise<void> {
  try {
    await withTimeout(
      Promise.resolve().then(fn),
      timeoutMs,
      () => new Error(`${name} hook timed out after ${timeoutMs} ms`),
    );
  } catch (err) {
    log.warn({ err, hook: name }, 'hook-failed');
  }
}
