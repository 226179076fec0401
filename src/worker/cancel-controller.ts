import type { Backend } from '../backend/backend.js';
import type { CancelCause, CancelFlag } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';

/** Where one of this worker's jobs is in the cancel protocol. 3 (abandon pending) is never stored. */
type LocalPhase = 1 | 2 | 3;

/** What the controller needs from the runner. */
export interface CancellableRunner {
  /** True while the job's handler is running here and its outcome is not yet written. */
  isRunning(jobId: string): boolean;
  /** Phase 1: abort the job's signal. */
  requestCancel(jobId: string, reason?: string | null): boolean;
  /** Phase 2: force (terminate a thread-isolated handler; stop waiting for an in-process one). */
  forceCancel(jobId: string): void;
  /** Phase 3, before the write: take the terminal write away from the consumer (skip guard). */
  claimForAbandon(jobId: string): boolean;
  /** Phase 3, after the write: free the slot and log the orphaned handler. */
  abandon(jobId: string): void;
  /** Last progress of a job, written with the abandonment. */
  progressOf(jobId: string): { seq: number; state: Record<string, unknown> } | null;
  /** The job's log fields (id, actor, queue, attempt, trace id), for the lines about it. */
  logFieldsOf?(jobId: string): object;
}

/** The message an abandoned job stores (worker.sql, markAbandoned), for its log line. */
const ABANDONED: Readonly<Record<CancelCause, string>> = {
  shutdown: 'the handler did not stop when the worker shut down, through the cancellation and cleanup graces',
  cancel: 'the handler did not stop after the cancel request, through the cancellation and cleanup graces',
};

/**
 * The three-phase cancel protocol for the jobs this worker runs (DESIGN.md §4.1):
 *
 * 1. **Cooperative** — on the first sight of a cancel (NOTIFY, or the heartbeat's poll as the
 *    fallback) the handler's `ctx.signal` aborts with `CancelRequested`. Nothing is written.
 * 2. **Forced** — `cancellationGracePeriod` later, if the handler is still running, the escalation
 *    (phase 2 and its event) is written first, and only then does the worker act: a thread-isolated
 *    handler's thread is terminated; an in-process promise cannot be killed, so it is no longer
 *    waited for. A phase 2 already in the database (written elsewhere) is adopted without a write.
 * 3. **Abandoned** — `cleanupGracePeriod` after that, a handler still running is given up: the
 *    consumer loses the right to write (skip guard), then the job is marked `abandoned` — after the
 *    heartbeat's own statements, never inside them — its slot is freed and the orphan is logged.
 */
export class CancelController {
  private readonly jobs = new Map<string, { phase: LocalPhase; observedAt: number }>();
  private wakeTimer: NodeJS.Timeout | null = null;
  /** Jobs moved to each phase since start (metrics): `1`, `2-adopted`, `2-forced`, `abandoned`. */
  readonly transitions = new Map<string, number>();

  constructor(
    private readonly backend: Backend,
    private readonly runner: CancellableRunner,
    private readonly workerId: string,
    private readonly graces: { cancellationMs: number; cleanupMs: number },
    private readonly logger: Logger,
    /** Asks the heartbeat to run now (a grace elapsed). */
    private readonly wakeHeartbeat: () => void,
  ) {}

  /** Jobs currently in the protocol, with their local phase (tests, health). */
  phases(): Map<string, LocalPhase> {
    return new Map([...this.jobs].map(([id, j]) => [id, j.phase]));
  }

  /**
   * A cancel seen for one of our jobs, with the phase stored in the database; `via` says how it
   * arrived (the NOTIFY, or the heartbeat's poll as the fallback), for the log.
   */
  observe(jobId: string, dbPhase: 0 | 1 | 2 = 1, via: 'notify' | 'poll' = 'notify'): void {
    if (!this.runner.isRunning(jobId)) return;
    let local = this.jobs.get(jobId);
    if (!local) {
      local = { phase: 1, observedAt: performance.now() };
      this.jobs.set(jobId, local);
      this.runner.requestCancel(jobId);
      this.logger.info({ ...this.fieldsOf(jobId), via }, 'cancel-phase-1-cooperative');
      this.count('1');
      this.scheduleWake(this.graces.cancellationMs);
    }
    if (dbPhase === 2 && local.phase === 1) {
      local.phase = 2;
      this.logger.info(this.fieldsOf(jobId), 'cancel-phase-2-adopted');
      this.count('2-adopted');
      this.runner.forceCancel(jobId);
      this.scheduleWake(this.graces.cleanupMs);
    }
  }

