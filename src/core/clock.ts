/**
 * Time source injected into the in-memory backend and client-side helpers. The Postgres backend
 * never uses it for predicates: the database clock decides there.
 */
export interface Clock {
  /** Current wall-clock time. */
  now(): Date;
  /** Monotonically non-decreasing milliseconds, for local elapsed-time measurements. */
  monotonic(): number;
}

/** The real clock: `Date` and `performance.now()`. */
export class SystemClock implements Clock {
  now(): Date {
    return new Date();
  }

  monotonic(): number {
    return performance.now();
  }
}
