import type { AnyActor } from '../core/actor.js';
import type { JobContext } from '../core/context.js';
import type { Span } from '@opentelemetry/api';

import type { ClaimedJob, JobRow } from '../backend/types.js';
import type { ProgressSnapshot, Settlement, SettleResult } from '../backend/worker-types.js';
import { TaskQError } from '../errors/taskq-error.js';
import { DIError } from '../errors/di-errors.js';
import {
  jobLogFields,
  runInJobScope,
  type JobLogFields,
  type JobScopedLogger,
} from '../obs/job-log-context.js';
import { LazyChildLogger } from '../obs/lazy-child-logger.js';
import { NON_RECORDING_SPAN } from '../obs/tracing/non-recording-span.js';
import { ProcessTracing } from '../obs/tracing/process-tracing.js';
import type { Logger } from '../obs/logger.js';
import { CancelRequested, WorkerShutdown } from '../retry/control-flow.js';
import { checkSchema } from '../core/schema-validation.js';
import type { Completer } from './completer.js';
import type { ErrorReporter } from './error-reporter.js';
import { LazyAbort } from './lazy-abort.js';
import { RunContext } from './run-context.js';
import { withTimeout } from './sleep.js';
import { startThreadHandler, superviseTimeouts } from './handler-supervision.js';
import type { ProgressTracker } from './progress-tracker.js';
import type { ThreadPool } from './threads/thread-pool.js';
import type { ProgressPublisher } from '../progress/progress-event.js';
import { ReservationUnavailable } from '../ratelimit/errors.js';
import type { AcquiredResource } from '../ratelimit/handles.js';
import type { RateLimitGate } from './rate-limit-gate.js';
import { AttemptOutcomes, type AttemptOutcomeSettings } from './attempt-outcomes.js';
import { OutcomeAftermath } from './outcome-aftermath.js';
import type { WorkerMetrics } from '../obs/metrics/worker-metrics.js';
import { StartMarks } from './start-marks.js';
import type { SubJobEnvironment } from './sub-job-environment.js';
import type { AttemptSubJobs } from './sub-jobs.js';
import { settleWithSubJobs } from './sub-job-settlement.js';
import type { JobScope } from './job-scope.js';

export { RESERVATION_DENIAL_MAX_DELAY_MS, denialDelayMs } from './attempt-outcomes.js';

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
export interface RunnerSettings extends AttemptOutcomeSettings {
  maxConcurrency: number;
  defaultStartToCloseMs: number | null;
  cleanupGracePeriodMs: number;
  /** `process <actor>` spans for attempts (default true; false: no tracer is called). */
  otelEnabled?: boolean;
}

/** Collaborators of the runner. */
export interface JobRunnerDeps {
  actors: ReadonlyMap<string, AnyActor>;
  workerId: string;
  settings: RunnerSettings;
  completer: Completer;
  logger: Logger;
  reporter: ErrorReporter;
  tracker: ProgressTracker;
  /** Called when capacity may have been freed (a slot, or a written outcome). */
  onCapacity: () => void;
  /** Called when a job was rescheduled (the leader's promoter may need to look sooner). */
  onRescheduled?: () => void;
  /**
   * Called when a limit that holds for every job of the actor (not a keyed one) denied a job:
   * its other jobs would be denied too for about `retryInMs`.
   */
  onActorDenied?: (actor: string, retryInMs: number) => void;
  /** Called when a job got past its limits (the producer lets a throttled actor claim more). */
  onActorAdmitted?: (actor: string) => void;
  /** Reads a job's current row (for hooks and the error reporter). */
  readRow: (jobId: string) => Promise<JobRow | null>;
  /** Threads for thread-isolated actors (created by the worker when any actor needs them). */
  threads?: ThreadPool | null;
  /** Live progress publisher: told when a job this worker settled reached a terminal status. */
  publisher?: ProgressPublisher | null;
  /** Rate limits, reservations and queue caps, acquired before each handler (none: no gate). */
  limits?: RateLimitGate | null;
  /**
   * Records that the handlers of these jobs (claimed into the local queue, not yet recorded as
   * started) are about to start, durably; resolves with the ids this worker still owns
   * (`Backend.markStarted`). Without it every claimed job counts as recorded at its claim.
   */
  markStarted?: ((jobIds: string[]) => Promise<string[]>) | null;
  /** Told each written outcome (`otelEnabled`; none: nothing is recorded). */
  metrics?: WorkerMetrics | null;
  /** Called when the error reporter threw or timed out, with its class name. */
  onReporterFailed?: (reporterType: string) => void;
  /** What handlers' `ctx.jobs` enqueue with (none: `ctx.jobs` throws `SubJobsUnavailableError`). */
  subJobs?: SubJobEnvironment | null;
  /** Makes and tears down injected values around handlers of actors with `inject` (none: such actors fail). */
  jobScope?: JobScope | null;
}

/** After a failed `markStarted` write, the jobs it held wait this long before the next try. */
export const START_MARK_RETRY_MS = 500;

