import type { Clock } from '../core/clock.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { ReservationUnavailable } from './errors.js';
import { checkName, checkNumber, checkUuid } from './names.js';
import { checkRateLimitContext, sharedStoreOf } from './stores/context-stores.js';
import { MemoryRateLimitStore } from './stores/memory/memory-rate-limit-store.js';
import type { RateLimitStore } from './stores/rate-limit-store.js';
import {
  DEFAULT_RESERVATION_BACKOFF_MS,
  RATE_LIMIT_CONTEXT_KEYS,
  RESERVATION_RETRY_HINT_MARGIN_MS,
  type RateLimitContext,
} from './types.js';

/** Options of {@link ConcurrencyReservation}. */
export interface ConcurrencyReservationOptions {
  /** Number of concurrent holders. Integer >= 1. */
  slots: number;
  /** How long a slot is held without renewal; the worker heartbeat renews it. Must be > 0. */
  lease: Duration;
  /** The worker's job lock lease: a `lease` shorter than it logs warning `reservation-lease-shorter-than-lock-lease`. */
  lockLease?: Duration;
  /** Materialised from a keyed ref (set by the registry): its rows may be reclaimed once idle. */
  keyed?: boolean;
  /**
   * Keep the slots in a memory store of this instance's own, on this clock, instead of the
   * context's shared store (tests, single process). The context's driver and stores are then ignored.
   */
  clock?: Clock;
  /** Where the construction-time lease warning goes. */
  logger?: Logger;
}

/**
 * The keys of {@link ConcurrencyReservationOptions}: any other is refused (a misspelt `lockLease`
 * silently skipped the lease check, a misspelt `clock` put the slots in the shared store).
 */
const CONCURRENCY_RESERVATION_OPTION_KEYS: readonly string[] = [
  'slots',
  'lease',
  'lockLease',
  'keyed',
  'clock',
  'logger',
];

/**
 * A held slot. Hand it back unchanged to `release()`: the `fence` (the slot's `acquired_at`) makes
 * a release by a zombie attempt — one whose lease expired and whose slot was taken again — a
 * no-op, so a reservation never exceeds `slots` holders.
 */
export interface SlotLease {
  /** The reservation. */
  readonly bucketName: string;
  /** Index of the held slot row (0 … slots − 1). */
  readonly slotIndex: number;
  /** Identity of this lease: `acquired_at` as UTC text with microseconds (memory: time and sequence). */
  readonly fence: string;
  /** The job holding the slot. */
  readonly jobId: string;
  /** The worker holding the slot. */
  readonly workerId: string;
  /** The store that holds the slot (`'memory'` for an own table, or a memory shared store). */
  readonly backend: 'postgres' | 'memory';
}

/** Counts of a reservation's slots (`peek()`). */
export interface ReservationState {
  /** Slots free now (no holder, or lease expired). */
  readonly freeCount: number;
  /** Slot rows (the configured `slots` when no row exists yet). */
  readonly totalSlots: number;
  /** Slots held by a live lease. */
  readonly heldCount: number;
}

/** Result of {@link syncSlots}. */
export interface SyncResult {
  /** Slot rows created. */
  readonly inserted: readonly { bucketName: string; slotIndex: number }[];
  /** Excess free (or lease-expired) rows deleted. */
  readonly deleted: readonly { bucketName: string; slotIndex: number }[];
  /** Excess rows kept because a live lease holds them (deleted by a later sync once free). */
  readonly skippedHeld: readonly { bucketName: string; slotIndex: number }[];
}

/** @internal Outcome of one acquisition attempt. */
export type TryAcquireResult =
  | { readonly ok: true; readonly lease: SlotLease }
  | { readonly ok: false; readonly retryAfterMs: number; readonly totalRows: number };

/**
 * A hard concurrency cap: at most `slots` holders at once, fleet-wide. The slots live in the
 * context's shared store — pre-allocated rows of `{schema}.reservation_slots` in Postgres (create
 * them with `ensureSlots` / `syncSlots`), taken with `FOR UPDATE SKIP LOCKED` in one statement and
 * held under a lease on the database clock — or in a memory store of its own with `clock`. An
 * expired lease is free. Names are free text (`:` allowed).
 */
export class ConcurrencyReservation {
  /** Discriminator. */
  readonly kind = 'reservation' as const;
  /** Unique reservation name (the `bucket_name` of its rows). */
  readonly name: string;
  /** Slot count. */
  readonly slots: number;
  /** Lease in ms. */
  readonly leaseMs: number;
  /** The worker lock lease it was checked against, in ms. */
  readonly lockLeaseMs: number | null;
  /** Materialised from a keyed ref. */
  readonly keyed: boolean;
  /** Clock of the own memory store (null: the slots live in the context's shared store). */
  readonly clock: Clock | null;

  private readonly own: MemoryRateLimitStore | null;

