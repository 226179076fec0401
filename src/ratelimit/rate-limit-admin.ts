import type { Redis } from 'ioredis';

import type { Backend } from '../backend/backend.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import { RateLimitNotFound } from './errors.js';
import { SlidingWindow } from './sliding-window.js';
import type { PublishedBucket, ReservationSummary } from './stores/rate-limit-store.js';
import type { RateLimitStores } from './stores/rate-limit-stores.js';
import { TokenBucket } from './token-bucket.js';
import type { RateLimitContext, RateLimitState } from './types.js';

/** A published rate limit (a `rate_limit_buckets` row). */
export type RateLimitBucketRow = PublishedBucket;

/** A reservation's slots, summarised. */
export type ReservationRow = ReservationSummary;

/** What `peek` found for one name. */
export type PeekResult =
  | { kind: 'rate_limit'; row: RateLimitBucketRow; state: RateLimitState }
  | { kind: 'reservation'; row: ReservationRow };

/** The keys of {@link RateLimitAdmin.forBackend}'s options: any other is refused (a misspelt `redis` meant none). */
const FOR_BACKEND_OPTION_KEYS: readonly string[] = ['redis', 'logger'];

/**
 * Operator view of the fleet's rate limits, from what workers publish to the shared store: the
 * list, the current state of one (read from the store that holds it) and a reset. Works without
 * the application's code: each primitive is rebuilt from its published row. Used by
 * `taskq ratelimits`; build the stores with `backend.rateLimitStores(...)`.
 */
export class RateLimitAdmin {
  /** @param stores The shared store (and Redis, for Redis-backed limits' state). */
  constructor(private readonly stores: RateLimitStores) {}

  /**
   * The admin view of `backend`'s published limits, reading Redis-backed state through `redis`
   * (never closed here) with the Postgres fallback on, as workers read it. Without `redis`, the
   * state of a Redis-backed limit raises `RateLimitBackendMissing`; everything else still works.
   * `taskq ratelimits` and the admin UI's rate-limits page both build theirs here.
   */
  static forBackend(
    backend: Pick<Backend, 'rateLimitStores'>,
    options: { redis?: Redis | null; logger?: Logger } = {},
  ): RateLimitAdmin {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('RateLimitAdmin.forBackend.options', options, 'must be an object');
    checkKnownKeys(
      options,
      FOR_BACKEND_OPTION_KEYS,
      'RateLimitAdmin.forBackend.options',
      'an option of RateLimitAdmin.forBackend',
    );
    return new RateLimitAdmin(
      backend.rateLimitStores({
        redis: options.redis ?? null,
        pgFallback: true,
        logger: options.logger ?? silentLogger,
      }),
    );
  }

  /** Every published rate limit and every reservation with slots. */
  async list(): Promise<{ rateLimits: RateLimitBucketRow[]; reservations: ReservationRow[] }> {
    const [rateLimits, reservations] = await Promise.all([
      this.stores.shared.listBuckets(),
      this.stores.shared.listReservations(),
    ]);
    return { rateLimits, reservations };
  }

  /** The current state of a rate limit (no token used) or a reservation's holders. */
  async peek(name: string): Promise<PeekResult> {
    const found = await this.find(name);
    if (found.kind === 'reservation') return found;
    return { kind: 'rate_limit', row: found.row, state: await found.primitive.peek(this.ctx()) };
  }

  /**
   * The current state of a listed rate limit (no token used), without looking its row up again:
   * for pages that peek many rows of one {@link list}.
   */
  async state(row: RateLimitBucketRow): Promise<RateLimitState> {
    return primitiveOf(row).peek(this.ctx());
  }

  /**
   * Refills a rate limit (clears its state). Reservations are refused: their slots free themselves
   * when holders finish or their leases expire, and clearing a live holder would break the cap.
   */
  async reset(name: string): Promise<RateLimitBucketRow> {
    const found = await this.find(name);
    if (found.kind === 'reservation')
      throw new InvalidArgumentError(
        'name',
        name,
        'is a reservation: slots are freed by their holders or when their lease expires, never reset',
      );
    await found.primitive.reset(this.ctx());
    return found.row;
  }

  private ctx(): RateLimitContext {
    return { stores: this.stores };
  }

  private async find(
    name: unknown,
  ): Promise<
    | { kind: 'rate_limit'; row: RateLimitBucketRow; primitive: TokenBucket | SlidingWindow }
    | { kind: 'reservation'; row: ReservationRow }
  > {
    if (typeof name !== 'string' || name.trim() === '')
      throw new InvalidArgumentError('name', name, 'must be a non-empty rate-limit or reservation name');
    const [row] = await this.stores.shared.listBuckets(name);
    if (row) return { kind: 'rate_limit', row, primitive: primitiveOf(row) };
    const [reservation] = await this.stores.shared.listReservations(name);
    if (reservation) return { kind: 'reservation', row: reservation };
    throw new RateLimitNotFound(
      name,
      'rate_limit',
      'nothing by that name is published in rate_limit_buckets or reservation_slots ' +
        '(memory-backed limits live in one process and are never published)',
    );
  }
}

/** Rebuilds the primitive a row describes (same name, shape and store, so the same state). */
function primitiveOf(row: RateLimitBucketRow): TokenBucket | SlidingWindow {
  if (row.kind === 'token_bucket')
    return new TokenBucket(row.name, {
      capacity: row.capacity,
      refillPerSecond: row.refillPerSecond ?? 0,
      backend: row.backend,
    });
  return new SlidingWindow(row.name, {
    limit: row.capacity,
    window: row.windowMs ?? 1,
    backend: row.backend,
    style: row.kind === 'gcra' ? 'gcra' : 'log',
  });
}
