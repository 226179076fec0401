import type { Clock } from '../core/clock.js';
import { toMs, type Duration } from '../core/duration.js';

const EPOCH = Date.UTC(2000, 0, 1);

/**
 * A clock that only moves when told to. `monotonic()` is derived from `now()` so the two agree;
 * moving the clock backwards is allowed (tests of skew), and consumers that need monotonic time
 * clamp backward steps to zero elapsed.
 */
export class FakeClock implements Clock {
  private ms: number;

  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    this.ms = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  monotonic(): number {
    return this.ms - EPOCH;
  }

  /** Moves the clock forward by a duration. */
  advance(delta: Duration): void {
    this.ms += toMs(delta, 'advance', 'nonNegative');
  }

  /** Jumps to an absolute time (may go backwards). */
  moveTo(when: Date | number): void {
    this.ms = typeof when === 'number' ? when : when.getTime();
  }
}
