import type { Clock } from '../../../core/clock.js';
import { InvalidArgumentError } from '../../../errors/invalid-argument-error.js';
import { checkKnownKeys } from '../../../core/closest-name.js';
import type { RateLimitBackend } from '../../types.js';
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
  SweepIdleKeyedResult,
  TokenBucketOutcome,
  TokenBucketReading,
  TokenBucketSpec,
  PublishedBucket,
  ReservationSummary,
} from '../rate-limit-store.js';

/** Options of {@link MemoryRateLimitStore}. */
export interface MemoryRateLimitStoreOptions {
  /** The store's time: a `SystemClock`, or a `FakeClock` in tests. */
  clock: Clock;
}

/** The keys of {@link MemoryRateLimitStoreOptions}: any other is refused. */
const MEMORY_STORE_OPTION_KEYS: readonly string[] = ['clock'];

// GCRA admissions compare float arrival times; this much rounding error still admits.
const EPS = 1e-9;

/** Rate-limit state of one name and shape. */
interface Cell {
  /** Latest time read for this cell: a backward clock step counts as zero elapsed time. */
  seen: number;
  /** Last admission (or creation), for the idle sweep. */
  lastUsed: number;
  keyed: boolean;
  /** Token bucket: tokens at `at` (null: full). */
  tokens: number | null;
  at: number | null;
  capacity: number;
  refillPerSecond: number;
  /** GCRA: the theoretical arrival time (null: no debt). */
  tat: number | null;
  /** Log: admitted requests, oldest first. */
  entries: { t: number; id: string }[];
}

interface Slot {
  jobId: string | null;
  workerId: string | null;
  fence: string | null;
  leaseExpiresAt: number | null;
}

interface SlotTable {
  /** By slot index; a hole is a deleted (or never created) slot. */
  slots: (Slot | undefined)[];
  keyed: boolean;
  lastUsed: number;
}

/** The state a store and its views ({@link MemoryRateLimitStore.withClock}) share. */
class MemoryState {
  readonly cells = new Map<string, Cell>();
  readonly tables = new Map<string, SlotTable>();
  fenceSeq = 0;
}

const cellKey = (kind: BucketKind, name: string): string => `${kind}:${name}`;
const isHeld = (s: Slot, now: number): boolean => s.jobId !== null && (s.leaseExpiresAt ?? Infinity) >= now;
const isFree = (s: Slot, now: number): boolean =>
  s.jobId === null || (s.leaseExpiresAt !== null && s.leaseExpiresAt < now);

