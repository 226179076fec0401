import { checkKnownKeys } from '../core/closest-name.js';
import { toMs, toMsOrNull, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { RETRY_KINDS, type RetryKind } from '../backend/types.js';

/** Shape of the delay between attempts. */
export type BackoffKind = 'exponential' | 'linear' | 'fixed';

/** Options of {@link RetryPolicy}; every field is optional. */
export interface RetryPolicyOptions {
  /** `transient` (default): retry up to `maxAttempts`; `indefinite`: always; `nonRetryable`: never. */
  kind?: RetryKind;
  /** Attempts allowed for `transient` (including the first). Default 3. */
  maxAttempts?: number;
  /**
   * Overall deadline across all attempts, anchored to the database clock at enqueue. A retry that
   * would start after it fails the job with `DeadlineExceeded`. Default: none.
   */
  timeBudget?: Duration;
  /** Delay growth: `exponential` (default) `base·2^(n-1)`, `linear` `base·n`, `fixed` `base`. */
  backoff?: BackoffKind;
  /** Base delay. Default 5 s. */
  base?: Duration;
  /** Largest delay for this actor (itself capped by the worker's `maxRetryBackoff`). Default 1 h. */
  cap?: Duration;
  /** Random spread as a fraction of the delay: 0.2 (default) spreads ±20 %. 0–1. */
  jitter?: number;
}

const BACKOFFS: readonly BackoffKind[] = ['exponential', 'linear', 'fixed'];
const OPTION_KEYS: readonly string[] = [
  'kind',
  'maxAttempts',
  'timeBudget',
  'backoff',
  'base',
  'cap',
  'jitter',
];

/** An actor's retry policy, validated, with durations in milliseconds. */
export class RetryPolicy {
  readonly kind: RetryKind;
  readonly maxAttempts: number;
  /** Overall deadline in ms, or null. */
  readonly timeBudgetMs: number | null;
  readonly backoff: BackoffKind;
  readonly baseMs: number;
  readonly capMs: number;
  readonly jitter: number;

  constructor(options: RetryPolicyOptions = {}, field = 'retry') {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError(field, options, 'must be a RetryPolicy options object');
    // A misspelt key (`baseMs` for `base`) would otherwise leave its default in force unnoticed.
    checkKnownKeys(options, OPTION_KEYS, field, 'an option of a retry policy');
    const kind = options.kind ?? 'transient';
    if (!RETRY_KINDS.includes(kind))
      throw new InvalidArgumentError(`${field}.kind`, kind, `must be one of ${RETRY_KINDS.join(', ')}`);
    const maxAttempts = options.maxAttempts ?? 3;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000_000) {
      throw new InvalidArgumentError(
        `${field}.maxAttempts`,
        maxAttempts,
        'must be an integer between 1 and 1000000',
      );
    }
    const backoff = options.backoff ?? 'exponential';
    if (!BACKOFFS.includes(backoff))
      throw new InvalidArgumentError(`${field}.backoff`, backoff, `must be one of ${BACKOFFS.join(', ')}`);
    const jitter = options.jitter ?? 0.2;
    if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
      throw new InvalidArgumentError(`${field}.jitter`, jitter, 'must be a number between 0 and 1');
    }
    this.kind = kind;
    this.maxAttempts = maxAttempts;
    this.timeBudgetMs = toMsOrNull(options.timeBudget, `${field}.timeBudget`);
    this.backoff = backoff;
    this.baseMs = toMs(options.base ?? 5000, `${field}.base`, 'nonNegative');
    this.capMs = toMs(options.cap ?? 3_600_000, `${field}.cap`, 'nonNegative');
    this.jitter = jitter;
    Object.freeze(this);
  }

  /** Normalises an options object or an existing policy. */
  static from(value: RetryPolicy | RetryPolicyOptions | undefined, field = 'retry'): RetryPolicy {
    if (value instanceof RetryPolicy) return value;
    if (value !== undefined && (value === null || typeof value !== 'object')) {
      throw new InvalidArgumentError(field, value, 'must be a RetryPolicy or an options object');
    }
    return new RetryPolicy(value ?? {}, field);
  }

  /**
   * Delay before the next attempt after attempt `attempt` (1-based) failed, in ms: the backoff
   * shape, capped by `min(cap, maxRetryBackoffMs)`, then spread by ±`jitter` (never below zero).
   */
  delayMs(attempt: number, maxRetryBackoffMs = 86_400_000, random: () => number = Math.random): number {
    const n = Math.max(1, attempt);
    let raw: number;
    switch (this.backoff) {
      case 'exponential':
        raw = this.baseMs * 2 ** Math.min(n - 1, 60);
        break;
      case 'linear':
        raw = this.baseMs * n;
        break;
      case 'fixed':
        raw = this.baseMs;
        break;
    }
    const capped = Math.min(raw, this.capMs, maxRetryBackoffMs);
    const spread = capped * this.jitter * (random() * 2 - 1);
    return Math.max(0, Math.min(Math.round(capped + spread), maxRetryBackoffMs));
  }
}
