import type { Clock } from '../core/clock.js';
import { OPPORTUNISTIC_EVICT_MIN_INTERVAL_MS } from './types.js';

/**
 * Bookkeeping of one kind of keyed materialisation (rate limits or reservations): when each
 * concrete name was last acquired, its cap, and the throttle of opportunistic eviction. Process
 * state only; never consulted for admission.
 */
export class KeyedTracker {
  private readonly lastUsed = new Map<string, number>();
  private lastScan = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    /** Most names tracked at once. */
    readonly cap: number,
  ) {}

  /** Names tracked now. */
  get size(): number {
    return this.lastUsed.size;
  }

  /** Whether `name` is a tracked keyed materialisation. */
  has(name: string): boolean {
    return this.lastUsed.has(name);
  }

  /** Starts tracking `name`, used now. */
  track(name: string): void {
    this.lastUsed.set(name, this.clock.monotonic());
  }

  /** Marks a tracked `name` used now; returns whether it is tracked. */
  touch(name: string): boolean {
    if (!this.lastUsed.has(name)) return false;
    this.lastUsed.set(name, this.clock.monotonic());
    return true;
  }

  /** Stops tracking `name` (evicted, or claimed by a static registration). */
  forget(name: string): void {
    this.lastUsed.delete(name);
  }

  /** Tracked names not used for at least `idleForMs`. */
  idle(idleForMs: number): string[] {
    const now = this.clock.monotonic();
    const out: string[] = [];
    for (const [name, at] of this.lastUsed) if (now - at >= idleForMs) out.push(name);
    return out;
  }

  /**
   * Whether one more name fits under the cap. At the cap, runs `evictIdle` first — at most once
   * per 30 s, so a registry sitting at its cap stays O(1) per denied request.
   */
  makeRoom(evictIdle: () => void): boolean {
    if (this.lastUsed.size < this.cap) return true;
    const now = this.clock.monotonic();
    if (now - this.lastScan >= OPPORTUNISTIC_EVICT_MIN_INTERVAL_MS) {
      this.lastScan = now;
      evictIdle();
    }
    return this.lastUsed.size < this.cap;
  }

  /** Forgets everything, the scan throttle included. */
  clear(): void {
    this.lastUsed.clear();
    this.lastScan = Number.NEGATIVE_INFINITY;
  }
}
