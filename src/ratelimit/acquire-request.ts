import type { SlidingWindow } from './sliding-window.js';
import type { TokenBucket } from './token-bucket.js';

/** A rate-limit primitive. */
export type RateLimitPrimitive = TokenBucket | SlidingWindow;

/**
 * An entry of an actor's `rateLimits` / `reservations`: a registered name, a primitive instance
 * (registered at worker startup by `collectActorPrimitives`), or a keyed ref. Structurally the
 * actor module's `LimitEntry`.
 */
export type ActorLimitEntry = string | { readonly name?: string; readonly baseName?: string };

/** What `acquireForActor()` acquires, for one job. */
export interface ActorAcquireRequest {
  /** Rate limits, acquired after the reservations, in order, one token each. */
  rateLimits?: readonly ActorLimitEntry[];
  /** Reservations, acquired first, in order. */
  reservations?: readonly ActorLimitEntry[];
  /** The job (a UUID). */
  jobId: string;
  /** The worker (a UUID). */
  workerId: string;
  /** The job's payload; required when an entry is a keyed ref (validated by the ref's schema). */
  payload?: unknown;
  /** Actor name, for payload-validation messages. */
  actor?: string;
  /**
   * Level of the `composition-denied` line a denial logs. Default `'info'`. The worker asks for
   * `'debug'` on the tries it may still wait out, and logs the denial that ends the wait at info.
   */
  denialLogLevel?: 'info' | 'debug';
}

/** The keys of {@link ActorAcquireRequest}: any other is refused (a misspelt `denialLogLevel` kept info). */
export const ACTOR_ACQUIRE_REQUEST_KEYS: readonly string[] = [
  'rateLimits',
  'reservations',
  'jobId',
  'workerId',
  'payload',
  'actor',
  'denialLogLevel',
];
