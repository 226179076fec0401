import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkActorName, checkQueueName } from '../core/text-checks.js';
import type { ActorCapacityChange, QueueMode } from './types.js';

/**
 * The rules of operator configuration (queue modes and caps, actors' capacity), checked by both
 * backends before anything is written, so that the CLI, the admin pages and direct callers get the
 * same errors.
 */

/** Checks a queue mode change. */
export function checkQueueMode(queue: unknown, mode: unknown): { queue: string; mode: QueueMode } {
  checkQueueName(queue, 'queue');
  if (mode !== 'strict_fifo' && mode !== 'round_robin')
    throw new InvalidArgumentError('mode', mode, 'must be strict_fifo or round_robin');
  return { queue: queue as string, mode };
}

/** Checks a queue cap change (null clears the cap). */
export function checkQueueCap(queue: unknown, maxConcurrent: unknown): number | null {
  checkQueueName(queue, 'queue');
  if (maxConcurrent === null) return null;
  if (typeof maxConcurrent !== 'number' || !Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new InvalidArgumentError(
      'maxConcurrent',
      maxConcurrent,
      'must be an integer >= 1 (or null to clear; 0 is not a cap, use the actor-level maxConcurrent 0 to drain)',
    );
  }
  return maxConcurrent;
}

const intOrNull = (v: unknown, field: string): number | null => {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new InvalidArgumentError(field, v, 'must be an integer >= 0 (or null to clear)');
  return v;
};

/** Checks an actor capacity change; returns the values to store (null where cleared or unchanged). */
export function checkActorCapacity(
  actor: unknown,
  change: ActorCapacityChange,
): { maxConcurrent: number | null; maxPending: number | null; resultTtlMs: number | null } {
  checkActorName(actor, 'actor');
  if (change === null || typeof change !== 'object')
    throw new InvalidArgumentError('change', change, 'must be an object');
  const ttl = change.resultTtlMs;
  if (ttl !== undefined && ttl !== null && (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < 0))
    throw new InvalidArgumentError('resultTtl', ttl, 'must be a duration >= 0 (or null to clear)');
  return {
    maxConcurrent: intOrNull(change.maxConcurrent, 'maxConcurrent'),
    maxPending: intOrNull(change.maxPending, 'maxPending'),
    resultTtlMs: ttl ?? null,
  };
}
