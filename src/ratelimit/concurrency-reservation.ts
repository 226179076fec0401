import type { Clock } from '../clock.js';
import type { Driver } from '../db/driver.js';
import { toMs, type Duration } from '../duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { DEFAULT_SCHEMA } from '../schema-name.js';
import { ReservationUnavailable } from './errors.js';
import { checkName, checkNumber, checkUuid } from './names.js';
import { requireDriver, schemaOf, sql, toNumber } from './pg-store.js';
import {
  DEFAULT_RESERVATION_BACKOFF_MS,
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
   * Use a per-process in-memory slot table on this clock instead of Postgres (tests, single
   * process). The context's driver is then ignored.
   */
  clock?: Clock;
  /** Where the construction-time lease warning goes. */
  logger?: Logger;
}

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
  /** Store of the slot table. */
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

interface MemorySlot {
  jobId: string | null;
  workerId: string | null;
  fence: string | null;
  leaseExpiresAt: number | null;
}

/**
 * A hard concurrency cap: at most `slots` holders at once, fleet-wide. Slots are pre-allocated rows
 * of `{schema}.reservation_slots` (create them with `ensureSlots` / `syncSlots`), taken with
 * `FOR UPDATE SKIP LOCKED` in one statement and held under a lease on the database clock; an
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
  /** In-memory mode clock (null: Postgres). */
  readonly clock: Clock | null;

  private readonly table: MemorySlot[] | null;
  private fenceSeq = 0;

  constructor(name: string, options: ConcurrencyReservationOptions) {
    this.name = checkName(name, 'ConcurrencyReservation.name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('ConcurrencyReservation.options', options, 'must be an object');
    this.slots = checkNumber(options.slots, 'ConcurrencyReservation.slots', { min: 1, integer: true });
    this.leaseMs = toMs(options.lease, 'ConcurrencyReservation.lease');
    this.lockLeaseMs =
      options.lockLease === undefined ? null : toMs(options.lockLease, 'ConcurrencyReservation.lockLease');
    this.keyed = options.keyed ?? false;
    this.clock = options.clock ?? null;
    this.table = this.clock ? [] : null;
    if (this.leaseShorterThanLockLease()) {
      options.logger?.warn(
        { bucketName: this.name, leaseMs: this.leaseMs, lockLeaseMs: this.lockLeaseMs },
        'reservation-lease-shorter-than-lock-lease',
      );
    }
  }

  /** Store of the slot table. */
  get backend(): 'postgres' | 'memory' {
    return this.table ? 'memory' : 'postgres';
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
    const result = await this.tryAcquire(jobId, workerId, ctx);
    if (result.ok) return result.lease;
    ctx.logger?.info({ bucketName: this.name, retryAfterMs: result.retryAfterMs }, 'reservation-unavailable');
    throw new ReservationUnavailable(this.name, result.retryAfterMs, { source: 'reservation' });
  }

  /** @internal One acquisition attempt; the denial carries the retry hint and the slot row count. */
  async tryAcquire(jobId: string, workerId: string, ctx: RateLimitContext): Promise<TryAcquireResult> {
    const job = checkUuid(jobId, 'jobId');
    const worker = checkUuid(workerId, 'workerId');
    if (this.table && this.clock) return this.tryAcquireMemory(this.table, this.clock, job, worker);
    const driver = requireDriver(ctx, this.name);
    const { rows } = await driver.query(sql('reservationAcquire', schemaOf(ctx)), [
      this.name,
      job,
      worker,
      this.leaseMs,
    ]);
    const row = rows[0];
    const slotIndex = toNumber(row?.slot_index);
    if (row && slotIndex !== null && typeof row.fence === 'string') {
      return {
        ok: true,
        lease: Object.freeze({
          bucketName: this.name,
          slotIndex,
          fence: row.fence,
          jobId: job,
          workerId: worker,
          backend: 'postgres' as const,
        }),
      };
    }
    const hint = toNumber(row?.retry_ms);
    return {
      ok: false,
      retryAfterMs:
        hint !== null
          ? Math.ceil(Math.max(0, hint) + RESERVATION_RETRY_HINT_MARGIN_MS)
          : DEFAULT_RESERVATION_BACKOFF_MS,
      totalRows: toNumber(row?.total_rows) ?? 0,
    };
  }

  /**
   * Frees a slot. Pass the `SlotLease` from `acquire()`: the release is then fenced (a no-op when
   * that lease expired and the slot was taken again). A bare slot index releases unfenced. Always a
   * no-op when `workerId` does not hold the slot. Returns whether a slot was freed.
   */
  async release(lease: SlotLease | number, workerId: string, ctx: RateLimitContext = {}): Promise<boolean> {
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
    if (this.table) {
      const slot = this.table[slotIndex];
      if (!slot || slot.jobId === null || slot.workerId !== worker) return false;
      if (fence !== null && slot.fence !== fence) return false;
      slot.jobId = null;
      slot.workerId = null;
      slot.fence = null;
      slot.leaseExpiresAt = null;
      return true;
    }
    const driver = requireDriver(ctx, this.name);
    const { rows } = await driver.query(sql('reservationRelease', schemaOf(ctx)), [
      this.name,
      slotIndex,
      worker,
      fence,
    ]);
    return rows.length > 0;
  }

  /** Renews (to now + `leaseMs`, default this reservation's lease) every slot of this reservation `workerId` holds. Returns how many. */
  async extendLeases(workerId: string, ctx: RateLimitContext = {}, leaseMs = this.leaseMs): Promise<number> {
    const worker = checkUuid(workerId, 'workerId');
    const ms = checkNumber(leaseMs, 'leaseMs');
    if (this.table && this.clock) {
      const now = this.clock.now().getTime();
      let n = 0;
      for (const slot of this.table) {
        if (slot.jobId !== null && slot.workerId === worker) {
          slot.leaseExpiresAt = Math.max(slot.leaseExpiresAt ?? 0, now + ms);
          n++;
        }
      }
      return n;
    }
    const driver = requireDriver(ctx, this.name);
    const { rows } = await driver.query(sql('reservationExtendLeases', schemaOf(ctx)), [
      worker,
      ms,
      this.name,
    ]);
    return rows.length;
  }

  /** Free / held / total slots now. */
  async peek(ctx: RateLimitContext = {}): Promise<ReservationState> {
    if (this.table && this.clock) {
      const now = this.clock.now().getTime();
      this.ensureMemory(this.table);
      const held = this.table.filter((s) => s.jobId !== null && (s.leaseExpiresAt ?? Infinity) >= now).length;
      return Object.freeze({
        freeCount: this.table.length - held,
        totalSlots: this.table.length,
        heldCount: held,
      });
    }
    const driver = requireDriver(ctx, this.name);
    const { rows } = await driver.query(sql('reservationPeek', schemaOf(ctx)), [this.name]);
    const total = toNumber(rows[0]?.total_slots) ?? 0;
    if (total === 0) return Object.freeze({ freeCount: this.slots, totalSlots: this.slots, heldCount: 0 });
    return Object.freeze({
      freeCount: toNumber(rows[0]?.free_count) ?? 0,
      totalSlots: total,
      heldCount: toNumber(rows[0]?.held_count) ?? 0,
    });
  }

  /**
   * Creates the slot rows idempotently (refreshing `last_used_at`, never touching holders). The
   * worker calls it at startup for every registered reservation; the registry on the first use of
   * a keyed key.
   */
  async ensureSlots(ctx: RateLimitContext = {}): Promise<void> {
    if (this.table) {
      this.ensureMemory(this.table);
      return;
    }
    const driver = requireDriver(ctx, this.name);
    await driver.query(sql('reservationEnsureSlots', schemaOf(ctx)), [this.name, this.slots, this.keyed]);
  }

  /** Whether any slot row of this reservation exists (read-only probe). */
  async slotRowsExist(ctx: RateLimitContext = {}): Promise<boolean> {
    if (this.table) return this.table.length > 0;
    const driver = requireDriver(ctx, this.name);
    const { rows } = await driver.query(sql('reservationSlotRowsExist', schemaOf(ctx)), [this.name]);
    return rows[0]?.present === true;
  }

  /** Memory mode: some slot is held by a live lease (eviction would drop it). Always false on Postgres. */
  hasLiveHolders(): boolean {
    if (!this.table || !this.clock) return false;
    const now = this.clock.now().getTime();
    return this.table.some((s) => s.jobId !== null && (s.leaseExpiresAt ?? Infinity) >= now);
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

  private ensureMemory(table: MemorySlot[]): void {
    while (table.length < this.slots)
      table.push({ jobId: null, workerId: null, fence: null, leaseExpiresAt: null });
  }

  private tryAcquireMemory(table: MemorySlot[], clock: Clock, job: string, worker: string): TryAcquireResult {
    this.ensureMemory(table);
    const now = clock.now().getTime();
    const index = table.findIndex(
      (s) => s.jobId === null || (s.leaseExpiresAt !== null && s.leaseExpiresAt < now),
    );
    const slot = index >= 0 ? table[index] : undefined;
    if (slot) {
      this.fenceSeq += 1;
      const fence = `${now}#${this.fenceSeq}`;
      slot.jobId = job;
      slot.workerId = worker;
      slot.fence = fence;
      slot.leaseExpiresAt = now + this.leaseMs;
      return {
        ok: true,
        lease: Object.freeze({
          bucketName: this.name,
          slotIndex: index,
          fence,
          jobId: job,
          workerId: worker,
          backend: 'memory' as const,
        }),
      };
    }
    const live = table
      .filter((s) => s.jobId !== null && s.leaseExpiresAt !== null && s.leaseExpiresAt >= now)
      .map((s) => (s.leaseExpiresAt as number) - now);
    return {
      ok: false,
      retryAfterMs:
        live.length > 0
          ? Math.ceil(Math.min(...live) + RESERVATION_RETRY_HINT_MARGIN_MS)
          : DEFAULT_RESERVATION_BACKOFF_MS,
      totalRows: table.length,
    };
  }
}

/**
 * Makes the slot rows of Postgres-backed `reservations` match their `slots`: creates missing rows
 * (filling gaps), deletes excess rows that are free or lease-expired, and reports excess rows a
 * live lease still holds (a later sync deletes them). Each reservation in its own transaction; safe
 * to re-run. Call it after changing slot counts. In-memory reservations are skipped.
 */
export async function syncSlots(
  reservations: readonly ConcurrencyReservation[],
  options: { driver: Driver; schema?: string },
): Promise<SyncResult> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const inserted: { bucketName: string; slotIndex: number }[] = [];
  const deleted: { bucketName: string; slotIndex: number }[] = [];
  const skippedHeld: { bucketName: string; slotIndex: number }[] = [];
  for (const res of reservations) {
    if (res.backend === 'memory') continue;
    await options.driver.transaction(async (tx) => {
      const ensured = await tx.query(sql('reservationEnsureSlots', schema), [res.name, res.slots, res.keyed]);
      for (const row of ensured.rows) {
        if (row.inserted === true) inserted.push({ bucketName: res.name, slotIndex: Number(row.slot_index) });
      }
      const held = await tx.query(sql('reservationSyncHeldExcess', schema), [res.name, res.slots]);
      for (const row of held.rows)
        skippedHeld.push({ bucketName: res.name, slotIndex: Number(row.slot_index) });
      const gone = await tx.query(sql('reservationSyncDeleteExcess', schema), [res.name, res.slots]);
      for (const row of gone.rows) deleted.push({ bucketName: res.name, slotIndex: Number(row.slot_index) });
    });
  }
  return Object.freeze({ inserted, deleted, skippedHeld });
}

/** @internal Schema-wide heartbeat renewal (the registry's `extendReservationLeases`). */
export async function extendAllLeases(
  workerId: string,
  leaseMs: number,
  ctx: RateLimitContext,
): Promise<number> {
  const driver = requireDriver(ctx, 'reservations');
  const { rows } = await driver.query(sql('reservationExtendLeases', schemaOf(ctx)), [
    checkUuid(workerId, 'workerId'),
    checkNumber(leaseMs, 'leaseMs'),
    null,
  ]);
  return rows.length;
}
