import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * A length of time: milliseconds as a number, or a string with a unit such as `'250ms'`, `'30s'`,
 * `'5m'`, `'2h'`, `'1d'` (decimals allowed: `'1.5s'`).
 */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/**
 * Converts a {@link Duration} to milliseconds.
 *
 * @param field name used in the error message when the value is rejected
 * @param rule `'positive'` (> 0, the default) or `'nonNegative'` (>= 0)
 */
export function toMs(value: Duration, field: string, rule: 'positive' | 'nonNegative' = 'positive'): number {
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
  return ms;
}

/** Like {@link toMs} but passes `undefined` / `null` through as `null`. */
export function toMsOrNull(
  value: Duration | null | undefined,
  field: string,
  rule: 'positive' | 'nonNegative' = 'positive',
): number | null {
  return value === undefined || value === null ? null : toMs(value, field, rule);
}

/** Formats milliseconds for humans: `1500` → `'1.5s'`. */
export function formatMs(ms: number): string {
  if (ms % 86_400_000 === 0 && ms !== 0) return `${ms / 86_400_000}d`;
  if (ms % 3_600_000 === 0 && ms !== 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms !== 0) return `${ms / 60_000}m`;
  if (ms >= 1000) return `${ms / 1000}s`;
  return `${ms}ms`;
}
