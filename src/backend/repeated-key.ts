import { DuplicateIdempotencyKeyError } from '../errors/job-errors.js';
import type { EnqueueArgs } from './types.js';

/**
 * Throws {@link DuplicateIdempotencyKeyError} when two items of an `enqueueBatchFast` batch share an
 * idempotency key (in one scope): checked before anything is written, the same way by every backend.
 */
export function assertNoRepeatedKey(list: readonly EnqueueArgs[]): void {
  const seen = new Set<string>();
  for (const a of list) {
    if (a.idempotencyKey === null) continue;
    const k = `${a.idempotencyScope}\u0000${a.idempotencyKey}`;
    if (seen.has(k))
      throw new DuplicateIdempotencyKeyError({
        actor: a.actor,
        idempotencyScope: a.idempotencyScope,
        idempotencyKey: a.idempotencyKey,
        where: 'batch',
      });
    seen.add(k);
  }
}

/** Throws {@link DuplicateIdempotencyKeyError} for the first item whose key `isStored` says is taken. */
export function assertKeysFree(
  list: readonly EnqueueArgs[],
  isStored: (scope: string, key: string) => boolean,
): void {
  for (const a of list) {
    if (a.idempotencyKey !== null && isStored(a.idempotencyScope, a.idempotencyKey))
      throw new DuplicateIdempotencyKeyError({
        actor: a.actor,
        idempotencyScope: a.idempotencyScope,
        idempotencyKey: a.idempotencyKey,
        where: 'stored',
      });
  }
}
