import type { AnyActor } from '../core/actor.js';
import type { ClaimedJob } from '../backend/types.js';
import type { ErrorInfo, Settlement } from '../backend/worker-types.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ResultTooLarge } from '../errors/job-errors.js';
import { HeartbeatTimeout } from '../errors/progress-errors.js';
import { PayloadValidationError } from '../errors/payload-validation-error.js';
import { jobLogFields } from '../obs/job-log-context.js';
import { LazyChildLogger } from '../obs/lazy-child-logger.js';
import type { Logger } from '../obs/logger.js';
import { ReservationUnavailable } from '../ratelimit/errors.js';
import { DEFAULT_RESERVATION_BACKOFF_MS } from '../ratelimit/types.js';
import {
  CancelRequested,
  RetryAfter,
  Snooze,
  StartToCloseTimeout,
  WorkerShutdown,
} from '../retry/control-flow.js';
import { classifyFailure } from '../retry/retry-classifier.js';
import { toJsonText, validateSchema } from '../core/schema-validation.js';
import { toErrorInfo } from './error-info.js';

/**
 * Longest wait after a reservation denial. A reservation's hint is the earliest time a held lease
 * could expire — right for a crashed holder, far too pessimistic for a live one, which releases
 * its slot the moment its handler ends. Capping the wait keeps a capped queue flowing; a rate
 * limit's hint is exact (the next token) and is used as is.
 */
export const RESERVATION_DENIAL_MAX_DELAY_MS = 1000;

/** The reschedule delay of a denial, stretched by up to 20 % so denied jobs do not return in lockstep. */
export function denialDelayMs(err: ReservationUnavailable): number {
  const hint =
    err.source === 'reservation'
      ? Math.min(err.retryAfterMs, RESERVATION_DENIAL_MAX_DELAY_MS)
      : err.retryAfterMs;
  return Math.round(hint * (1 + Math.random() * 0.2));
}

/** When the attempt's handler started and how long the attempt took. */
export interface AttemptTiming {
  handlerStartedAt: Date;
  durationMs: number;
}

/** What a returned handler leads to: the outcome to write, and the error the hooks get (or null). */
export interface ReturnOutcome {
  outcome: Settlement;
  error: unknown;
}

/** The settings the outcomes depend on. */
export interface AttemptOutcomeSettings {
  maxRetryBackoffMs: number;
  resultMaxBytes: number;
  exceptionMessageMaxChars: number;
  exceptionRedactionEnabled: boolean;
}

/**
 * Turns the way an attempt ended (a returned value, a thrown error, an aborted signal, a denial by a
 * limit) into the settlement the completer writes. No side effects beyond logging: the runner acts on the result.
 */
export class AttemptOutcomes {
  constructor(
    private readonly workerId: string,
    private readonly settings: AttemptOutcomeSettings,
    private readonly logger: Logger,
  ) {}

  /** The error as stored on the job and its attempt row (truncated and redacted per the settings). */
  errorInfo(err: unknown): ErrorInfo {
    return toErrorInfo(err, {
      maxChars: this.settings.exceptionMessageMaxChars,
      redact: this.settings.exceptionRedactionEnabled,
    });
  }

  /**
   * The handler returned: the result is validated against the result schema and size-checked;
   * a rejected result fails the attempt (and is the error the hooks get). Without a result schema
   * the outcome is ready at once (no promise: this runs for every job).
   */
  ofReturn(
    actor: AnyActor,
    row: ClaimedJob,
    value: unknown,
    timing: AttemptTiming,
  ): ReturnOutcome | Promise<ReturnOutcome> {
    if (!actor.resultSchema) return this.ofResult(actor, row, value, timing);
    return validateSchema(actor.resultSchema, value, { actor: actor.name, what: 'result' }).then(
      (out) => this.ofResult(actor, row, out, timing),
      (err: unknown) => ({ outcome: this.failure(actor, row, err, timing), error: err }),
    );
  }

  /** A (valid) result: serialized and size-checked. */
  private ofResult(actor: AnyActor, row: ClaimedJob, out: unknown, timing: AttemptTiming): ReturnOutcome {
    try {
      const json = out === undefined ? null : toJsonText(out, { actor: actor.name, what: 'result' });
      const size = json === null ? null : Buffer.byteLength(json, 'utf8');
      if (size !== null && size > this.settings.resultMaxBytes)
        throw new ResultTooLarge(this.settings.resultMaxBytes, size);
      return {
        outcome: {
          kind: 'succeeded',
          jobId: row.id,
          workerId: this.workerId,
          ...timing,
          resultJson: json,
          resultSizeBytes: size,
          fallbackResultTtlMs: actor.resultTtlMs,
        },
        error: null,
      };
    } catch (err) {
      return { outcome: this.failure(actor, row, err, timing), error: err };
    }
  }

  /** The limits refused the job before its handler: a denial reschedules without using an attempt. */
  refusedByLimits(actor: AnyActor, row: ClaimedJob, err: unknown, timing: AttemptTiming): Settlement {
    const base = { jobId: row.id, workerId: this.workerId, ...timing };
    if (err instanceof ReservationUnavailable)
      return {
        ...base,
        kind: 'reschedule',
        delayMs: denialDelayMs(err),
        consumeBudget: false,
        outcome: err.source === 'reservation' ? 'reservation_denied' : 'rate_limit_denied',
        error: this.errorInfo(err),
      };
    if (err instanceof PayloadValidationError || err instanceof InvalidArgumentError)
      return this.failure(actor, row, err, timing);
    this.logger.error({ err, ...jobLogFields(row) }, 'ratelimit-acquire-failed');
    return {
      ...base,
      kind: 'reschedule',
      delayMs: DEFAULT_RESERVATION_BACKOFF_MS,
      consumeBudget: false,
      outcome: 'retry_after',
      error: this.errorInfo(err),
    };
  }

  /** The handler threw (or its signal aborted): snooze, retry-after, cancel, release or failure. */
  ofError(
    actor: AnyActor,
    row: ClaimedJob,
    err: unknown,
    signal: Pick<AbortSignal, 'aborted' | 'reason'>,
    timing: AttemptTiming,
  ): Settlement {
    const base = { jobId: row.id, workerId: this.workerId, ...timing };
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
        error: this.errorInfo(err),
      };
    const reason: unknown = signal.aborted ? signal.reason : null;
    if (reason instanceof CancelRequested)
      return { ...base, kind: 'cancelled', error: this.errorInfo(reason) };
    if (reason instanceof WorkerShutdown) return { ...base, kind: 'release', error: this.errorInfo(reason) };
    if (reason instanceof StartToCloseTimeout || reason instanceof HeartbeatTimeout)
      return this.failure(actor, row, reason, timing);
    return this.failure(actor, row, err, timing);
  }

  /** A failed attempt: retried later or failed for good, as the actor's retry policy decides. */
  failure(actor: AnyActor, row: ClaimedJob, err: unknown, timing: AttemptTiming): Settlement {
    const decision = classifyFailure(actor, err, row.attempt, {
      maxRetryBackoffMs: this.settings.maxRetryBackoffMs,
      // The classifier's own lines (a failing hook) are about this job: they carry its fields.
      logger: new LazyChildLogger(this.logger, jobLogFields(row)),
    });
    return {
      kind: 'failed',
      jobId: row.id,
      workerId: this.workerId,
      ...timing,
      retryDelayMs: decision.kind === 'retry' ? decision.delayMs : null,
      error: this.errorInfo(err),
    };
  }
}
