import type { RateLimitBackend } from '../types.js';

/** What a store needs to know of a token bucket (a `TokenBucket` is one). */
export interface TokenBucketSpec {
  /** Bucket name: the Redis key suffix, the `bucket_name` column, the memory cell. */
  readonly name: string;
  /** Maximum tokens; a bucket with no state is full. */
  readonly capacity: number;
  /** Tokens added per second, continuously (0: never). */
  readonly refillPerSecond: number;
  /** How long an untouched Redis key lives, in ms. */
  readonly ttlMs: number;
  /** A keyed materialisation: its state may be reclaimed once idle (`sweepIdleKeyed`). */
  readonly keyed: boolean;
  /** The store the primitive is configured with (recorded on the Postgres row). */
  readonly backend: RateLimitBackend;
}

/** What a store needs to know of a sliding window, either style (a `SlidingWindow` is one). */
export interface SlidingWindowSpec {
  /** Window name. */
  readonly name: string;
  /** Admissions per window. */
  readonly limit: number;
  /** Window length in ms. */
  readonly windowMs: number;
  /** How long an untouched Redis key lives, in ms. */
  readonly ttlMs: number;
  /** A keyed materialisation. */
  readonly keyed: boolean;
  /** The store the primitive is configured with. */
  readonly backend: RateLimitBackend;
}

/** What a store needs to know of a concurrency reservation (a `ConcurrencyReservation` is one). */
export interface ReservationSpec {
  /** Reservation name (`bucket_name` of its slots). */
  readonly name: string;
  /** Slot count. */
  readonly slots: number;
  /** Lease of a taken slot, in ms. */
  readonly leaseMs: number;
  /** A keyed materialisation: its slots may be reclaimed once idle and all free. */
  readonly keyed: boolean;
}

/**
 * The store could not decide within its budget (a Postgres row lock held by another acquirer):
 * the caller denies, fail closed, and hints `retryAfterMs`.
 */
export interface StoreBusy {
  /** Discriminator. */
  readonly status: 'busy';
  /** The store that gave up. */
  readonly backend: RateLimitBackend;
  /** When to try again, in ms. */
  readonly retryAfterMs: number;
}

/** Outcome of {@link RateLimitStore.acquireTokens}. */
export type TokenBucketOutcome =
  | StoreBusy
  | {
      /** `'allowed'`: the tokens are spent. `'denied'`: nothing was written. */
      readonly status: 'allowed' | 'denied';
      /** The store that decided. */
      readonly backend: RateLimitBackend;
      /** Tokens left after this call (the available tokens when denied). */
      readonly tokens: number;
      /** Tokens available before this call, refill included. */
      readonly available: number;
      /** The stored token count before this call, for diagnostics (null: no state, or not reported). */
      readonly previousTokens: number | null;
    };

/** Outcome of {@link RateLimitStore.acquireGcra}. */
export type GcraOutcome =
  | StoreBusy
  | {
      /** `'allowed'`: the arrival time moved on by one emission interval. `'denied'`: nothing written. */
      readonly status: 'allowed' | 'denied';
      /** The store that decided. */
      readonly backend: RateLimitBackend;
      /**
       * The theoretical arrival time this admission reached (denied: would have reached) minus now,
       * in ms. Admitted while it is at most the window.
       */
      readonly debtMs: number;
      /** The stored arrival time before this call (epoch ms), null when there was none. */
      readonly previousTatMs: number | null;
    };

/** Outcome of {@link RateLimitStore.acquireLog}. */
export type SlidingLogOutcome =
  | StoreBusy
  | {
      /** `'allowed'`: the request is logged. `'denied'`: nothing written. */
      readonly status: 'allowed' | 'denied';
      /** The store that decided. */
      readonly backend: RateLimitBackend;
      /** Live entries in the window before this call. */
      readonly live: number;
      /** Denied: ms until the entry that must leave for one more request to fit does so. 0 when allowed. */
      readonly retryMs: number;
    };

/** A token bucket read without consuming ({@link RateLimitStore.peekTokens}). */
export interface TokenBucketReading {
  /** The store that answered. */
  readonly backend: RateLimitBackend;
  /** Tokens available now. */
  readonly available: number;
}

/** A GCRA window read without consuming ({@link RateLimitStore.peekGcra}). */
export interface GcraReading {
  /** The store that answered. */
  readonly backend: RateLimitBackend;
  /** The stored arrival time minus now, in ms; 0 when there is no debt. */
  readonly debtMs: number;
}