  private count(phase: string): void {
    this.transitions.set(phase, (this.transitions.get(phase) ?? 0) + 1);
  }

  /** Observes every flag returned by the heartbeat's poll. */
  observeAll(flags: readonly CancelFlag[]): void {
    for (const f of flags) this.observe(f.jobId, f.phase, 'poll');
  }

  private scheduleWake(inMs: number): void {
    const due = Math.max(0, inMs) + 5;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.wakeHeartbeat();
    }, due);
    this.wakeTimer.unref?.();
  }

  /**
   * Advances every job whose grace elapsed: escalations are written (then acted on); jobs past both
   * graces are claimed for abandonment. Returns the ids to abandon — pass them to `abandon()` once
   * the heartbeat's own statements are done.
   */
  async advance(): Promise<string[]> {
    const now = performance.now();
    const toAbandon: string[] = [];
    let nextDue = Infinity;
    for (const [jobId, j] of [...this.jobs]) {
      if (!this.runner.isRunning(jobId)) {
        this.jobs.delete(jobId);
        continue;
      }
      const elapsed = now - j.observedAt;
      if (j.phase === 1) {
        if (elapsed >= this.graces.cancellationMs) {
          // The escalation is written before the worker acts on it; if the write fails, phase 1
          // stays and the next tick tries again.
          const written = await this.backend.writeCancelEscalation(jobId, this.workerId);
          if (written) {
            j.phase = 2;
            this.logger.warn(
              { ...this.fieldsOf(jobId), graceMs: this.graces.cancellationMs },
              'cancel-phase-2-forced',
            );
            this.count('2-forced');
            this.runner.forceCancel(jobId);
          } else {
            // Not at phase 1 any more: either escalated elsewhere (adopted on the next poll) or finished.
            continue;
          }
        } else {
          nextDue = Math.min(nextDue, this.graces.cancellationMs - elapsed);
          continue;
        }
      }
      if (j.phase === 2) {
        if (elapsed >= this.graces.cancellationMs + this.graces.cleanupMs) {
          if (this.runner.claimForAbandon(jobId)) {
            j.phase = 3;
            toAbandon.push(jobId);
          } else {
            this.jobs.delete(jobId);
          }
        } else {
          nextDue = Math.min(nextDue, this.graces.cancellationMs + this.graces.cleanupMs - elapsed);
        }
      }
    }
    if (nextDue !== Infinity) this.scheduleWake(nextDue);
    return toAbandon;
  }

  /**
   * Phase 3 writes, run after the heartbeat's statements: the job ends `abandoned`. At shutdown
   * (`cause` `'shutdown'`) the worker's ABANDONING phase uses the same write for the handlers it
   * gave up, after {@link escalateForShutdown}.
   */
  async abandon(jobIds: readonly string[], cause: CancelCause = 'cancel'): Promise<void> {
    for (const jobId of jobIds) {
      try {
        const written = await this.backend.markAbandoned(
          jobId,
          this.workerId,
          this.runner.progressOf(jobId),
          cause,
        );
        // A terminal failure: the job's fields, class and message, like the runner's `job-failed`.
        this.logger.error(
          {
            ...this.fieldsOf(jobId),
            written,
            errorClass: 'Abandoned',
            message: ABANDONED[cause],
          },
          cause === 'shutdown' ? 'shutdown-abandoned' : 'cancel-phase-3-abandoned',
        );
        if (written) this.count('abandoned');
      } catch (err) {
        this.logger.warn({ err, ...this.fieldsOf(jobId) }, 'mark-abandoned-failed-reclaim-will-recover');
      } finally {
        this.jobs.delete(jobId);
        this.runner.abandon(jobId);
      }
    }
  }

  /**
   * Shutdown FORCING: records phase 2 (with a `shutdown_escalated` event) for handlers the worker is
   * giving up, before acting on them; jobs already at phase 2 keep it. A failed write is logged —
   * the lease then expires and reclaim recovers the job.
   */
  async escalateForShutdown(jobIds: readonly string[]): Promise<void> {
    for (const jobId of jobIds) {
      try {
        await this.backend.writeCancelEscalation(jobId, this.workerId, 'shutdown');
      } catch (err) {
        this.logger.warn({ err, ...this.fieldsOf(jobId) }, 'shutdown-escalation-failed-reclaim-will-recover');
      }
    }
  }

  /** The job's log fields while the runner holds it, else its id alone (docs/logging.md). */
  private fieldsOf(jobId: string): object {
    return this.runner.logFieldsOf?.(jobId) ?? { jobId };
  }

  stop(): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
  }
}
