import type { ActorDefinition, RetryOverride } from '../core/actor.js';
import { RETRY_KINDS } from '../backend/types.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { toMs } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { PayloadValidationError } from '../errors/payload-validation-error.js';
import { ResultTooLarge } from '../errors/job-errors.js';
import { DependencyNotCloneable } from '../errors/di-errors.js';
import type { Logger } from '../obs/logger.js';
import { isSchemaLibraryError } from '../core/schema-validation.js';

/** Decision: retry after `delayMs` (0 = immediately, the job lands `pending`). */
export interface Retry {
  readonly kind: 'retry';
  readonly delayMs: number;
}

/** Decision: fail for good. */
export interface Fail {
  readonly kind: 'fail';
  /** Name of the error class that decided it. */
  readonly errorClass: string;
  /** False when the error is one that must never be retried. */
  readonly retryable: boolean;
}

/** What to do after an attempt threw. */
export type RetryDecision = Retry | Fail;

/** The name used for an error in `error_class` columns. */
export function errorClassName(error: unknown): string {
  if (error instanceof Error)
    return error.constructor?.name && error.constructor.name !== 'Error'
      ? error.constructor.name
      : error.name || 'Error';
  return typeof error;
}

/**
 * Decides retry or failure for a thrown error. Pure: no clock, no deadline (the database decides
 * deadlines when the retry is written). The order is fixed:
 *
 * 1. an error whose class is in the actor's `nonRetryableErrors` → fail;
 * 2. `PayloadValidationError` → fail; 3. `ResultTooLarge` → fail (re-running repeats the side effects);
 * 4. an error a schema library threw by itself (a `ZodError` from `schema.parse()` in the handler;
 *    see `isSchemaLibraryError`) → fail as `PayloadValidationError`: the same input fails the same way;
 * 5. the actor's `retryClassifier` hook may override kind and/or delay (a throwing hook is logged and ignored);
 * 6. `nonRetryable` → fail; `transient` → retry while `attempt < maxAttempts`; `indefinite` → retry.
 *
 * The delay is the hook's (capped by `maxRetryBackoffMs`) or the policy's backoff for `attempt`.
 */
export function classifyFailure(
  actor: Pick<ActorDefinition, 'name' | 'retry' | 'nonRetryableErrors' | 'retryClassifier'>,
  error: unknown,
  attempt: number,
  options: { maxRetryBackoffMs: number; logger?: Logger; random?: () => number },
): RetryDecision {
  checkKnownKeys(options, CLASSIFY_OPTION_KEYS, 'classifyFailure.options', 'an option of classifyFailure');
  const errorClass = errorClassName(error);
  // Errors from a handler thread were rebuilt on this side: they match by class name.
  const threadClass = (error as { originalClass?: unknown } | null)?.originalClass;
  for (const cls of actor.nonRetryableErrors) {
    if (error instanceof (cls as unknown as abstract new (...args: never[]) => unknown))
      return { kind: 'fail', errorClass, retryable: false };
    if (typeof threadClass === 'string' && threadClass === cls.name)
      return { kind: 'fail', errorClass, retryable: false };
  }
  if (error instanceof PayloadValidationError)
    return { kind: 'fail', errorClass: 'PayloadValidationError', retryable: false };
  if (error instanceof ResultTooLarge)
    return { kind: 'fail', errorClass: 'ResultTooLarge', retryable: false };
  // Cloning the same value fails the same way on every attempt.
  if (error instanceof DependencyNotCloneable)
    return { kind: 'fail', errorClass: 'DependencyNotCloneable', retryable: false };
  if (isSchemaLibraryError(error))
    return { kind: 'fail', errorClass: 'PayloadValidationError', retryable: false };

  let override: RetryOverride | null | undefined = null;
  if (actor.retryClassifier) {
    try {
      override = checkOverride(actor.retryClassifier(error, attempt), actor.name);
    } catch (hookError) {
      options.logger?.warn({ actor: actor.name, err: hookError }, 'retry-classifier-hook-failed');
      override = null;
    }
  }
  const kind = override?.kind ?? actor.retry.kind;
  let overrideDelay: number | null = null;
  if (override?.delay !== undefined) {
    try {
      overrideDelay = Math.min(
        toMs(override.delay, 'RetryOverride.delay', 'nonNegative'),
        options.maxRetryBackoffMs,
      );
    } catch (badDelay) {
      options.logger?.warn({ actor: actor.name, err: badDelay }, 'retry-classifier-bad-delay');
    }
  }
  const delayMs = overrideDelay ?? actor.retry.delayMs(attempt, options.maxRetryBackoffMs, options.random);
  switch (kind) {
    case 'nonRetryable':
      return { kind: 'fail', errorClass, retryable: false };
    case 'transient':
      return attempt < actor.retry.maxAttempts
        ? { kind: 'retry', delayMs }
        : { kind: 'fail', errorClass, retryable: false };
    case 'indefinite':
      return { kind: 'retry', delayMs };
    default:
      return { kind: 'fail', errorClass, retryable: false };
  }
}

const CLASSIFY_OPTION_KEYS: readonly string[] = ['maxRetryBackoffMs', 'logger', 'random'];
const OVERRIDE_KEYS: readonly string[] = ['kind', 'delay'];

/**
 * The hook's override, checked: an object of `kind` and `delay` with a known kind, or nothing. A
 * misspelt key (`delayMs`) or an unknown kind throws, and the caller treats it as a failed hook
 * (logged, the policy applies) instead of quietly retrying on the policy's terms.
 */
function checkOverride(value: unknown, actorName: string): RetryOverride | null | undefined {
  if (value === null || value === undefined) return value;
  const field = `actor(${actorName}).retryClassifier() result`;
  if (typeof value !== 'object')
    throw new InvalidArgumentError(field, value, 'must be { kind?, delay? }, null or undefined');
  checkKnownKeys(value, OVERRIDE_KEYS, field, 'a field of a retry override ({ kind?, delay? })');
  const kind = (value as RetryOverride).kind;
  if (kind !== undefined && !RETRY_KINDS.includes(kind))
    throw new InvalidArgumentError(`${field}.kind`, kind, `must be one of ${RETRY_KINDS.join(', ')}`);
  return value as RetryOverride;
}
