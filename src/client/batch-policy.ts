import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * When a batch gives up. Subclass it, or use {@link AbortBatchAfter}; the backend stores and acts on
 * `failureThreshold` (the count of consecutive failed children at which the batch aborts; null:
 * never), so `shouldAbort` documents the rule and is what the client checks against.
 */
export abstract class BatchFailurePolicy {
  /** Consecutive failed children at which the batch aborts; null: never. */
  abstract readonly failureThreshold: number | null;

  constructor() {
    if (new.target === BatchFailurePolicy)
      throw new TypeError('BatchFailurePolicy is abstract: use AbortBatchAfter or a subclass');
  }

  /** True when `consecutiveFailures` failed children in a row abort the batch. */
  shouldAbort(consecutiveFailures: number): boolean {
    return this.failureThreshold !== null && consecutiveFailures >= this.failureThreshold;
  }
}

/**
 * Aborts the batch at `consecutiveFailures` failed children in a row (a succeeded child resets the
 * count; cancelled, crashed and abandoned ones leave it). On abort the batch's pending and
 * scheduled children, and those claimed but not started, are cancelled in the same transaction as
 * the failure that tripped it, with the message "Batch aborted due to consecutive failures";
 * started children finish.
 */
export class AbortBatchAfter extends BatchFailurePolicy {
  readonly failureThreshold: number;

  /** @throws InvalidArgumentError unless `consecutiveFailures` is a whole number ≥ 1 */
  constructor(readonly consecutiveFailures: number) {
    super();
    if (
      !Number.isSafeInteger(consecutiveFailures) ||
      consecutiveFailures < 1 ||
      consecutiveFailures > 2_147_483_647
    )
      throw new InvalidArgumentError(
        'AbortBatchAfter.consecutiveFailures',
        consecutiveFailures,
        'must be a whole number of at least 1',
      );
    this.failureThreshold = consecutiveFailures;
  }
}