/** A log-style window read without consuming ({@link RateLimitStore.peekLog}). */
export interface SlidingLogReading {
  /** The store that answered. */
  readonly backend: RateLimitBackend;
  /** Live entries now. */
  readonly live: number;
  /** When the window is full: ms until one more request fits; else 0. */
  readonly retryMs: number;
}

/** The state shape of a rate limit: the Redis key kind and the `rate_limit_buckets.kind` value. */
export type BucketKind = 'token_bucket' | 'gcra' | 'sliding_log';

/** A rate limit's admin metadata (a `rate_limit_buckets` row without its state). */
export interface BucketMetadata {
  /** Name. */
  readonly name: string;
  /** State shape. */
  readonly kind: BucketKind;
  /** Token bucket capacity, or a window's limit. */
  readonly capacity: number;
  /** Token bucket refill per second (null for windows). */
  readonly refillPerSecond: number | null;
  /** Window length in ms (null for token buckets). */
  readonly windowMs: number | null;
  /** The configured store of the primitive. */
  readonly backend: 'redis' | 'postgres';
  /** A keyed materialisation (reclaimable once idle); a static publish retires the mark. */
  readonly keyed: boolean;
}

/** A published rate limit (a `rate_limit_buckets` row): its metadata and when it was last used. */
export interface PublishedBucket extends BucketMetadata {
  /** Last time a worker published or used it. */
  readonly lastUsedAt: Date;
}

/** A reservation's slots, summarised. */
export interface ReservationSummary {
  /** Reservation name. */
  readonly name: string;
  /** Slot rows. */
  readonly slots: number;
  /** Slots with a live (unexpired) holder. */
  readonly held: number;
  /** Every slot belongs to a keyed materialisation. */
  readonly keyed: boolean;
  /** Last time a slot was taken or released. */
  readonly lastUsedAt: Date;
}

/** Outcome of {@link RateLimitStore.acquireSlot}. */
export type SlotOutcome =
  | {
      /** A slot is held. */
      readonly ok: true;
      /** The store that holds it. */
      readonly backend: RateLimitBackend;
      /** Index of the held slot. */
      readonly slotIndex: number;
      /** Identity of this lease: a release carrying another fence frees nothing. */
      readonly fence: string;
    }
  | {
      /** Every slot is held. */
      readonly ok: false;
      /** Remaining lease of the earliest live holder, in ms; null when none is readable. */
      readonly retryMs: number | null;
      /** Slot rows of the reservation (fewer than its slots when some were reclaimed). */
      readonly totalRows: number;
    };

/** Slot counts of one reservation ({@link RateLimitStore.peekSlots}); all 0 when it has no slots. */
export interface SlotCounts {
  /** Slots with no holder or an expired lease. */
  readonly free: number;
  /** Slots held by a live lease. */
  readonly held: number;
  /** Slot rows. */
  readonly total: number;
}

/** What {@link RateLimitStore.syncSlots} did to one reservation, by slot index. */
export interface SlotSyncResult {
  /** Slots created. */
  readonly inserted: readonly number[];
  /** Excess free (or lease-expired) slots deleted. */
  readonly deleted: readonly number[];
  /** Excess slots kept because a live lease holds them. */
  readonly skippedHeld: readonly number[];
}

/** What one {@link RateLimitStore.sweepIdleKeyed} pass deleted. */
export interface SweepIdleKeyedResult {
  /** Keyed rate-limit states deleted (with their window log). */
  readonly rateLimitRows: number;
  /** Keyed reservations whose slots were deleted. */
  readonly reservationBuckets: number;
  /** Keyed slots deleted. */
  readonly reservationRows: number;
}

/**
 * Where rate-limit state lives: the atomic state operations the primitives are built on. Each
 * operation is atomic on the store's own clock (Redis `TIME`, Postgres `clock_timestamp()`, the
 * memory store's injected `Clock`) and reports the store that decided in `backend`. Primitives
 * (`TokenBucket`, `SlidingWindow`, `ConcurrencyReservation`) validate input, call one operation and
 * turn its outcome into a decision, a retry hint or an error; they hold no state of their own.
 *
 * Implementations: {@link MemoryRateLimitStore}, {@link PostgresRateLimitStore},
 * {@link RedisRateLimitStore}, and the composition {@link FallbackRateLimitStore}. A store that
 * cannot reach its state raises `RateLimitStoreUnavailable` (what a fallback composition reacts to);
 * impossible stored state raises `RateLimitStoreCorrupt`. A store that holds no reservation slots
 * (Redis) rejects the slot writes with `RateLimitBackendMissing` and reads them as empty.
 */
