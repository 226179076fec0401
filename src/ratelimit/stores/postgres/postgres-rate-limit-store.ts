import type { Driver } from '../../../db/driver.js';
import type { Logger } from '../../../obs/logger.js';
import { DEFAULT_SCHEMA, renderSql, validateSchemaName } from '../../../core/schema-name.js';
import { InvalidArgumentError } from '../../../errors/invalid-argument-error.js';
import { RateLimitStoreCorrupt, RateLimitStoreUnavailable } from '../../errors.js';
import { checkKnownKeys } from '../../../core/closest-name.js';
import { DEFAULT_PG_LOCK_TIMEOUT_MS, type RateLimitBackend } from '../../types.js';
import type {
  BucketKind,
  BucketMetadata,
  GcraOutcome,
  GcraReading,
  RateLimitStore,
  ReservationSpec,
  SlidingLogOutcome,
  SlidingLogReading,
  SlidingWindowSpec,
  SlotCounts,
  SlotOutcome,
  SlotSyncResult,
  StoreBusy,
  SweepIdleKeyedResult,
  TokenBucketOutcome,
  TokenBucketReading,
  TokenBucketSpec,
  PublishedBucket,
  ReservationSummary,
} from '../rate-limit-store.js';
import * as SQL from './sql.generated.js';

/** Options of {@link PostgresRateLimitStore}. */
export interface PostgresRateLimitStoreOptions {
  /** The driver the statements run on (not closed by the store). */
  driver: Driver;
  /** Schema holding `rate_limit_buckets`, `rate_limit_window_entries`, `reservation_slots`. Default `'taskq'`. */
  schema?: string;
  /**
   * How long an acquire waits for a contended bucket row lock before it gives up and denies (fail
   * closed), in ms. Default 200.
   */
  lockTimeoutMs?: number;
  /** Where `ratelimit-lock-timeout` (debug) goes. Default: silent. */
  logger?: Logger | null;
}

/**
 * The keys of {@link PostgresRateLimitStoreOptions}: any other is refused (a misspelt `schema` put
 * the state in the default schema's tables).
 */
const POSTGRES_STORE_OPTION_KEYS: readonly string[] = ['driver', 'schema', 'lockTimeoutMs', 'logger'];

/** Names of the embedded rate-limit statements. */
type StatementName = keyof typeof SQL;

/** Rows a sweep deletes per statement (it loops until a statement deletes fewer). */
const SWEEP_BATCH = 500;
/** Upper bound on statements of one sweep pass, so one pass stays short. */
const SWEEP_MAX_BATCHES = 20;
/** How many times a statement that found its row created concurrently is re-run. */
const CREATE_RACE_ATTEMPTS = 3;

const rendered = new Map<string, string>();

/** The statement with `{schema}` rendered (validated and quoted), cached per schema. */
function sql(name: StatementName, schema: string): string {
  const key = `${schema}\u0000${name}`;
  let text = rendered.get(key);
  if (text === undefined) {
    text = renderSql(SQL[name], schema);
    rendered.set(key, text);
  }
  return text;
}

/** SQLSTATE 55P03 (lock_not_available): the lock budget ran out. */
function isLockTimeout(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '55P03';
}

/** Postgres float8 columns arrive as numbers; numeric / bigint ones as strings. */
function toNumber(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}

/** The `rate_limit_buckets.backend` value of a primitive (only Redis and Postgres ones are stored). */
const configured = (backend: RateLimitBackend): 'redis' | 'postgres' =>
  backend === 'redis' ? 'redis' : 'postgres';