/** One job this worker holds: claimed (buffered), running, or finished but not yet written. */
interface ActiveJob {
  row: ClaimedJob;
  /** Aborts the attempt (cancel, timeout, lost lease, shutdown); its signal is made on demand. */
  abort: LazyAbort;
  /** Set once the outcome is handed to the completer (or the job was given up). */
  settled: boolean;
  /**
   * Its outcome is with the completer, not yet written: the job is still this worker's, and its
   * lease is renewed until the write lands (the writes queue behind each other, and one may wait).
   */
  writing?: boolean;
  started: boolean;
  /** When the handler began (for `/tasks`). */
  startedAt?: Date;
  /**
   * The database records the handler as started (`started_at`): set by the claim for a job that
   * went straight to a free slot, else by `markStarted` just before the handler begins. A handler
   * never begins before this is true, so a crash never re-runs a handler without counting its attempt.
   */
  marked: boolean;
  /** True while the job occupies a concurrency slot. */
  holdsSlot: boolean;
  /** Phase 2 of a cancel reached this job. */
  forced?: boolean;
  /** Terminates a thread-isolated handler (phase 2). */
  terminate?: () => void;
  /** Reservation slots and rate-limit tokens acquired for this run (slots freed with the slot). */
  limits?: AcquiredResource[];
  /** The attempt's `process` span while it is open (tracing on). */
  span?: Span;
  /** The attempt's `ctx.jobs`, once its handler read it: its buffered children go with the success. */
  subJobs?: AttemptSubJobs;
}

/**
 * Runs claimed jobs: re-validates the payload, builds the context, enforces `startToClose`,
 * validates and size-checks the result, classifies failures, and hands the outcome to the
 * completer.
 *
 * Claimed jobs wait in a small local queue (the producer may claim ahead of free slots); at most
 * `maxConcurrency` handlers run at once. A slot is freed as soon as the handler settles — the
 * database write happens after, batched by the completer — so a busy worker keeps its slots full.
 * A handler abandoned after a timeout or at shutdown keeps its slot until it settles or the cleanup
 * grace passes. The job stays owned (its lease renewed) until its outcome is written.
 */
export class JobRunner {
  private readonly active = new Map<string, ActiveJob>();
  private readonly queue: ActiveJob[] = [];
  private readonly holders = new Set<ActiveJob>();
  private idleWaiters: (() => void)[] = [];
  private accepting = true;

  private readonly actors: ReadonlyMap<string, AnyActor>;
  private readonly workerId: string;
  private readonly settings: RunnerSettings;
  private readonly completer: Completer;
  private readonly logger: Logger;
  private readonly tracker: ProgressTracker;
  private readonly onCapacity: () => void;
  private readonly onActorDenied: (actor: string, retryInMs: number) => void;
  private readonly onActorAdmitted: (actor: string) => void;
  private readonly threads: ThreadPool | null;
  private readonly limits: RateLimitGate | null;
  private readonly outcomes: AttemptOutcomes;
  private readonly aftermath: OutcomeAftermath;
  private readonly releases = new Set<Promise<void>>();
  private readonly markStarted: ((jobIds: string[]) => Promise<string[]>) | null;
  private readonly metrics: WorkerMetrics | null;
  private readonly subJobs: SubJobEnvironment | null;
  private readonly jobScope: JobScope | null;
  private readonly marks: StartMarks<ActiveJob>;
  /** Null when tracing is off: decided once, so the hot path then never calls a tracer. */
  private readonly tracing: ProcessTracing | null;
  /** Jobs holding a slot while their start is being recorded. */
  private readonly marking = new Set<ActiveJob>();
  /** `performance.now()` before which no unrecorded job leaves the queue (after a failed write). */
  private markRetryAt = 0;
  private markRetryTimer: NodeJS.Timeout | null = null;
  /** Recent average round trip of a `markStarted` write, in ms (null before the first). */
  private markMsEwma: number | null = null;
  private handlerMsEwma: number | null = null;
  /** Handlers orphaned by abandonment so far (metric). */
  orphanedHandlers = 0;

  constructor(deps: JobRunnerDeps) {
    this.actors = deps.actors;
    this.workerId = deps.workerId;
    this.settings = deps.settings;
    this.completer = deps.completer;
    this.logger = deps.logger;
    this.tracker = deps.tracker;
    this.onCapacity = deps.onCapacity;
    this.onActorDenied = deps.onActorDenied ?? (() => undefined);
    this.onActorAdmitted = deps.onActorAdmitted ?? (() => undefined);
    this.threads = deps.threads ?? null;
    this.limits = deps.limits ?? null;
    this.markStarted = deps.markStarted ?? null;
    this.metrics = deps.metrics ?? null;
    this.subJobs = deps.subJobs ?? null;
    this.jobScope = deps.jobScope ?? null;
    this.tracing = deps.settings.otelEnabled === false ? null : new ProcessTracing(deps.workerId);
    this.marks = new StartMarks((batch) => this.recordStarts(batch));
    this.outcomes = new AttemptOutcomes(this.workerId, this.settings, this.logger);
    this.aftermath = new OutcomeAftermath({
      reporter: deps.reporter,
      readRow: deps.readRow,
      publisher: deps.publisher ?? null,
      onRescheduled: deps.onRescheduled ?? (() => undefined),
      ...(deps.onReporterFailed ? { onReporterFailed: deps.onReporterFailed } : {}),
    });
  }

