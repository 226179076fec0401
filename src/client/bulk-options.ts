import type { JobFilter, NormalizedJobFilter } from '../backend/job-filter.js';
import { RETRYABLE_TERMINAL_STATUSES } from '../backend/state-machine.js';
import { unknownKeyRule } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** Options of {@link TaskQ.retryWhere}. */
export interface RetryWhereOptions {
  /** Retry every retryable job when the filter has no predicate (default false: `EmptyFilterError`). */
  allowEmptyFilter?: boolean;
  /** Change nothing; return how many jobs the retry would send back now (default false). */
  dryRun?: boolean;
}

/**
 * What `retryWhere(filter, { dryRun: true })` returns: the count a real call would retry at this
 * moment (jobs may finish or be pruned before the real call).
 */
export interface RetryWherePreview {
  /** Always true: nothing was changed. */
  dryRun: true;
  /** Failed, crashed, cancelled or abandoned jobs that would go back to `pending`. */
  retried: number;
}

/** Options of {@link TaskQ.cancelWhere}. */
export interface CancelWhereOptions {
  /** Cancel every job when the filter has no predicate (default false: `EmptyFilterError`). */
  allowEmptyFilter?: boolean;
  /** Change nothing; return how many jobs the cancel would change now (default false). */
  dryRun?: boolean;
}

/**
 * What `cancelWhere(filter, reason, { dryRun: true })` returns: the counts a real call would return
 * at this moment (jobs may start, finish or arrive before the real call).
 */
export interface CancelWherePreview {
  /** Always true: nothing was changed. */
  dryRun: true;
  /** Pending or scheduled jobs that would end `cancelled` at once. */
  cancelledDirectly: number;
  /** Running jobs, not yet asked, that would be asked to cancel. */
  cancelRequested: number;
  /** `cancelledDirectly + cancelRequested`. */
  totalAffected: number;
}

/** The options of `cancelWhere` and `retryWhere`. */
const BULK_OPTION_KEYS: readonly string[] = ['allowEmptyFilter', 'dryRun'];

/**
 * A bulk call's options object: known keys only, each a boolean (or absent).
 * @throws InvalidArgumentError naming `<method>.options.<key>`
 */
export function checkBulkOptions(options: unknown, method: 'cancelWhere' | 'retryWhere'): void {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`${method}.options`, options, 'must be an object');
  for (const [key, value] of Object.entries(options)) {
    if (!BULK_OPTION_KEYS.includes(key))
      throw new InvalidArgumentError(
        `${method}.options.${key}`,
        value,
        unknownKeyRule(key, BULK_OPTION_KEYS, `an option of ${method}`),
      );
    if (value !== undefined && typeof value !== 'boolean')
      throw new InvalidArgumentError(`${method}.options.${key}`, value, 'must be a boolean');
  }
}

/**
 * Refuses a `retryWhere` filter that names only jobs it cannot retry: `active: true`, or a status
 * other than failed, crashed, cancelled and abandoned (a retry of them would do nothing).
 * @throws InvalidArgumentError naming `filter.active` or `filter.status`
 */
export function checkRetryableFilter(filter: JobFilter | undefined, normalized: NormalizedJobFilter): void {
  if (filter?.active === true)
    throw new InvalidArgumentError(
      'filter.active',
      true,
      'matches no job retryWhere can retry: it retries failed, crashed, cancelled and abandoned jobs',
    );
  if (filter?.status === undefined) return;
  const notRetryable = (normalized.statuses ?? []).find((st) => !RETRYABLE_TERMINAL_STATUSES.has(st));
  if (notRetryable !== undefined)
    throw new InvalidArgumentError(
      'filter.status',
      notRetryable,
      'cannot be retried: retryWhere retries failed, crashed, cancelled and abandoned jobs',
    );
}