/**
 * Rate-limit state in process memory, on an injected {@link Clock}: per process, not shared
 * between workers. For tests (with a `FakeClock`), single-process development, and the in-memory
 * backend's fleet-wide state. A primitive declared `backend: 'memory'` keeps its state in a store
 * of its own (on `ctx.clock`), so two instances of one name do not share.
 *
 * A backward step of the clock counts as zero elapsed time for a rate limit (the latest reading is
 * kept), so a skewed `FakeClock` never refills twice or un-ages a window. Slots hold no state of
 * their own beyond the table and never need `ensureSlots` first: an acquire creates them.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  /** Always `'memory'`. */
  readonly backend = 'memory' as const;
  /** The clock every operation reads. */
  readonly clock: Clock;
  private state = new MemoryState();

  constructor(options: MemoryRateLimitStoreOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('MemoryRateLimitStore.options', options, 'must be an object');
    // Allocation-free: a memory primitive builds a view of its store whenever the context's clock changes.
    checkKnownKeys(
      options,
      MEMORY_STORE_OPTION_KEYS,
      'MemoryRateLimitStore',
      'an option of MemoryRateLimitStore',
    );
    const clock = options.clock;
    if (!clock || typeof clock.now !== 'function')
      throw new InvalidArgumentError('MemoryRateLimitStore.clock', clock, 'must be a Clock');
    this.clock = clock;
  }

  /** A view of this store's state on another clock (a memory primitive follows `ctx.clock`). */
  withClock(clock: Clock): MemoryRateLimitStore {
    if (clock === this.clock) return this;
    const view = new MemoryRateLimitStore({ clock });
    view.state = this.state;
    return view;
  }

  /** Forgets every rate limit and reservation slot, in this store and its views (between tests). */
  clear(): void {
    this.state.cells.clear();
    this.state.tables.clear();
  }

  /** Itself for `'memory'`, else null. */
  forBackend(backend: RateLimitBackend): RateLimitStore | null {
    return backend === 'memory' ? this : null;
  }

  /** Stored tokens of token bucket `name` (null: untouched, i.e. full). Synchronous, for eviction checks. */
  storedTokens(name: string): number | null {
    return this.state.cells.get(cellKey('token_bucket', name))?.tokens ?? null;
  }

  /** Whether some slot of reservation `name` is held by a live lease. Synchronous, for eviction checks. */
  hasLiveSlotHolders(name: string): boolean {
    const table = this.state.tables.get(name);
    if (!table) return false;
    const now = this.wall();
    return table.slots.some((s) => s !== undefined && isHeld(s, now));
  }

  // ---------------------------------------------------------------- token bucket

  async acquireTokens(bucket: TokenBucketSpec, count: number): Promise<TokenBucketOutcome> {
    const cell = this.cell('token_bucket', bucket.name, bucket.keyed);
    const now = this.timeOf(cell);
    const prev = cell.tokens;
    const available = this.available(cell, bucket, now);
    const allowed = available >= count;
    cell.tokens = allowed ? available - count : available;
    cell.at = now;
    cell.capacity = bucket.capacity;
    cell.refillPerSecond = bucket.refillPerSecond;
    if (allowed) cell.lastUsed = now;
    return {
      status: allowed ? 'allowed' : 'denied',
      backend: 'memory',
      tokens: cell.tokens,
      available,
      previousTokens: prev,
    };
  }

  async refundTokens(bucket: TokenBucketSpec, count: number): Promise<void> {
    const cell = this.cell('token_bucket', bucket.name, bucket.keyed);
    const now = this.timeOf(cell);
    cell.tokens = Math.min(bucket.capacity, this.available(cell, bucket, now) + count);
    cell.at = now;
    cell.capacity = bucket.capacity;
    cell.refillPerSecond = bucket.refillPerSecond;
  }

  async peekTokens(bucket: TokenBucketSpec): Promise<TokenBucketReading> {
    const cell = this.state.cells.get(cellKey('token_bucket', bucket.name));
    if (!cell) return { backend: 'memory', available: bucket.capacity };
    return { backend: 'memory', available: this.available(cell, bucket, this.timeOf(cell)) };
  }

  private available(cell: Cell, bucket: TokenBucketSpec, now: number): number {
    if (cell.tokens === null || cell.at === null) return bucket.capacity;
    const elapsed = Math.max(0, now - cell.at);
    return Math.min(bucket.capacity, cell.tokens + (elapsed / 1000) * bucket.refillPerSecond);
  }

  // ---------------------------------------------------------------- GCRA

  async acquireGcra(window: SlidingWindowSpec): Promise<GcraOutcome> {
    const cell = this.cell('gcra', window.name, window.keyed);
    const now = this.timeOf(cell);
    const prev = cell.tat;
    const newTat = Math.max(cell.tat ?? now, now) + window.windowMs / window.limit;
    const allowed = now >= newTat - window.windowMs - EPS;
    if (allowed) {
      cell.tat = newTat;
      cell.lastUsed = now;
    }
    return {
      status: allowed ? 'allowed' : 'denied',
      backend: 'memory',
      debtMs: newTat - now,
      previousTatMs: prev,
    };
  }

  async refundGcra(window: SlidingWindowSpec): Promise<void> {
    const cell = this.state.cells.get(cellKey('gcra', window.name));
    if (!cell) return;
    const now = this.timeOf(cell);
    if (cell.tat === null) return;
    const back = Math.max(cell.tat, now) - window.windowMs / window.limit;
    cell.tat = back <= now ? null : back;
  }

  async peekGcra(window: SlidingWindowSpec): Promise<GcraReading> {
    const cell = this.state.cells.get(cellKey('gcra', window.name));
    if (!cell) return { backend: 'memory', debtMs: 0 };
    const now = this.timeOf(cell);
    return { backend: 'memory', debtMs: Math.max(0, (cell.tat ?? now) - now) };
  }

  // ---------------------------------------------------------------- sliding log

  async acquireLog(window: SlidingWindowSpec, requestId: string): Promise<SlidingLogOutcome> {
    const cell = this.cell('sliding_log', window.name, window.keyed);
    const now = this.timeOf(cell);
    prune(cell, now - window.windowMs);
    const live = cell.entries.length;
    if (live < window.limit) {
      cell.entries.push({ t: now, id: requestId });
      cell.lastUsed = now;
      return { status: 'allowed', backend: 'memory', live, retryMs: 0 };
    }
    return { status: 'denied', backend: 'memory', live, retryMs: this.logRetry(cell, window, now) };
  }

  async refundLog(window: SlidingWindowSpec, requestId: string): Promise<void> {
    const cell = this.state.cells.get(cellKey('sliding_log', window.name));
    if (cell) cell.entries = cell.entries.filter((e) => e.id !== requestId);
  }

  async peekLog(window: SlidingWindowSpec): Promise<SlidingLogReading> {
    const cell = this.state.cells.get(cellKey('sliding_log', window.name));
    if (!cell) return { backend: 'memory', live: 0, retryMs: 0 };
    const now = this.timeOf(cell);
    prune(cell, now - window.windowMs);
    const live = cell.entries.length;
    return { backend: 'memory', live, retryMs: live >= window.limit ? this.logRetry(cell, window, now) : 0 };
  }

  /** When the entry that must leave for one more request to fit does so. */
  private logRetry(cell: Cell, window: SlidingWindowSpec, now: number): number {
    const nth = cell.entries[cell.entries.length - window.limit] as { t: number };
    return nth.t + window.windowMs - now;
  }

  // ---------------------------------------------------------------- shared

  async resetBucket(name: string, kind: BucketKind): Promise<void> {
    this.state.cells.delete(cellKey(kind, name));
  }

  /** Memory keeps no admin list (its state is per process): always false. */
  async publishBucket(_meta: BucketMetadata): Promise<boolean> {
    return false;
  }

  async sweepIdleKeyed(idleForMs: number): Promise<SweepIdleKeyedResult> {
    const now = this.wall();
    const before = now - idleForMs;
    let rateLimitRows = 0;
    for (const [key, cell] of this.state.cells) {
      if (!cell.keyed || cell.lastUsed >= before) continue;
      const spentQuota =
        key.startsWith('token_bucket:') &&
        cell.refillPerSecond === 0 &&
        cell.tokens !== null &&
        cell.tokens < cell.capacity;
      if (spentQuota) continue;
      this.state.cells.delete(key);
      rateLimitRows++;
    }
    let reservationBuckets = 0;
    let reservationRows = 0;
    for (const [name, table] of this.state.tables) {
      if (!table.keyed || table.lastUsed >= before) continue;
      if (!table.slots.every((s) => s === undefined || isFree(s, now))) continue;
      this.state.tables.delete(name);
      reservationBuckets++;
      reservationRows += table.slots.filter((s) => s !== undefined).length;
    }
    return { rateLimitRows, reservationBuckets, reservationRows };
  }

  // ---------------------------------------------------------------- reservation slots

  async ensureSlots(reservation: ReservationSpec): Promise<void> {
    this.ensure(reservation, this.wall());
  }

  async syncSlots(reservation: ReservationSpec): Promise<SlotSyncResult> {
    const now = this.wall();
    const { table, inserted } = this.ensure(reservation, now);
    const deleted: number[] = [];
    const skippedHeld: number[] = [];
    for (let i = reservation.slots; i < table.slots.length; i++) {
      const slot = table.slots[i];
      if (slot === undefined) continue;
      if (isHeld(slot, now)) skippedHeld.push(i);
      else {
        table.slots[i] = undefined;
        deleted.push(i);
      }
    }
    while (table.slots.length > 0 && table.slots[table.slots.length - 1] === undefined) table.slots.pop();
    return { inserted, deleted, skippedHeld };
  }

  async slotRowsExist(name: string): Promise<boolean> {
    return this.state.tables.get(name)?.slots.some((s) => s !== undefined) ?? false;
  }

  async acquireSlot(reservation: ReservationSpec, jobId: string, workerId: string): Promise<SlotOutcome> {
    const now = this.wall();
    const { table } = this.ensure(reservation, now);
    const index = table.slots.findIndex((s) => s !== undefined && isFree(s, now));
    const slot = index >= 0 ? table.slots[index] : undefined;
    if (slot) {
      this.state.fenceSeq += 1;
      const fence = `${now}#${this.state.fenceSeq}`;
      slot.jobId = jobId;
      slot.workerId = workerId;
      slot.fence = fence;
      slot.leaseExpiresAt = now + reservation.leaseMs;
      table.lastUsed = now;
      return { ok: true, backend: 'memory', slotIndex: index, fence };
    }
    const live = table.slots
      .filter((s): s is Slot => s !== undefined && s.jobId !== null && s.leaseExpiresAt !== null)
      .map((s) => (s.leaseExpiresAt as number) - now)
      .filter((ms) => ms >= 0);
    return {
      ok: false,
      retryMs: live.length > 0 ? Math.min(...live) : null,
      totalRows: table.slots.filter((s) => s !== undefined).length,
    };
  }

  async releaseSlot(
    name: string,
    slotIndex: number,
    workerId: string,
    fence: string | null,
  ): Promise<boolean> {
    const table = this.state.tables.get(name);
    const slot = table?.slots[slotIndex];
    if (!table || !slot || slot.jobId === null || slot.workerId !== workerId) return false;
    if (fence !== null && slot.fence !== fence) return false;
    slot.jobId = null;
    slot.workerId = null;
    slot.fence = null;
    slot.leaseExpiresAt = null;
    table.lastUsed = this.wall();
    return true;
  }

  async extendSlotLeases(workerId: string, leaseMs: number, name: string | null): Promise<number> {
    const now = this.wall();
    const tables = name === null ? [...this.state.tables.values()] : [this.state.tables.get(name)];
    let n = 0;
    for (const table of tables) {
      for (const slot of table?.slots ?? []) {
        if (slot && slot.jobId !== null && slot.workerId === workerId) {
          slot.leaseExpiresAt = Math.max(slot.leaseExpiresAt ?? 0, now + leaseMs);
          n++;
        }
      }
    }
    return n;
  }

  /** Always empty: memory limits live in one process and are never published. */
  async listBuckets(_name?: string | null): Promise<PublishedBucket[]> {
    return [];
  }

  async listReservations(name?: string | null): Promise<ReservationSummary[]> {
    const now = this.wall();
    const out: ReservationSummary[] = [];
    for (const [n, table] of this.state.tables) {
      if (name !== undefined && name !== null && n !== name) continue;
      const slots = table.slots.filter((x): x is Slot => x !== undefined);
      if (slots.length === 0) continue;
      out.push({
        name: n,
        slots: slots.length,
        held: slots.filter((x) => isHeld(x, now)).length,
        keyed: table.keyed,
        lastUsedAt: new Date(table.lastUsed),
      });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async peekSlots(name: string): Promise<SlotCounts> {
    const table = this.state.tables.get(name);
    if (!table) return { free: 0, held: 0, total: 0 };
    const now = this.wall();
    const slots = table.slots.filter((s): s is Slot => s !== undefined);
    const held = slots.filter((s) => isHeld(s, now)).length;
    return { free: slots.length - held, held, total: slots.length };
  }

  private ensure(reservation: ReservationSpec, now: number): { table: SlotTable; inserted: number[] } {
    let table = this.state.tables.get(reservation.name);
    if (table) table.keyed = table.keyed && reservation.keyed;
    else {
      table = { slots: [], keyed: reservation.keyed, lastUsed: now };
      this.state.tables.set(reservation.name, table);
    }
    table.lastUsed = now;
    const inserted: number[] = [];
    for (let i = 0; i < reservation.slots; i++) {
      if (table.slots[i] !== undefined) continue;
      table.slots[i] = { jobId: null, workerId: null, fence: null, leaseExpiresAt: null };
      inserted.push(i);
    }
    return { table, inserted };
  }

  // ---------------------------------------------------------------- time

  private wall(): number {
    return this.clock.now().getTime();
  }

  /** Now for `cell`, never before its latest reading. */
  private timeOf(cell: Cell): number {
    cell.seen = Math.max(cell.seen, this.wall());
    return cell.seen;
  }

  private cell(kind: BucketKind, name: string, keyed: boolean): Cell {
    const key = cellKey(kind, name);
    let cell = this.state.cells.get(key);
    if (!cell) {
      const now = this.wall();
      cell = {
        seen: now,
        lastUsed: now,
        keyed,
        tokens: null,
        at: null,
        capacity: 0,
        refillPerSecond: 0,
        tat: null,
        entries: [],
      };
      this.state.cells.set(key, cell);
    } else if (!keyed) {
      cell.keyed = false;
    }
    return cell;
  }
}

function prune(cell: Cell, boundary: number): void {
  let drop = 0;
  while (drop < cell.entries.length && (cell.entries[drop] as { t: number }).t <= boundary) drop++;
  if (drop > 0) cell.entries.splice(0, drop);
}
