import { checkNumber } from './names.js';
import { requireDriver, schemaOf, sql, toNumber } from './pg-store.js';
import type { SlidingWindow } from './sliding-window.js';
import type { TokenBucket } from './token-bucket.js';
import type { RateLimitContext } from './types.js';

/** Rows a leader sweep deletes per statement (it loops until a statement deletes fewer). */
const SWEEP_BATCH = 500;
/** Upper bound on statements of one sweep pass, so one pass stays short. */
const SWEEP_MAX_BATCHES = 20;

/**
 * Publishes a rate limit's metadata to `{schema}.rate_limit_buckets` (the admin UI's list), without
 * touching its state. `keyed` marks a keyed materialisation (reclaimable once idle); a static
 * publish retires the mark. Memory-backed primitives are never published (their state is per
 * process).
 */
export async function publishBucket(
  primitive: TokenBucket | SlidingWindow,
  keyed: boolean,
  ctx: RateLimitContext,
): Promise<boolean> {
  if (primitive.backend === 'memory') return false;
  const driver = requireDriver(ctx, primitive.name);
  const d = primitive.describe();
  await driver.query(sql('publishBucket', schemaOf(ctx)), [
    primitive.name,
    d.kind,
    d.capacity,
    d.refillPerSecond,
    d.windowMs,
    primitive.backend,
    keyed,
  ]);
  return true;
}

/** What one {@link sweepIdleKeyedRows} pass deleted. */
export interface SweepIdleKeyedResult {
  /** Keyed `rate_limit_buckets` rows deleted (with their window log). */
  readonly rateLimitRows: number;
  /** Keyed reservations whose slot rows were deleted. */
  readonly reservationBuckets: number;
  /** Keyed `reservation_slots` rows deleted. */
  readonly reservationRows: number;
}

/**
 * Leader sweep (fleet-wide, any process may die holding keyed bookkeeping): deletes keyed rows not
 * used for `idleForMs`. Rate-limit rows keep a partly spent fixed quota (consumed-quota veto).
 * Reservation rows go only when every slot of the key is free or lease-expired. Static rows
 * (`keyed = false`) are never touched. Bounded: at most 20 statements of 500 rows per kind.
 */
export async function sweepIdleKeyedRows(
  idleForMs: number,
  ctx: RateLimitContext,
): Promise<SweepIdleKeyedResult> {
  checkNumber(idleForMs, 'idleForMs');
  const driver = requireDriver(ctx, 'sweepIdleKeyedRows');
  const schema = schemaOf(ctx);
  let rateLimitRows = 0;
  for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
    const { rows } = await driver.query(sql('sweepIdleKeyedBuckets', schema), [idleForMs, SWEEP_BATCH]);
    const n = toNumber(rows[0]?.deleted) ?? 0;
    rateLimitRows += n;
    if (n < SWEEP_BATCH) break;
  }
  let reservationBuckets = 0;
  let reservationRows = 0;
  for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
    const { rows } = await driver.query(sql('sweepIdleKeyedSlots', schema), [idleForMs, SWEEP_BATCH]);
    const buckets = toNumber(rows[0]?.buckets) ?? 0;
    reservationBuckets += buckets;
    reservationRows += toNumber(rows[0]?.rows) ?? 0;
    if (buckets < SWEEP_BATCH) break;
  }
  if (rateLimitRows + reservationRows > 0) {
    ctx.logger?.info({ rateLimitRows, reservationBuckets, reservationRows }, 'ratelimit-keyed-rows-swept');
  }
  return Object.freeze({ rateLimitRows, reservationBuckets, reservationRows });
}
