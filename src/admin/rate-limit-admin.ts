import type { Redis } from 'ioredis';

import type { Driver } from '../db/driver.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { RateLimitNotFound } from '../ratelimit/errors.js';
import { SlidingWindow } from '../ratelimit/sliding-window.js';
import { rateLimitStoresFor, type RateLimitStores } from '../ratelimit/stores/rate-limit-stores.js';
import { TokenBucket } from '../ratelimit/token-bucket.js';
import type { RateLimitContext, RateLimitState } from '../ratelimit/types.js';
import { renderSql, validateSchemaName } from '../schema-name.js';
import * as SQL from './sql.generated.js';

/** A published rate limit (a `rate_limit_buckets` row). */
export interface RateLimitBucketRow {
  name: string;
  kind: 'token_bucket' | 'gcra' | 'sliding_log';
  /** Token bucket capacity, or a sliding window's limit. */
  capacity: number;
  /** Token bucket refill per second (null for windows). */
  refillPerSecond: number | null;
  /** Sliding window length in ms (null for token buckets). */
  windowMs: number | null;
  /** Configured store. */
  backend: 'redis' | 'postgres';
  /** Materialised from a keyed ref (reclaimed once idle). */
  keyed: boolean;
  lastUsedAt: Date;
}

/** A reservation's slot rows, summarised. */
export interface ReservationRow {
  name: string;
  slots: number;
  /** Slots with a live (unexpired) holder. */
  held: number;
  keyed: boolean;
  lastUsedAt: Date;
}

/** What `peek` found for one name. */
export type PeekResult =
  | { kind: 'rate_limit'; row: RateLimitBucketRow; state: RateLimitState }
  | { kind: 'reservation'; row: ReservationRow };

type Raw = Record<string, unknown>;
const toBucket = (r: Raw): RateLimitBucketRow => ({
  name: r.bucket_name as string,
  kind: r.kind as RateLimitBucketRow['kind'],
  capacity: Number(r.capacity),
  refillPerSecond: r.refill_per_second === null ? null : Number(r.refill_per_second),
  windowMs: r.window_ms === null ? null : Number(r.window_ms),
  backend: r.backend as RateLimitBucketRow['backend'],
  keyed: r.keyed as boolean,
  lastUsedAt: r.last_used_at as Date,
});
const toReservation = (r: Raw): ReservationRow => ({
  name: r.bucket_name as string,
  slots: Number(r.slots),
  held: Number(r.held),
  keyed: r.keyed as boolean,
  lastUsedAt: r.last_used_at as Date,
});

/**
 * Operator view of the fleet's rate limits, from what workers publish to Postgres: the list, the
 * current state of one (read from the store that holds it) and a reset. Works without the
 * application's code: each primitive is rebuilt from its published row. Used by `taskq ratelimits`.
 */
export class RateLimitAdmin {
  private readonly sql: Record<keyof typeof SQL, string>;
  private readonly schema: string;
  private readonly stores: RateLimitStores;

  /**
   * @param driver Postgres.
   * @param schema TaskQ schema (default `taskq`).
   * @param redis Redis client, for Redis-backed buckets (without it their state reads fall back to Postgres).
   */
  constructor(
    private readonly driver: Driver,
    schema = 'taskq',
    redis: Redis | null = null,
  ) {
    this.schema = validateSchemaName(schema);
    this.sql = Object.fromEntries(
      Object.entries(SQL).map(([k, v]) => [k, renderSql(v, this.schema)]),
    ) as Record<keyof typeof SQL, string>;
    this.stores = rateLimitStoresFor({ driver, schema: this.schema, redis, pgFallback: true });
  }

  /** Every published rate limit and every reservation with slot rows. */
  async list(): Promise<{ rateLimits: RateLimitBucketRow[]; reservations: ReservationRow[] }> {
    const [b, r] = await Promise.all([
      this.driver.query(this.sql.listRateLimitBuckets),
      this.driver.query(this.sql.listReservations, [null]),
    ]);
    return { rateLimits: b.rows.map(toBucket), reservations: r.rows.map(toReservation) };
  }

  /** The current state of a rate limit (no token used) or a reservation's holders. */
  async peek(name: string): Promise<PeekResult> {
    const found = await this.find(name);
    if (found.kind === 'reservation') return found;
    return { kind: 'rate_limit', row: found.row, state: await found.primitive.peek(this.ctx()) };
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
    name: string,
  ): Promise<
    | { kind: 'rate_limit'; row: RateLimitBucketRow; primitive: TokenBucket | SlidingWindow }
    | { kind: 'reservation'; row: ReservationRow }
  > {
    if (typeof name !== 'string' || name.trim() === '')
      throw new InvalidArgumentError('name', name, 'must be a non-empty rate-limit or reservation name');
    const { rows } = await this.driver.query(this.sql.getRateLimitBucket, [name]);
    if (rows[0]) {
      const row = toBucket(rows[0]);
      return { kind: 'rate_limit', row, primitive: primitiveOf(row) };
    }
    const res = await this.driver.query(this.sql.listReservations, [name]);
    if (res.rows[0]) return { kind: 'reservation', row: toReservation(res.rows[0]) };
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
