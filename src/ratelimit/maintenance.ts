import { checkNumber } from './names.js';
import type { SlidingWindow } from './sliding-window.js';
import { checkRateLimitContext, sharedStoreOf } from './stores/context-stores.js';
import type { SweepIdleKeyedResult } from './stores/rate-limit-store.js';
import type { TokenBucket } from './token-bucket.js';
import type { RateLimitContext } from './types.js';

export type { SweepIdleKeyedResult } from './stores/rate-limit-store.js';

/**
 * Publishes a rate limit's metadata to the context's shared store (`{schema}.rate_limit_buckets` in
 * Postgres: the admin UI's list), without touching its state. `keyed` marks a keyed
 * materialisation (reclaimable once idle); a static publish retires the mark. Memory-backed
 * primitives are never published (their state is per process), and a memory shared store keeps no
 * list. Returns whether a row was written.
 */
export async function publishBucket(
  primitive: TokenBucket | SlidingWindow,
  keyed: boolean,
  ctx: RateLimitContext,
): Promise<boolean> {
  checkRateLimitContext(ctx, 'publishBucket.ctx');
  if (primitive.backend === 'memory') return false;
  const d = primitive.describe();
  return sharedStoreOf(ctx, primitive.name).publishBucket({
    name: primitive.name,
    kind: d.kind,
    capacity: d.capacity,
    refillPerSecond: d.refillPerSecond,
    windowMs: d.windowMs,
    backend: primitive.backend,
    keyed,
  });
}

/**
 * Leader sweep (fleet-wide, any process may die holding keyed bookkeeping): deletes the keyed state
 * of the context's shared store not used for `idleForMs` (in Postgres, `rate_limit_buckets` rows
 * with their window log, and `reservation_slots` rows). Rate-limit rows keep a partly spent fixed
 * quota (consumed-quota veto). Reservation rows go only when every slot of the key is free or
 * lease-expired. Static rows (`keyed = false`) are never touched. Bounded: at most 20 statements
 * of 500 rows per kind.
 */
export async function sweepIdleKeyedRows(
  idleForMs: number,
  ctx: RateLimitContext,
): Promise<SweepIdleKeyedResult> {
  checkNumber(idleForMs, 'idleForMs');
  checkRateLimitContext(ctx, 'sweepIdleKeyedRows.ctx');
  const result = await sharedStoreOf(ctx, 'sweepIdleKeyedRows').sweepIdleKeyed(idleForMs);
  const { rateLimitRows, reservationBuckets, reservationRows } = result;
  if (rateLimitRows + reservationRows > 0) {
    ctx.logger?.info({ rateLimitRows, reservationBuckets, reservationRows }, 'ratelimit-keyed-rows-swept');
  }
  return Object.freeze({ rateLimitRows, reservationBuckets, reservationRows });
}