  /** True while the job's handler runs here and its outcome is not yet written. */
  isRunning(jobId: string): boolean {
    const job = this.active.get(jobId);
    return job !== undefined && job.started && !job.settled;
  }

  /** Phase 2: force a cancel. Thread-isolated handlers are terminated; in-process ones cannot be. */
  forceCancel(jobId: string): void {
    const job = this.active.get(jobId);
    if (!job || job.settled) return;
    job.forced = true;
    job.terminate?.();
  }

  /** Phase 3, before the write: the consumer may no longer write this job's outcome. */
  claimForAbandon(jobId: string): boolean {
    const job = this.active.get(jobId);
    if (!job || job.settled) return false;
    job.settled = true;
    return true;
  }

  /** Phase 3, after the write: free the slot; the handler's promise is orphaned (logged, counted). */
  abandon(jobId: string): void {
    const job = this.active.get(jobId);
    if (!job) return;
    this.orphanedHandlers++;
    this.logger.error(
      { ...jobLogFields(job.row), orphanedHandlers: this.orphanedHandlers },
      'handler-orphaned-abandoned',
    );
    this.tracker.end(jobId);
    this.endSpan(job, null);
    job.subJobs?.discard();
    this.active.delete(jobId);
    this.freeSlot(job);
    this.checkIdle();
  }

  /** The log fields of a job this worker holds (its id alone once it is let go). */
  logFieldsOf(jobId: string): JobLogFields | { jobId: string } {
    const job = this.active.get(jobId);
    return job ? jobLogFields(job.row) : { jobId };
  }

  /** Last progress of a job (written with an abandonment). */
  progressOf(jobId: string): { seq: number; state: Record<string, unknown> } | null {
    return this.tracker.snapshot(jobId);
  }

  /** Recent average handler duration in ms (exponentially weighted), or null before the first. */
  get averageHandlerMs(): number | null {
    return this.handlerMsEwma;
  }

  private observeDuration(ms: number): void {
    this.handlerMsEwma = this.handlerMsEwma === null ? ms : this.handlerMsEwma * 0.9 + ms * 0.1;
  }

  /** Handlers running (slots in use, including handlers still held after being given up). */
  get running(): number {
    return this.holders.size;
  }

  /** Claimed jobs waiting for a slot. */
  get buffered(): number {
    return this.queue.length;
  }

  /** Jobs occupying claim capacity: running plus buffered. */
  get held(): number {
    return this.holders.size + this.queue.length;
  }

  /** Every job this worker still owns or holds (running, buffered, awaiting its write, or an orphaned handler). */
  get inFlight(): number {
    let orphans = 0;
    for (const j of this.holders) if (!this.active.has(j.row.id)) orphans++;
    return this.active.size + orphans;
  }

  /**
   * The jobs this worker holds, for diagnostics (`/tasks`): id, actor, queue, attempt, where each is
   * (`queued` locally, `running`, or `settling`: its outcome is being written) and when its handler
   * began. Never payloads.
   */
  describeJobs(): {
    jobId: string;
    actor: string;
    queue: string;
    attempt: number;
    state: 'queued' | 'running' | 'settling';
    startedAt: string | null;
  }[] {
    return [...this.active.values()].map((j) => ({
      jobId: j.row.id,
      actor: j.row.actor,
      queue: j.row.queue,
      attempt: j.row.attempt,
      state: j.settled ? 'settling' : j.started ? 'running' : 'queued',
      startedAt: j.startedAt?.toISOString() ?? null,
    }));
  }

  /** Ids this worker must keep renewing: owned and not yet written. */
  ownedJobIds(): string[] {
    return [...this.active.values()].filter((j) => !j.settled || j.writing === true).map((j) => j.row.id);
  }

  /**
   * Ids of claimed jobs whose handler has not started (re-pended at shutdown): those in the local
   * queue and those whose start is being recorded (after {@link stopStarting} they no longer start).
   */
  unstartedJobIds(): string[] {
    const jobs = new Set([...this.queue, ...this.marking]);
    return [...jobs].filter((j) => !j.settled).map((j) => j.row.id);
  }

  /**
   * How many jobs of the next claim the claim itself should record as started: those that go straight
   * to a free slot (jobs already claimed and waiting take theirs first), and those the queue would
   * record ahead at once ({@link lookahead}). None while stopping.
   */
  startsRecordedByClaim(): number {
    if (!this.accepting) return 0;
    const free = Math.max(0, this.settings.maxConcurrency - this.holders.size - this.queue.length);
    return free + Math.max(0, this.lookahead() - this.queue.length);
  }

