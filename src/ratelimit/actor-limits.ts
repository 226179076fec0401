import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ConcurrencyReservation } from './concurrency-reservation.js';
import { isKeyedRateLimitRef, isKeyedReservationRef } from './keyed-refs.js';
import { publishBucket } from './maintenance.js';
import type { ActorLimitEntry, RateLimitRegistry } from './registry.js';
import { SlidingWindow } from './sliding-window.js';
import { TokenBucket } from './token-bucket.js';
import { checkRateLimitContext } from './stores/context-stores.js';
import type { RateLimitContext } from './types.js';

/** The part of an actor these helpers read (structurally an `ActorRef`). */
export interface ActorLimits {
  /** Actor name (for messages). */
  readonly name: string;
  /** Rate-limit entries. */
  readonly rateLimits?: readonly ActorLimitEntry[];
  /** Reservation entries. */
  readonly reservations?: readonly ActorLimitEntry[];
}

/** A name an actor refers to that the registry does not hold. */
export interface MissingLimit {
  /** The actor. */
  readonly actor: string;
  /** Namespace the name was looked up in. */
  readonly namespace: 'rate_limit' | 'reservation';
  /** The unknown name. */
  readonly name: string;
}

function wrongEntry(
  actor: string,
  field: string,
  i: number,
  entry: unknown,
  rule: string,
): InvalidArgumentError {
  return new InvalidArgumentError(`actor ${JSON.stringify(actor)}: ${field}[${i}]`, entry, rule);
}

/**
 * Worker startup: registers every primitive instance declared on the actors (names and keyed refs
 * are left alone). Identical re-declarations are no-ops; a conflicting one throws
 * `InvalidArgumentError` (fail fast). A reservation in `rateLimits` (or the reverse) is refused, and
 * so is an object that is neither a primitive nor a keyed ref (a hand-written `{ name }` would
 * otherwise fail every job at acquire time instead of the start).
 */
export function collectActorPrimitives(actors: Iterable<ActorLimits>, registry: RateLimitRegistry): void {
  for (const actor of actors) {
    (actor.rateLimits ?? []).forEach((entry, i) => {
      if (entry instanceof TokenBucket || entry instanceof SlidingWindow) registry.register(entry);
      else if (entry instanceof ConcurrencyReservation || isKeyedReservationRef(entry))
        throw wrongEntry(
          actor.name,
          'rateLimits',
          i,
          entry,
          'is a reservation; declare it under reservations',
        );
      else if (typeof entry !== 'string' && !isKeyedRateLimitRef(entry))
        throw wrongEntry(
          actor.name,
          'rateLimits',
          i,
          entry,
          'must be a rate-limit name, a TokenBucket / SlidingWindow or a keyedRateLimit() ref',
        );
    });
    (actor.reservations ?? []).forEach((entry, i) => {
      if (entry instanceof ConcurrencyReservation) registry.register(entry);
      else if (entry instanceof TokenBucket || entry instanceof SlidingWindow || isKeyedRateLimitRef(entry))
        throw wrongEntry(
          actor.name,
          'reservations',
          i,
          entry,
          'is a rate limit; declare it under rateLimits',
        );
      else if (typeof entry !== 'string' && !isKeyedReservationRef(entry))
        throw wrongEntry(
          actor.name,
          'reservations',
          i,
          entry,
          'must be a reservation name, a ConcurrencyReservation or a keyedReservation() ref',
        );
    });
  }
}

/**
 * Names (and unregistered instances) the actors refer to that the registry does not hold. The
 * worker refuses to start when this is not empty. Keyed refs are resolved per job and never
 * missing.
 */
export function missingNames(actors: Iterable<ActorLimits>, registry: RateLimitRegistry): MissingLimit[] {
  const out: MissingLimit[] = [];
  for (const actor of actors) {
    for (const entry of actor.rateLimits ?? []) {
      const name =
        typeof entry === 'string'
          ? entry
          : entry instanceof TokenBucket || entry instanceof SlidingWindow
            ? entry.name
            : null;
      if (name !== null && !registry.hasRateLimit(name))
        out.push({ actor: actor.name, namespace: 'rate_limit', name });
    }
    for (const entry of actor.reservations ?? []) {
      const name =
        typeof entry === 'string' ? entry : entry instanceof ConcurrencyReservation ? entry.name : null;
      if (name !== null && !registry.hasReservation(name))
        out.push({ actor: actor.name, namespace: 'reservation', name });
    }
  }
  return out;
}

/**
 * Worker startup: publishes every registered Redis- or Postgres-backed rate limit to
 * `rate_limit_buckets` so a standalone admin UI can list them (memory ones are per process and
 * skipped). Static rows are marked not keyed. Returns how many rows were written.
 */
export async function syncRateLimitBuckets(
  registry: RateLimitRegistry,
  ctx: RateLimitContext,
): Promise<number> {
  checkRateLimitContext(ctx, 'syncRateLimitBuckets.ctx');
  let n = 0;
  for (const [name, primitive] of registry.rateLimits) {
    if (await publishBucket(primitive, registry.isKeyedRateLimit(name), ctx)) n++;
  }
  return n;
}