export interface RateLimitStore {
  /** Which store this is; decisions name it (`decision.backend`). */
  readonly backend: RateLimitBackend;

  /**
   * The store that answers as `backend` within this one: itself, a member of a composition, or
   * null. A refund goes to the store its decision names.
   */
  forBackend(backend: RateLimitBackend): RateLimitStore | null;

  /** Spends `count` tokens of `bucket` if that many are available (refill first). A denial writes nothing. */
  acquireTokens(bucket: TokenBucketSpec, count: number): Promise<TokenBucketOutcome>;
  /** Gives `count` tokens back, capped at capacity. No state: nothing to give back. */
  refundTokens(bucket: TokenBucketSpec, count: number): Promise<void>;
  /** Tokens available now, without consuming. */
  peekTokens(bucket: TokenBucketSpec): Promise<TokenBucketReading>;

  /** One GCRA admission: the arrival time moves on by `windowMs / limit` unless that passes the window. */
  acquireGcra(window: SlidingWindowSpec): Promise<GcraOutcome>;
  /** Moves the arrival time back by one emission interval, never below now. */
  refundGcra(window: SlidingWindowSpec): Promise<void>;
  /** The current debt, without consuming. */
  peekGcra(window: SlidingWindowSpec): Promise<GcraReading>;

  /** One log-style admission: drops entries older than the window and logs `requestId` below the limit. */
  acquireLog(window: SlidingWindowSpec, requestId: string): Promise<SlidingLogOutcome>;
  /** Removes the entry of `requestId` (a no-op when it is gone). */
  refundLog(window: SlidingWindowSpec, requestId: string): Promise<void>;
  /** Live entries and the retry hint, without consuming. */
  peekLog(window: SlidingWindowSpec): Promise<SlidingLogReading>;

  /** Clears the state of rate limit `name` of shape `kind` (full again). Idempotent. */
  resetBucket(name: string, kind: BucketKind): Promise<void>;
  /**
   * Records a rate limit's admin metadata (the list `taskq ratelimits` and the admin UI show),
   * never touching its state. Returns false when this store keeps no such list.
   */
  publishBucket(meta: BucketMetadata): Promise<boolean>;

  /** Creates the slots of `reservation` that are missing, never touching holders. */
  ensureSlots(reservation: ReservationSpec): Promise<void>;
  /** Makes the slots match `reservation.slots`: creates missing ones, deletes free excess ones. */
  syncSlots(reservation: ReservationSpec): Promise<SlotSyncResult>;
  /** Whether reservation `name` has any slot. */
  slotRowsExist(name: string): Promise<boolean>;
  /** Takes a free (or lease-expired) slot for `jobId` on `workerId` under a lease of `leaseMs`. */
  acquireSlot(reservation: ReservationSpec, jobId: string, workerId: string): Promise<SlotOutcome>;
  /**
   * Frees slot `slotIndex` of `name` if `workerId` holds it and, with a `fence`, only if it still
   * carries that lease. Returns whether a slot was freed.
   */
  releaseSlot(name: string, slotIndex: number, workerId: string, fence: string | null): Promise<boolean>;
  /**
   * Renews to now + `leaseMs` (never shortening) every slot `workerId` holds — of reservation
   * `name`, or of every reservation when null. Returns how many.
   */
  extendSlotLeases(workerId: string, leaseMs: number, name: string | null): Promise<number>;
  /** Free, held and total slots of `name` now. */
  peekSlots(name: string): Promise<SlotCounts>;

  /**
   * Deletes keyed state unused for `idleForMs`: rate limits (except a fixed quota with tokens spent,
   * whose next materialisation must resume), and the slots of keyed reservations whose every slot
   * is free or expired. Static state is never touched. Bounded per call.
   */
  sweepIdleKeyed(idleForMs: number): Promise<SweepIdleKeyedResult>;

  /**
   * Published rate limits (all, or the one named), by name: what operators list and reset. Stores
   * that keep no such list (memory: its limits live in one process) return none.
   */
  listBuckets(name?: string | null): Promise<PublishedBucket[]>;
  /** Reservations with slots (all, or the one named), by name. */
  listReservations(name?: string | null): Promise<ReservationSummary[]>;

  /** Stores with a key namespace (Redis): a view of the same store under `prefix`. */
  withKeyPrefix?(prefix: string): RateLimitStore;
  /** Prepares the store for use (an owned Redis client connects). Never throws for an outage. */
  open?(): Promise<void>;
  /** Releases what the store opened itself (an owned Redis client); never a client or driver it was given. */
  close?(): Promise<void>;
}