/**
 * Rate-limit state in Postgres (`rate_limit_buckets`, `rate_limit_window_entries`,
 * `reservation_slots`), shared by every process on the schema. Every time predicate uses
 * `clock_timestamp()`, read after the row lock is won.
 *
 * A token-bucket or GCRA acquire is one statement that sets its own `lock_timeout`; a log-style
 * acquire a two-statement transaction serialised on the bucket row. A row lock not won within
 * `lockTimeoutMs` is a denial ({@link StoreBusy}, logged at debug as `ratelimit-lock-timeout`) —
 * never an admission — while a refund that cannot lock raises `RateLimitStoreUnavailable`. A slot is
 * taken with `FOR UPDATE SKIP LOCKED`, so acquirers of one reservation never wait on each other.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  /** Always `'postgres'`. */
  readonly backend = 'postgres' as const;
  /** The driver. */
  readonly driver: Driver;
  /** The schema. */
  readonly schema: string;
  /** The row-lock budget of an acquire, in ms. */
  readonly lockTimeoutMs: number;
  private readonly lockSetting: string;
  private readonly logger: Logger | null;

  constructor(options: PostgresRateLimitStoreOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('PostgresRateLimitStore.options', options, 'must be an object');
    // Allocation-free: a context that gives `driver` instead of `stores` builds one per call.
    checkKnownKeys(
      options,
      POSTGRES_STORE_OPTION_KEYS,
      'PostgresRateLimitStore',
      'an option of PostgresRateLimitStore',
    );
    this.driver = options.driver;
    this.schema = validateSchemaName(options.schema ?? DEFAULT_SCHEMA);
    const ms = options.lockTimeoutMs ?? DEFAULT_PG_LOCK_TIMEOUT_MS;
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0)
      throw new InvalidArgumentError(
        'PostgresRateLimitStore.lockTimeoutMs',
        ms,
        'must be a positive number of milliseconds',
      );
    this.lockTimeoutMs = ms;
    this.lockSetting = `${Math.max(1, Math.round(this.lockTimeoutMs))}ms`;
    this.logger = options.logger ?? null;
  }

  /** Itself for `'postgres'`, else null. */
  forBackend(backend: RateLimitBackend): RateLimitStore | null {
    return backend === 'postgres' ? this : null;
  }

  private sql(name: StatementName): string {
    return sql(name, this.schema);
  }

  /** A lock not won in time: deny (fail closed) and say when to try again. */
  private busy(bucketName: string): StoreBusy {
    this.logger?.debug({ bucketName, lockTimeoutMs: this.lockTimeoutMs }, 'ratelimit-lock-timeout');
    return { status: 'busy', backend: 'postgres', retryAfterMs: Math.ceil(this.lockTimeoutMs) };
  }

  private refundLockFailed(bucketName: string, row: string, err: unknown): RateLimitStoreUnavailable {
    return new RateLimitStoreUnavailable(
      bucketName,
      'postgres',
      `refund could not lock the ${row} row within ${this.lockTimeoutMs} ms`,
      { cause: err },
    );
  }

  // ---------------------------------------------------------------- token bucket

  async acquireTokens(bucket: TokenBucketSpec, count: number): Promise<TokenBucketOutcome> {
    const text = this.sql('tokenBucketAcquire');
    const params = [
      bucket.name,
      bucket.capacity,
      bucket.refillPerSecond,
      count,
      this.lockSetting,
      bucket.keyed,
      configured(bucket.backend),
    ];
    for (let attempt = 1; ; attempt++) {
      let rows: Record<string, unknown>[];
      try {
        ({ rows } = await this.driver.query(text, params));
      } catch (err) {
        if (isLockTimeout(err)) return this.busy(bucket.name);
        throw err;
      }
      const row = rows[0];
      if (row === undefined) {
        if (attempt < CREATE_RACE_ATTEMPTS) continue;
        throw new Error(`token bucket ${bucket.name}: its row kept appearing concurrently; try again`);
      }
      const tokens = toNumber(row.tokens);
      const available = toNumber(row.avail);
      if (tokens === null || available === null || tokens < 0)
        throw new RateLimitStoreCorrupt(bucket.name, 'postgres', `tokens is ${String(row.tokens)}`);
      return {
        status: row.allowed === true ? 'allowed' : 'denied',
        backend: 'postgres',
        tokens,
        available,
        previousTokens: toNumber(row.prev_tokens),
      };
    }
  }

  async refundTokens(bucket: TokenBucketSpec, count: number): Promise<void> {
    try {
      await this.driver.query(this.sql('tokenBucketRefund'), [
        bucket.name,
        bucket.capacity,
        bucket.refillPerSecond,
        count,
        this.lockSetting,
      ]);
    } catch (err) {
      if (isLockTimeout(err)) throw this.refundLockFailed(bucket.name, 'bucket', err);
      throw err;
    }
  }

  async peekTokens(bucket: TokenBucketSpec): Promise<TokenBucketReading> {
    const { rows } = await this.driver.query(this.sql('tokenBucketPeek'), [
      bucket.name,
      bucket.capacity,
      bucket.refillPerSecond,
    ]);
    const row = rows[0];
    if (row === undefined) return { backend: 'postgres', available: bucket.capacity };
    const available = toNumber(row.avail);
    if (available === null || available < 0)
      throw new RateLimitStoreCorrupt(bucket.name, 'postgres', `tokens is ${String(row.avail)}`);
    return { backend: 'postgres', available };
  }

  // ---------------------------------------------------------------- GCRA

  async acquireGcra(window: SlidingWindowSpec): Promise<GcraOutcome> {
    const text = this.sql('gcraAcquire');
    const params = [
      window.name,
      window.limit,
      window.windowMs,
      this.lockSetting,
      window.keyed,
      configured(window.backend),
    ];
    for (let attempt = 1; ; attempt++) {
      let rows: Record<string, unknown>[];
      try {
        ({ rows } = await this.driver.query(text, params));
      } catch (err) {
        if (isLockTimeout(err)) return this.busy(window.name);
        throw err;
      }
      const row = rows[0];
      if (row === undefined) {
        if (attempt < CREATE_RACE_ATTEMPTS) continue;
        throw new Error(`sliding window ${window.name}: its row kept appearing concurrently; try again`);
      }
      const debtMs = toNumber(row.debt_ms);
      if (debtMs === null)
        throw new RateLimitStoreCorrupt(window.name, 'postgres', `tat gives debt ${String(row.debt_ms)}`);
      return {
        status: row.allowed === true ? 'allowed' : 'denied',
        backend: 'postgres',
        debtMs,
        previousTatMs: toNumber(row.prev_tat_ms),
      };
    }
  }

  async refundGcra(window: SlidingWindowSpec): Promise<void> {
    try {
      await this.driver.query(this.sql('gcraRefund'), [
        window.name,
        window.limit,
        window.windowMs,
        this.lockSetting,
      ]);
    } catch (err) {
      if (isLockTimeout(err)) throw this.refundLockFailed(window.name, 'window', err);
      throw err;
    }
  }

  async peekGcra(window: SlidingWindowSpec): Promise<GcraReading> {
    const { rows } = await this.driver.query(this.sql('gcraPeek'), [window.name]);
    return { backend: 'postgres', debtMs: toNumber(rows[0]?.debt_ms) ?? 0 };
  }

  // ---------------------------------------------------------------- sliding log

  async acquireLog(window: SlidingWindowSpec, requestId: string): Promise<SlidingLogOutcome> {
    let row: Record<string, unknown> | undefined;
    try {
      row = await this.driver.transaction(async (tx) => {
        await tx.query(this.sql('slidingLogLock'), [
          window.name,
          window.limit,
          window.windowMs,
          window.keyed,
          configured(window.backend),
          this.lockSetting,
        ]);
        const { rows } = await tx.query(this.sql('slidingLogAdmit'), [
          window.name,
          window.limit,
          window.windowMs,
          requestId,
        ]);
        return rows[0];
      });
    } catch (err) {
      if (isLockTimeout(err)) return this.busy(window.name);
      throw err;
    }
    const live = toNumber(row?.live);
    if (row === undefined || live === null) throw new Error('sliding window admission returned no row');
    const allowed = row.admitted === 1;
    return {
      status: allowed ? 'allowed' : 'denied',
      backend: 'postgres',
      live,
      retryMs: allowed ? 0 : (toNumber(row.retry_ms) ?? window.windowMs),
    };
  }

  async refundLog(window: SlidingWindowSpec, requestId: string): Promise<void> {
    await this.driver.query(this.sql('slidingLogRefund'), [window.name, requestId]);
  }

  async peekLog(window: SlidingWindowSpec): Promise<SlidingLogReading> {
    const { rows } = await this.driver.query(this.sql('slidingLogPeek'), [
      window.name,
      window.limit,
      window.windowMs,
    ]);
    const row = rows[0];
    return { backend: 'postgres', live: toNumber(row?.live) ?? 0, retryMs: toNumber(row?.retry_ms) ?? 0 };
  }

  // ---------------------------------------------------------------- shared

  /** Clears the row's state and window log, keeping the row with its admin metadata and keyed mark. */
  async resetBucket(name: string, _kind: BucketKind): Promise<void> {
    await this.driver.query(this.sql('bucketReset'), [name]);
  }

  async publishBucket(meta: BucketMetadata): Promise<boolean> {
    await this.driver.query(this.sql('publishBucket'), [
      meta.name,
      meta.kind,
      meta.capacity,
      meta.refillPerSecond,
      meta.windowMs,
      meta.backend,
      meta.keyed,
    ]);
    return true;
  }

  async listBuckets(name?: string | null): Promise<PublishedBucket[]> {
    const { rows } = await this.driver.query<Record<string, unknown>>(this.sql('listRateLimitBuckets'), [
      name ?? null,
    ]);
    return rows.map((r) => ({
      name: r.bucket_name as string,
      kind: r.kind as BucketKind,
      capacity: Number(r.capacity),
      refillPerSecond: r.refill_per_second === null ? null : Number(r.refill_per_second),
      windowMs: r.window_ms === null ? null : Number(r.window_ms),
      backend: r.backend as 'redis' | 'postgres',
      keyed: r.keyed === true,
      lastUsedAt: r.last_used_at as Date,
    }));
  }

  async listReservations(name?: string | null): Promise<ReservationSummary[]> {
    const { rows } = await this.driver.query<Record<string, unknown>>(this.sql('listReservations'), [
      name ?? null,
    ]);
    return rows.map((r) => ({
      name: r.bucket_name as string,
      slots: Number(r.slots),
      held: Number(r.held),
      keyed: r.keyed === true,
      lastUsedAt: r.last_used_at as Date,
    }));
  }

  /** At most 20 statements of 500 rows per kind: one pass stays short; the next continues. */
  async sweepIdleKeyed(idleForMs: number): Promise<SweepIdleKeyedResult> {
    let rateLimitRows = 0;
    for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
      const { rows } = await this.driver.query(this.sql('sweepIdleKeyedBuckets'), [idleForMs, SWEEP_BATCH]);
      const n = toNumber(rows[0]?.deleted) ?? 0;
      rateLimitRows += n;
      if (n < SWEEP_BATCH) break;
    }
    let reservationBuckets = 0;
    let reservationRows = 0;
    for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
      const { rows } = await this.driver.query(this.sql('sweepIdleKeyedSlots'), [idleForMs, SWEEP_BATCH]);
      const buckets = toNumber(rows[0]?.buckets) ?? 0;
      reservationBuckets += buckets;
      reservationRows += toNumber(rows[0]?.rows) ?? 0;
      if (buckets < SWEEP_BATCH) break;
    }
    return { rateLimitRows, reservationBuckets, reservationRows };
  }

  // ---------------------------------------------------------------- reservation slots

  async ensureSlots(reservation: ReservationSpec): Promise<void> {
    await this.driver.query(this.sql('reservationEnsureSlots'), [
      reservation.name,
      reservation.slots,
      reservation.keyed,
    ]);
  }

  /** One transaction per reservation; safe to re-run. */
  async syncSlots(reservation: ReservationSpec): Promise<SlotSyncResult> {
    return this.driver.transaction(async (tx) => {
      const ensured = await tx.query(this.sql('reservationEnsureSlots'), [
        reservation.name,
        reservation.slots,
        reservation.keyed,
      ]);
      const held = await tx.query(this.sql('reservationSyncHeldExcess'), [
        reservation.name,
        reservation.slots,
      ]);
      const gone = await tx.query(this.sql('reservationSyncDeleteExcess'), [
        reservation.name,
        reservation.slots,
      ]);
      return {
        inserted: ensured.rows.filter((r) => r.inserted === true).map((r) => Number(r.slot_index)),
        deleted: gone.rows.map((r) => Number(r.slot_index)),
        skippedHeld: held.rows.map((r) => Number(r.slot_index)),
      };
    });
  }

  async slotRowsExist(name: string): Promise<boolean> {
    const { rows } = await this.driver.query(this.sql('reservationSlotRowsExist'), [name]);
    return rows[0]?.present === true;
  }

  async acquireSlot(reservation: ReservationSpec, jobId: string, workerId: string): Promise<SlotOutcome> {
    const { rows } = await this.driver.query(this.sql('reservationAcquire'), [
      reservation.name,
      jobId,
      workerId,
      reservation.leaseMs,
    ]);
    const row = rows[0];
    const slotIndex = toNumber(row?.slot_index);
    if (row && slotIndex !== null && typeof row.fence === 'string')
      return { ok: true, backend: 'postgres', slotIndex, fence: row.fence };
    return { ok: false, retryMs: toNumber(row?.retry_ms), totalRows: toNumber(row?.total_rows) ?? 0 };
  }

  async releaseSlot(
    name: string,
    slotIndex: number,
    workerId: string,
    fence: string | null,
  ): Promise<boolean> {
    const { rows } = await this.driver.query(this.sql('reservationRelease'), [
      name,
      slotIndex,
      workerId,
      fence,
    ]);
    return rows.length > 0;
  }

  async extendSlotLeases(workerId: string, leaseMs: number, name: string | null): Promise<number> {
    const { rows } = await this.driver.query(this.sql('reservationExtendLeases'), [workerId, leaseMs, name]);
    return rows.length;
  }

  async peekSlots(name: string): Promise<SlotCounts> {
    const { rows } = await this.driver.query(this.sql('reservationPeek'), [name]);
    return {
      free: toNumber(rows[0]?.free_count) ?? 0,
      held: toNumber(rows[0]?.held_count) ?? 0,
      total: toNumber(rows[0]?.total_slots) ?? 0,
    };
  }
}
