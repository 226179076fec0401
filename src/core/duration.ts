import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * A length of time: milliseconds as a number, or a string with a unit such as `'250ms'`, `'30s'`,
 * `'5m'`, `'2h'`, `'1d'` (decimals allowed: `'1.5s'`).
 */
export type Duration = number | string;

/**
 * The longest duration TaskQ accepts anywhere: 100 years (36,500 days). Any real delay, TTL or
 * retention fits, and the database clock plus it stays far inside Postgres' timestamp range, so a
 * statement never fails with "interval out of range" or "timestamp out of range".
 */
export const MAX_DURATION_MS = 36_500 * 86_400_000;

/**
 * The longest duration a timer can wait: 2^31 - 1 ms (about 24.8 days). Node.js fires a longer
 * `setTimeout` after 1 ms, so the durations a worker enforces with a timer (`startToClose`,
 * `heartbeatTimeout`, most worker settings) are bounded by it.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** The earliest `Date` TaskQ accepts: 0001-01-01T00:00:00.000Z. */
export const MIN_DATE_MS = Date.parse('0001-01-01T00:00:00.000Z');

/**
 * The latest `Date` TaskQ accepts: 9999-12-31T23:59:59.999Z. Dates stay within four-digit years,
 * which Postgres stores and every client parses back (`Date` reaches further into the past than
 * `timestamptz`, whose range starts in 4713 BC).
 */
export const MAX_DATE_MS = Date.parse('9999-12-31T23:59:59.999Z');

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/**
 * Converts a {@link Duration} to milliseconds.
 *
 * @param field name used in the error message when the value is rejected
 * @param rule `'positive'` (> 0, the default) or `'nonNegative'` (>= 0)
 * @param maxMs the longest value accepted (default {@link MAX_DURATION_MS}, 100 years)
 */
export function toMs(
  value: Duration,
  field: string,
  rule: 'positive' | 'nonNegative' = 'positive',
  maxMs: number = MAX_DURATION_MS,
): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const m = DURATION_RE.exec(value);
    if (!m) {
      throw new InvalidArgumentError(
        field,
        value,
        "must be milliseconds or a number with a unit: '250ms', '30s', '5m', '2h', '1d'",
      );
    }
    ms = Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  } else {
    throw new InvalidArgumentError(field, value, 'must be a number of milliseconds or a duration string');
  }
  if (!Number.isFinite(ms)) throw new InvalidArgumentError(field, value, 'must be finite');
  if (rule === 'positive' && ms <= 0)
    throw new InvalidArgumentError(field, value, 'must be greater than zero');
  if (rule === 'nonNegative' && ms < 0) throw new InvalidArgumentError(field, value, 'must not be negative');
  if (ms > maxMs) throw new InvalidArgumentError(field, value, `must be at most ${describeMaxMs(maxMs)}`);
  return ms;
}

/** A duration bound in words, naming why it is what it is. */
export function describeMaxMs(maxMs: number): string {
  if (maxMs === MAX_DURATION_MS) return `100 years (${maxMs} ms)`;
  if (maxMs === MAX_TIMER_MS) return `${maxMs} ms (about 24.8 days, the longest timer Node.js can set)`;
  return `${formatMs(maxMs)} (${maxMs} ms)`;
}

/** Like {@link toMs} but passes `undefined` / `null` through as `null`. */
export function toMsOrNull(
  value: Duration | null | undefined,
  field: string,
  rule: 'positive' | 'nonNegative' = 'positive',
  maxMs: number = MAX_DURATION_MS,
): number | null {
  return value === undefined || value === null ? null : toMs(value, field, rule, maxMs);
}

/**
 * Checks a `Date` given for a timestamp column: a valid date between {@link MIN_DATE_MS} and
 * {@link MAX_DATE_MS} (years 1 to 9999).
 */
export function checkDate(value: unknown, field: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime()))
    throw new InvalidArgumentError(field, value, 'must be a valid Date');
  const t = value.getTime();
  if (t < MIN_DATE_MS || t > MAX_DATE_MS)
    throw new InvalidArgumentError(
      field,
      value,
      'must be between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z',
    );
  return value;
}

/** Formats milliseconds for humans: `1500` → `'1.5s'`. */
export function formatMs(ms: number): string {
  if (ms % 86_400_000 === 0 && ms !== 0) return `${ms / 86_400_000}d`;
  if (ms % 3_600_000 === 0 && ms !== 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms !== 0) return `${ms / 60_000}m`;
  if (ms >= 1000) return `${ms / 1000}s`;
  return `${ms}ms`;
}