  /** Resolves when nothing is running, buffered or awaiting its write. */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private checkIdle(): void {
    // Waiters first: `inFlight` walks the running jobs, and this runs for every job written.
    if (this.idleWaiters.length > 0 && this.inFlight === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * Takes a claimed job; it starts as soon as a slot is free. `marked`: the claim recorded it as
   * started (it went straight to a free slot); otherwise its start is recorded first.
   */
  accept(row: ClaimedJob, marked = true): void {
    const job: ActiveJob = {
      row,
      abort: new LazyAbort(),
      settled: false,
      started: false,
      marked: marked || this.markStarted === null,
      holdsSlot: false,
    };
    this.active.set(row.id, job);
    this.queue.push(job);
    this.pump();
  }

  /** Stops starting buffered jobs (shutdown); they are re-pended by the caller. */
  stopStarting(): void {
    this.accepting = false;
  }

  /**
   * Fills free slots from the local queue, in order. A job the database records as started begins
   * at once; the others take their slot and begin once their start is recorded ({@link recordStarts}).
   * When handlers are shorter than that write's round trip, the next {@link lookahead} jobs of the
   * queue are recorded ahead, so that a freed slot need not wait for the write.
   */
  private pump(): void {
    let toMark: ActiveJob[] | null = null;
    const retrying = this.markRetryAt !== 0 && this.markRetryAt > performance.now();
    while (this.accepting && this.holders.size < this.settings.maxConcurrency && this.queue.length > 0) {
      const job = this.queue[0]!;
      if (job.settled) {
        this.queue.shift();
        continue;
      }
      // Unrecorded jobs wait, in order, for a write in flight (recorded ahead) or a retry.
      if (!job.marked && (this.marking.has(job) || retrying)) break;
      this.queue.shift();
      job.holdsSlot = true;
      this.holders.add(job);
      if (job.marked) this.begin(job);
      else {
        this.marking.add(job);
        (toMark ??= []).push(job);
      }
    }
    if (this.accepting && !retrying && this.queue.length > 0) {
      // The recorded jobs are usually a prefix of the queue (claims record their first rows, this
      // records from the head): walk back from the end of the window to the last recorded job, so
      // that a pump costs the jobs it records, not the window (up to the whole queue). A job this
      // misses is recorded when it takes its slot.
      const window = Math.min(this.lookahead(), this.queue.length);
      const ahead: ActiveJob[] = [];
      for (let i = window - 1; i >= 0; i--) {
        const job = this.queue[i]!;
        if (job.settled) continue;
        if (job.marked || this.marking.has(job)) break;
        ahead.push(job);
      }
      for (let i = ahead.length - 1; i >= 0; i--) {
        this.marking.add(ahead[i]!);
        (toMark ??= []).push(ahead[i]!);
      }
    }
    if (toMark !== null) this.marks.add(toMark);
  }

  /**
   * How many jobs at the head of the local queue to record as started before a slot frees: none
   * while fewer than one job starts per `markStarted` round trip (handlers longer than
   * `maxConcurrency` round trips, at the recent averages) or before both averages are known;
   * otherwise twice the jobs that start during one round trip (one write is in flight at a time, so
   * the recorded jobs must last until the next returns). A crash costs these jobs an attempt
   * although their handlers had not started: about two round trips of work, the price of not making
   * every job of a fast actor wait for a write before it starts.
   */
  private lookahead(): number {
    const avg = this.handlerMsEwma;
    const trip = this.markMsEwma;
    if (avg === null || trip === null) return 0;
    const perTrip = (this.settings.maxConcurrency * trip) / Math.max(avg, 0.001);
    return perTrip < 1 ? 0 : Math.ceil(2 * perTrip);
  }

  /** Starts the job's handler (its slot is held, its start recorded). */
  private begin(job: ActiveJob): void {
    job.started = true;
    job.startedAt = new Date();
    let run: Promise<void>;
    try {
      run = this.execute(job);
    } catch (err) {
      // `execute` is not async: what it throws before its first promise is a crash all the same.
      run = Promise.reject(err);
    }
    void run.catch((err: unknown) =>
      this.logger.error({ err, ...jobLogFields(job.row) }, 'job-runner-crashed'),
    );
  }

  /**
   * Records the start of jobs of the local queue (one statement for the batch), then begins those
   * that hold a slot and are still owned; those recorded ahead stay in the queue, ready. A job
   * given up meanwhile (lease lost, re-pended) or no longer owned is dropped; while stopping, jobs
   * go back to the queue unstarted (the drain re-pends them). A failed write puts its jobs back at
   * the head of the queue, unrecorded, and retries after {@link START_MARK_RETRY_MS}: a job never
   * begins before its start is recorded.
   */
  private async recordStarts(batch: ActiveJob[]): Promise<void> {
    let owned: Set<string> | null = null;
    const t0 = performance.now();
    try {
      owned = new Set(await this.markStarted!(batch.filter((j) => !j.settled).map((j) => j.row.id)));
      const ms = performance.now() - t0;
      this.markRetryAt = 0;
      this.markMsEwma = this.markMsEwma === null ? ms : this.markMsEwma * 0.9 + ms * 0.1;
    } catch (err) {
      this.logger.warn({ err, jobs: batch.length }, 'start-mark-failed');
    }
    const back: ActiveJob[] = [];
    const release = (job: ActiveJob): void => {
      if (!job.holdsSlot) return;
      job.holdsSlot = false;
      this.holders.delete(job);
    };
    for (const job of batch) {
      this.marking.delete(job);
      if (job.settled) {
        // Given up meanwhile (lease lost, re-pended at shutdown).
        release(job);
        if (this.active.get(job.row.id) === job) this.active.delete(job.row.id);
      } else if (owned === null) {
        if (job.holdsSlot) {
          release(job);
          back.push(job);
        }
      } else if (!owned.has(job.row.id)) {
        // Reclaimed or finished elsewhere: not this worker's to run (the queue skips it).
        this.logger.warn(jobLogFields(job.row), 'job-lease-lost');
        job.settled = true;
        release(job);
        this.active.delete(job.row.id);
      } else {
        job.marked = true;
        if (!job.holdsSlot) continue;
        if (this.accepting) this.begin(job);
        else {
          release(job);
          back.push(job);
        }
      }
    }
    if (back.length > 0) this.queue.unshift(...back);
    if (owned === null) this.retryMarksLater();
    this.checkIdle();
    this.pump();
    this.onCapacity();
  }

  private retryMarksLater(): void {
    this.markRetryAt = performance.now() + START_MARK_RETRY_MS;
    if (this.markRetryTimer !== null) return;
    this.markRetryTimer = setTimeout(() => {
      this.markRetryTimer = null;
      // Cleared here, not compared with the clock: a timer may fire a little before its delay.
      this.markRetryAt = 0;
      this.pump();
    }, START_MARK_RETRY_MS);
    this.markRetryTimer.unref();
  }

  /** Drops buffered jobs that were re-pended before they started. */
  forget(jobIds: readonly string[]): void {
    const ids = new Set(jobIds);
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const job = this.queue[i]!;
      if (ids.has(job.row.id)) {
        this.queue.splice(i, 1);
        job.settled = true;
        this.active.delete(job.row.id);
      }
    }
    // Their start was being recorded: the write's return frees their slots.
    for (const job of this.marking) {
      if (ids.has(job.row.id)) {
        job.settled = true;
        this.active.delete(job.row.id);
      }
    }
    this.checkIdle();
  }

  /** Phase 1 of a cancel: aborts the job's signal. No database write. */
  requestCancel(jobId: string, reason?: string | null): boolean {
    const job = this.active.get(jobId);
    if (!job || job.settled || job.abort.aborted) return false;
    job.abort.abort(new CancelRequested(reason));
    return true;
  }

  /** The heartbeat found these jobs owned elsewhere: stop them and do not write their outcome. */
  leaseLost(jobIds: readonly string[]): void {
    for (const id of jobIds) {
      const job = this.active.get(id);
      if (!job || job.settled) continue;
      this.logger.warn(jobLogFields(job.row), 'job-lease-lost');
      job.settled = true;
      if (!job.abort.aborted) job.abort.abort(new LeaseLost(id));
      if (!job.started) {
        const i = this.queue.indexOf(job);
        if (i >= 0) this.queue.splice(i, 1);
      }
      if (!job.holdsSlot) this.active.delete(id);
    }
    this.checkIdle();
  }

  /** Shutdown: aborts every running handler's signal with `WorkerShutdown`. */
  abortAll(): void {
    for (const job of this.active.values()) {
      if (job.started && !job.settled && !job.abort.aborted) job.abort.abort(new WorkerShutdown());
    }
  }

  /**
   * Shutdown, FORCING phase: handlers still running after both graces. Thread-isolated handlers are
   * really stopped (their thread is terminated), so their jobs go back to `pending` with the
   * attempt given back. In-process handlers cannot be stopped: their promise may go on running in
   * this process, so re-pending them could run the job twice at once; they are claimed for
   * abandonment instead (the consumer loses the right to write) and their ids returned, for the
   * escalation and `abandoned` writes (ABANDONING) — the reference's shutdown model.
   */
  async forceAtShutdown(): Promise<{ released: number; toAbandon: string[] }> {
    const stuck = [...this.active.values()].filter((j) => !j.settled);
    const threads = stuck.filter((j) => j.terminate !== undefined);
    const toAbandon: string[] = [];
    for (const job of stuck) {
      if (job.terminate === undefined && this.claimForAbandon(job.row.id)) toAbandon.push(job.row.id);
    }
    await Promise.all(
      threads.map(async (job) => {
        job.settled = true;
        job.terminate?.();
        this.logger.warn(jobLogFields(job.row), 'thread-terminated-at-shutdown');
        await this.completer
          .settle({
            kind: 'release',
            jobId: job.row.id,
            workerId: this.workerId,
            handlerStartedAt: null,
            durationMs: null,
            error: {
              errorClass: 'WorkerShutdown',
              message: 'the worker shut down before the handler finished; its thread was terminated',
              traceback: null,
            },
          })
          .catch((err: unknown) => this.logger.error({ err, ...jobLogFields(job.row) }, 'release-failed'));
        this.tracker.end(job.row.id);
        this.active.delete(job.row.id);
        this.freeSlot(job);
      }),
    );
    this.checkIdle();
    return { released: threads.length, toAbandon };
  }

  private freeSlot(job: ActiveJob): void {
    this.releaseLimits(job);
    if (!job.holdsSlot) return;
    job.holdsSlot = false;
    this.holders.delete(job);
    this.checkIdle();
    this.pump();
    this.onCapacity();
  }

  /** Frees the job's reservation slots once its handler is done (tokens stay spent). */
  private releaseLimits(job: ActiveJob): void {
    const held = job.limits;
    if (!held || !this.limits) return;
    job.limits = undefined;
    const p = this.limits.release(held).finally(() => this.releases.delete(p));
    this.releases.add(p);
  }

  /** Shutdown: waits for slot releases still in flight (before the pools close). */
  async limitsReleased(): Promise<void> {
    await Promise.allSettled([...this.releases]);
  }

  private disown(job: ActiveJob): void {
    this.active.delete(job.row.id);
    this.checkIdle();
    this.onCapacity();
  }

  /**
   * Runs one job: payload validation, limits, the handler, its outcome. Not an `async` function: the
   * common job (a synchronous or no payload schema, no limits, no timeout, not in a thread) runs on
   * promise continuations alone ({@link runPlain}). An async function keeps one suspended frame per
   * job, sized for every local of every branch, which a busy worker allocated for each job it ran.
   */
  private execute(job: ActiveJob): Promise<void> {
    const row = job.row;
    const log = new LazyChildLogger(this.logger, jobLogFields(row));
    if (this.tracing !== null) job.span = this.tracing.start(row);
    const actor = this.actors.get(row.actor);
    const clock: RunClock = { startedAt: new Date(), t0: performance.now() };
    if (!actor) {
      // Dispatch only claims registered actors; this guards a mismatch between claim and registry.
      this.freeSlot(job);
      return this.finish(
        job,
        log,
        {
          kind: 'failed',
          jobId: row.id,
          workerId: this.workerId,
          ...timing(clock),
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
    }
    if (!actor.payloadSchema) return this.admit(job, actor, row.payload, log, clock);
    const invalid = (err: unknown): Promise<void> => {
      this.freeSlot(job);
      return this.finish(job, log, this.outcomes.failure(actor, row, err, timing(clock)), err, actor);
    };
    let payload: unknown;
    try {
      payload = checkSchema(actor.payloadSchema, row.payload, {
        actor: actor.name,
        what: 'payload',
        payloadSchemaVer: row.payloadSchemaVer,
      });
    } catch (err) {
      return invalid(err);
    }
    if (payload instanceof Promise)
      return payload.then((p: unknown) => this.admit(job, actor, p, log, clock), invalid);
    return this.admit(job, actor, payload, log, clock);
  }

  /** Acquires the job's limits when any apply, then runs its handler. */
  private admit(
    job: ActiveJob,
    actor: AnyActor,
    payload: unknown,
    log: JobScopedLogger,
    clock: RunClock,
  ): Promise<void> {
    if (this.limits?.applies(job.row.queue, actor)) return this.runLimited(job, actor, payload, log, clock);
    return this.run(job, actor, payload, log, clock);
  }

  /** Acquires the limits (an async step of its own: only jobs with limits pay for it), then runs. */
  private async runLimited(
    job: ActiveJob,
    actor: AnyActor,
    payload: unknown,
    log: JobScopedLogger,
    clock: RunClock,
  ): Promise<void> {
    const row = job.row;
    const limits = this.limits!;
    try {
      job.limits = await limits.acquire(row, actor, job.abort);
      this.onActorAdmitted(actor.name);
    } catch (err) {
      this.freeSlot(job);
      const refused = this.outcomes.refusedByLimits(actor, row, err, timing(clock));
      // A limit every job of the actor shares: its other jobs would be denied too for now.
      if (
        refused.kind === 'reschedule' &&
        err instanceof ReservationUnavailable &&
        limits.deniesActorWide(row.queue, actor, err.bucketName)
      )
        this.onActorDenied(actor.name, refused.delayMs);
      return this.finish(job, log, refused, err, actor);
    }
    return this.run(job, actor, payload, log, clock);
  }

  /** Runs the handler: under supervision when it has a timeout or runs in a thread, plainly otherwise. */
  private run(
    job: ActiveJob,
    actor: AnyActor,
    payload: unknown,
    log: JobScopedLogger,
    clock: RunClock,
  ): Promise<void> {
    const row = job.row;
    const startToCloseMs = row.startToCloseMs ?? actor.startToCloseMs ?? this.settings.defaultStartToCloseMs;
    const heartbeatTimeoutMs = row.heartbeatTimeoutMs ?? actor.heartbeatTimeoutMs;
    this.tracker.begin(row);
    const ctx: JobContext = new RunContext(
      row,
      this.workerId,
      payload,
      log,
      job.abort,
      this.tracker,
      job.span ?? NON_RECORDING_SPAN,
      this.subJobs,
      job,
    );
    if (startToCloseMs === null && heartbeatTimeoutMs === null && !(actor.thread && this.threads))
      return this.runPlain(job, actor, payload, ctx, log, clock);
    return this.runSupervised(job, actor, payload, ctx, log, clock, startToCloseMs, heartbeatTimeoutMs);
  }

  /**
   * The handler with no timeout, in this thread: awaited (a cancel is the handler's to honour), its
   * outcome made from what it returned or threw.
   */
  private runPlain(
    job: ActiveJob,
    actor: AnyActor,
    payload: unknown,
    ctx: JobContext,
    log: JobScopedLogger,
    clock: RunClock,
  ): Promise<void> {
    const row = job.row;
    const failed = (err: unknown): Promise<void> =>
      this.ran(job, log, this.outcomes.ofError(actor, row, err, job.abort, timing(clock)), err, actor, clock);
    return Promise.resolve()
      .then(() => this.callHandler(job, log, actor, payload, ctx))
      .then((value: unknown) => {
        let returned: ReturnType<AttemptOutcomes['ofReturn']>;
        try {
          returned = this.outcomes.ofReturn(actor, row, value, timing(clock));
        } catch (err) {
          return failed(err);
        }
        if (returned instanceof Promise)
          return returned.then((s) => this.ran(job, log, s.outcome, s.error, actor, clock), failed);
        return this.ran(job, log, returned.outcome, returned.error, actor, clock);
      }, failed);
  }

  /** After a plain run: frees the slot and hands the outcome on (unless the job was given up meanwhile). */
  private ran(
    job: ActiveJob,
    log: JobScopedLogger,
    outcome: Settlement,
    thrown: unknown,
    actor: AnyActor,
    clock: RunClock,
  ): Promise<void> {
    this.observeDuration(performance.now() - clock.t0);
    this.freeSlot(job);
    if (!job.settled) return this.finish(job, log, outcome, thrown, actor);
    this.endSpan(job, null);
    job.subJobs?.discard();
    this.disown(job);
    return Promise.resolve();
  }

  /**
   * The handler with a timeout (`startToClose`, `heartbeatTimeout`) or in a worker thread: raced
   * against the timeout, and kept track of when it outlives it.
   */
  private async runSupervised(
    job: ActiveJob,
    actor: AnyActor,
    payload: unknown,
    ctx: JobContext,
    log: JobScopedLogger,
    clock: RunClock,
    startToCloseMs: number | null,
    heartbeatTimeoutMs: number | null,
  ): Promise<void> {
    const row = job.row;
    const abort = job.abort;
    let handler: Promise<unknown>;
    if (actor.thread && this.threads) {
      // Thread isolation: the handler runs in a worker thread, which phase 2 can terminate.
      const threads = this.threads;
      const thread = actor.thread;
      const start = (deps?: Readonly<Record<string, unknown>>): Promise<unknown> => {
        const run = startThreadHandler(threads, thread, {
          row,
          payload,
          ctx,
          workerId: this.workerId,
          tracker: this.tracker,
          log,
          abort,
          ...(deps === undefined ? {} : { deps }),
        });
        job.terminate = run.terminate;
        return run.result;
      };
      handler =
        actor.inject === null
          ? start()
          : Promise.resolve().then(() => scopedCall(this.jobScope, actor, log, start));
    } else {
      handler = Promise.resolve().then(() => this.callHandler(job, log, actor, payload, ctx));
    }
    // Without a timeout the handler is simply awaited (a cancel is the handler's to honour); the
    // race against the signal, and the watch for a handler that outlives it, exist only with one.
    const timed =
      startToCloseMs !== null || heartbeatTimeoutMs !== null
        ? superviseTimeouts(handler, abort, this.tracker, row.id, startToCloseMs, heartbeatTimeoutMs)
        : null;

    let outcome: Settlement;
    let thrown: unknown = null;
    try {
      // A handler that honours the signal settles through its own promise; one that ignores a
      // timeout is not awaited past it (its slot stays held until it settles, see below).
      const value = timed ? await timed.value : await handler;
      const returned = this.outcomes.ofReturn(actor, row, value, timing(clock));
      const settled = returned instanceof Promise ? await returned : returned;
      outcome = settled.outcome;
      thrown = settled.error;
    } catch (err) {
      thrown = err;
      outcome = this.outcomes.ofError(actor, row, err, abort, timing(clock));
    } finally {
      timed?.stop();
    }
    this.observeDuration(performance.now() - clock.t0);
    // Without a timeout the handler was awaited above, whichever way it ended.
    if (!timed || timed.settled) this.freeSlot(job);
    else {
      // Given up on (timeout): keep the slot until the handler settles or the cleanup grace passes.
      void withTimeout(timed.done, this.settings.cleanupGracePeriodMs, () => new Error('grace'))
        .catch(() => log.warn({ graceMs: this.settings.cleanupGracePeriodMs }, 'handler-orphaned'))
        .finally(() => this.freeSlot(job));
    }
    // Returned, not awaited: this frame (every local of the run) is let go while the outcome
    // waits for its batched write, which is what a busy worker's young generation held on to.
    if (!job.settled) return this.finish(job, log, outcome, thrown, actor);
    this.endSpan(job, null);
    job.subJobs?.discard();
    this.disown(job);
  }

  /**
   * Hands the attempt's outcome (with the job's last progress and heartbeat details) to the
   * completer; once it is written or given up, lets the job go and runs the write's aftermath.
   */
  private finish(
    job: ActiveJob,
    log: JobScopedLogger,
    outcome: Settlement,
    thrown: unknown,
    actor: AnyActor | null,
  ): Promise<void> {
    job.settled = true;
    job.writing = true;
    const tracked = this.tracker.end(job.row.id);
    // Set on the outcome itself (made for this job alone): a spread copy would allocate per job.
    outcome.progress = tracked.progress;
    outcome.heartbeatDetailsJson = tracked.heartbeatDetailsJson;
    if (job.subJobs !== undefined) {
      // The handler used ctx.jobs: its children go with a success, in one transaction of its own.
      return settleWithSubJobs(
        this.completer,
        this.outcomes,
        job.subJobs,
        job.row,
        log,
        outcome,
        thrown,
        actor,
      ).then(
        (w) => this.written(job, log, w.outcome, w.thrown, actor, tracked.progress, w.result),
        (err: unknown) => this.gaveUp(job, log, err),
      );
    }
    // A continuation rather than an `await` in an async function: a busy worker has a few hundred
    // outcomes waiting for their batched write at any time, and what waits with each is only what
    // this closure holds, not a suspended frame.
    return this.completer.settle(outcome).then(
      (result) => this.written(job, log, outcome, thrown, actor, tracked.progress, result),
      (err: unknown) => this.gaveUp(job, log, err),
    );
  }

  /** The outcome is written: the job is let go and the write's aftermath runs. */
  private written(
    job: ActiveJob,
    log: JobScopedLogger,
    outcome: Settlement,
    thrown: unknown,
    actor: AnyActor | null,
    progress: ProgressSnapshot | null,
    result: SettleResult,
  ): Promise<void> | undefined {
    this.endSpan(job, outcome, result);
    this.metrics?.settled(job.row, outcome, result);
    // Written: the job is no longer this worker's to renew.
    this.disownIfCurrent(job);
    return this.aftermath.afterWrite(job.row, log, outcome, thrown, actor, progress, result);
  }

  /** The write was given up (closing): the job is let go unwritten. */
  private gaveUp(job: ActiveJob, log: JobScopedLogger, err: unknown): void {
    log.error({ err }, 'settle-gave-up');
    this.endSpan(job, null);
    // Given up: the job is no longer this worker's to renew either.
    this.disownIfCurrent(job);
  }

  /**
   * Runs the handler in the job's log scope (`jobLogger()`, `currentJob()`) and, when tracing is on,
   * with the attempt's span active (so what it enqueues or traces nests under it).
   */
  private callHandler(
    job: ActiveJob,
    log: JobScopedLogger,
    actor: AnyActor,
    payload: unknown,
    ctx: JobContext,
  ): unknown {
    const span = job.span;
    const tracing = this.tracing;
    if (span === undefined || tracing === null)
      return runInJobScope(log, invokeHandler, actor, payload, ctx, log, this.jobScope);
    return runInJobScope(log, () =>
      tracing.within(span, invokeHandler, actor, payload, ctx, log, this.jobScope),
    );
  }

  /** Ends the attempt's span once (`outcome` null: given up before its outcome was written). */
  private endSpan(job: ActiveJob, outcome: Settlement | null, written: SettleResult | null = null): void {
    const span = job.span;
    if (span === undefined) return;
    job.span = undefined;
    this.tracing!.end(span, outcome, written);
  }

  /** Lets the job go, unless it was let go already or a later claim of the same job took its place. */
  private disownIfCurrent(job: ActiveJob): void {
    if (this.active.get(job.row.id) === job) this.disown(job);
  }
}

/**
 * Calls the actor's handler as its method (inside the attempt's log scope, see {@link runInJobScope});
 * an actor with `inject` inside its attempt's dependency scope.
 */
function invokeHandler(
  actor: AnyActor,
  payload: unknown,
  ctx: JobContext,
  log: Logger,
  jobScope: JobScope | null,
): unknown {
  if (actor.inject === null) return actor.handler(payload, ctx);
  return scopedCall(jobScope, actor, log, (deps) => (actor.handler as InjectedHandler)(payload, ctx, deps));
}

type InjectedHandler = (
  payload: unknown,
  ctx: JobContext,
  deps: Readonly<Record<string, unknown>>,
) => unknown;

/** `call` with the attempt's injected values, torn down after it (see job-scope.ts). */
function scopedCall(
  jobScope: JobScope | null,
  actor: AnyActor,
  log: Logger,
  call: (deps: Readonly<Record<string, unknown>>) => unknown,
): unknown {
  if (jobScope === null)
    throw new DIError(
      `actor ${JSON.stringify(actor.name)} injects dependencies but this worker has no providers: ` +
        'pass providers to the Worker (new Worker({ actors, providers }))',
    );
  return jobScope.invoke(actor, log, call);
}

/** When a handler's run started: the wall clock for its attempt row, a monotonic one for its duration. */
interface RunClock {
  startedAt: Date;
  t0: number;
}

/**
 * The attempt's start and duration. The duration is kept to the microsecond: the digits below it
 * are timer noise, and a double with all seventeen of them is slower to turn into the outcome
 * write's text.
 */
function timing(clock: RunClock): { handlerStartedAt: Date; durationMs: number } {
  return {
    handlerStartedAt: clock.startedAt,
    durationMs: Math.round((performance.now() - clock.t0) * 1000) / 1000,
  };
}