  constructor(name: string, options: ConcurrencyReservationOptions) {
    this.name = checkName(name, 'ConcurrencyReservation.name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('ConcurrencyReservation.options', options, 'must be an object');
    checkKnownKeys(
      options,
      CONCURRENCY_RESERVATION_OPTION_KEYS,
      'ConcurrencyReservation',
      'an option of ConcurrencyReservation',
    );
    this.slots = checkNumber(options.slots, 'ConcurrencyReservation.slots', { min: 1, integer: true });
    this.leaseMs = toMs(options.lease, 'ConcurrencyReservation.lease');
    this.lockLeaseMs =
      options.lockLease === undefined ? null : toMs(options.lockLease, 'ConcurrencyReservation.lockLease');
    this.keyed = options.keyed ?? false;
    this.clock = options.clock ?? null;
    this.own = this.clock ? new MemoryRateLimitStore({ clock: this.clock }) : null;
    if (this.leaseShorterThanLockLease()) {
      options.logger?.warn(
        { bucketName: this.name, leaseMs: this.leaseMs, lockLeaseMs: this.lockLeaseMs },
        'reservation-lease-shorter-than-lock-lease',
      );
    }
  }

  /** Where the slots live: `'memory'` with an own store (`clock`), else `'postgres'` (the shared store). */
  get backend(): 'postgres' | 'memory' {
    return this.own ? 'memory' : 'postgres';
  }

  /** True when `lease` is shorter than `lockLease` (slots could expire under a running job). */
  leaseShorterThanLockLease(): boolean {
    return this.lockLeaseMs !== null && this.leaseMs < this.lockLeaseMs;
  }

  /**
   * Takes a slot for `jobId` on `workerId`.
   * @throws ReservationUnavailable (source `'reservation'`) when every slot is held; `retryAfterMs`
   *   is the earliest live lease's remaining time plus a small margin, or 5 s without a hint
   */
  async acquire(jobId: string, workerId: string, ctx: RateLimitContext = {}): Promise<SlotLease> {
    checkRateLimitContext(ctx, 'ConcurrencyReservation.acquire.ctx');
    const result = await this.tryAcquire(jobId, workerId, ctx);
    if (result.ok) return result.lease;
    ctx.logger?.info({ bucketName: this.name, retryAfterMs: result.retryAfterMs }, 'reservation-unavailable');
    throw new ReservationUnavailable(this.name, result.retryAfterMs, { source: 'reservation' });
  }

  /** @internal One acquisition attempt; the denial carries the retry hint and the slot row count. */
  async tryAcquire(jobId: string, workerId: string, ctx: RateLimitContext): Promise<TryAcquireResult> {
    const job = checkUuid(jobId, 'jobId');
    const worker = checkUuid(workerId, 'workerId');
    const outcome = await this.store(ctx).acquireSlot(this, job, worker);
    if (outcome.ok) {
      return {
        ok: true,
        lease: Object.freeze({
          bucketName: this.name,
          slotIndex: outcome.slotIndex,
          fence: outcome.fence,
          jobId: job,
          workerId: worker,
          backend: outcome.backend === 'memory' ? ('memory' as const) : ('postgres' as const),
        }),
      };
    }
    return {
      ok: false,
      retryAfterMs:
        outcome.retryMs !== null
          ? Math.ceil(Math.max(0, outcome.retryMs) + RESERVATION_RETRY_HINT_MARGIN_MS)
          : DEFAULT_RESERVATION_BACKOFF_MS,
      totalRows: outcome.totalRows,
    };
  }

  /**
   * Frees a slot. Pass the `SlotLease` from `acquire()`: the release is then fenced (a no-op when
   * that lease expired and the slot was taken again). A bare slot index releases unfenced. Always a
   * no-op when `workerId` does not hold the slot. Returns whether a slot was freed.
   */
  async release(lease: SlotLease | number, workerId: string, ctx: RateLimitContext = {}): Promise<boolean> {
    checkRateLimitContext(ctx, 'ConcurrencyReservation.release.ctx');
    const worker = checkUuid(workerId, 'workerId');
    const slotIndex = typeof lease === 'number' ? lease : lease.slotIndex;
    const fence = typeof lease === 'number' ? null : lease.fence;
    if (typeof lease !== 'number' && lease.bucketName !== this.name) {
      throw new InvalidArgumentError(
        'lease.bucketName',
        lease.bucketName,
        `must be ${JSON.stringify(this.name)}`,
      );
    }
    return this.store(ctx).releaseSlot(this.name, slotIndex, worker, fence);
  }

  /** Renews (to now + `leaseMs`, default this reservation's lease) every slot of this reservation `workerId` holds. Returns how many. */
  async extendLeases(workerId: string, ctx: RateLimitContext = {}, leaseMs = this.leaseMs): Promise<number> {
    checkRateLimitContext(ctx, 'ConcurrencyReservation.extendLeases.ctx');
    const worker = checkUuid(workerId, 'workerId');
    const ms = checkNumber(leaseMs, 'leaseMs');
    return this.store(ctx).extendSlotLeases(worker, ms, this.name);
  }

  /** Free / held / total slots now (the configured `slots`, all free, when none exists yet). */
  async peek(ctx: RateLimitContext = {}): Promise<ReservationState> {
    checkRateLimitContext(ctx, 'ConcurrencyReservation.peek.ctx');
    const counts = await this.store(ctx).peekSlots(this.name);
    if (counts.total === 0)
      return Object.freeze({ freeCount: this.slots, totalSlots: this.slots, heldCount: 0 });
    return Object.freeze({ freeCount: counts.free, totalSlots: counts.total, heldCount: counts.held });
  }

  /**
   * Creates the slots idempotently (refreshing `last_used_at`, never touching holders). The
   * worker calls it at startup for every registered reservation; the registry on the first use of
   * a keyed key.
   */
  async ensureSlots(ctx: RateLimitContext = {}): Promise<void> {
    checkRateLimitContext(ctx, 'ConcurrencyReservation.ensureSlots.ctx');
    await this.store(ctx).ensureSlots(this);
  }

  /** Whether any slot of this reservation exists (read-only probe). */
  async slotRowsExist(ctx: RateLimitContext = {}): Promise<boolean> {
    checkRateLimitContext(ctx, 'ConcurrencyReservation.slotRowsExist.ctx');
    return this.store(ctx).slotRowsExist(this.name);
  }

  /** With an own memory store: some slot is held by a live lease (eviction would drop it). Else false. */
  hasLiveHolders(): boolean {
    return this.own?.hasLiveSlotHolders(this.name) ?? false;
  }

  /** Same configuration (name, slots, lease, store) as `other`. */
  sameConfig(other: unknown): boolean {
    return (
      other instanceof ConcurrencyReservation &&
      other.name === this.name &&
      other.slots === this.slots &&
      other.leaseMs === this.leaseMs &&
      other.backend === this.backend
    );
  }

  private store(ctx: RateLimitContext): RateLimitStore {
    return this.own ?? sharedStoreOf(ctx, this.name);
  }
}

/**
 * Makes the slots of shared-store reservations match their `slots`: creates missing ones (filling
 * gaps), deletes excess slots that are free or lease-expired, and reports excess slots a live lease
 * still holds (a later sync deletes them). Each reservation in its own transaction; safe to re-run.
 * Call it after changing slot counts. Reservations with an own memory store (`clock`) are skipped.
 * Give the Postgres `driver` (and `schema`) — any {@link RateLimitContext}, whose shared store is
 * used — or the shared `store`.
 */
export async function syncSlots(
  reservations: readonly ConcurrencyReservation[],
  options: RateLimitContext | { store: RateLimitStore },
): Promise<SyncResult> {
  const store = syncSlotsStore(options);
  const inserted: { bucketName: string; slotIndex: number }[] = [];
  const deleted: { bucketName: string; slotIndex: number }[] = [];
  const skippedHeld: { bucketName: string; slotIndex: number }[] = [];
  for (const res of reservations) {
    if (res.backend === 'memory') continue;
    const r = await store.syncSlots(res);
    const named = (slotIndex: number) => ({ bucketName: res.name, slotIndex });
    inserted.push(...r.inserted.map(named));
    deleted.push(...r.deleted.map(named));
    skippedHeld.push(...r.skippedHeld.map(named));
  }
  return Object.freeze({ inserted, deleted, skippedHeld });
}

/** The keys of {@link syncSlots}' options: those of a {@link RateLimitContext}, or `store`. */
const SYNC_SLOTS_OPTION_KEYS: readonly string[] = [...RATE_LIMIT_CONTEXT_KEYS, 'store'];

/**
 * The store `syncSlots` writes to, after refusing an unknown key (a misspelt `schema` would sync
 * the slots of the default schema) and any setting next to `store` (the store was built with its
 * own connection and schema, so it would be ignored).
 */
function syncSlotsStore(options: RateLimitContext | { store: RateLimitStore }): RateLimitStore {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(
      'syncSlots.options',
      options,
      'must be an object: a RateLimitContext ({ driver, schema }) or { store }',
    );
  checkKnownKeys(options, SYNC_SLOTS_OPTION_KEYS, 'syncSlots.options', 'an option of syncSlots');
  if (!('store' in options)) return sharedStoreOf(options, 'syncSlots');
  for (const [key, value] of Object.entries(options)) {
    if (key !== 'store' && value !== undefined)
      throw new InvalidArgumentError(
        `syncSlots.options.${key}`,
        value,
        'cannot be combined with store (the store carries its own connection and schema): give a RateLimitContext ({ driver, schema }) or { store }',
      );
  }
  if (typeof (options.store as Partial<RateLimitStore> | null)?.syncSlots !== 'function')
    throw new InvalidArgumentError('syncSlots.options.store', options.store, 'must be a RateLimitStore');
  return options.store;
}
