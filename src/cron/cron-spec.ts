import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { canonicalTimeZone } from './canonical-time-zone.js';
import { cronPattern } from './cron-pattern.js';
import { RecentCache } from './recent-cache.js';
import { DST_STRATEGIES, type DstStrategy } from './dst-strategy.js';

/**
 * A parsed, validated cron expression in a zone (as returned by {@link checkCronSpec}).
 *
 * The expression is matched against the WALL-CLOCK time in `timezone`; `dstStrategy` says what
 * happens to wall times a transition skips or repeats (see `DstStrategy`).
 */
export interface CronSpec {
  /** The expression, trimmed: 5 fields, 6 with seconds first, or a croner nickname. */
  expression: string;
  /** A canonical IANA zone name, as `Intl` spells it (e.g. `America/New_York`). */
  timezone: string;
  /** What transitions do to the schedule's slots. */
  dstStrategy: DstStrategy;
}

/** The forms an expression may take, for error messages. */
const ACCEPTED_FORMS =
  'a cron expression of 5 fields (minute hour day-of-month month day-of-week), ' +
  '6 fields (second first), or a nickname (@yearly, @annually, @monthly, @weekly, @daily, @hourly)';

/** The wall time a never-firing check starts from; fixed, so validation never reads a clock. */
const NEVER_FIRES_PROBE_FROM = new Date(Date.UTC(2000, 0, 1));

/**
 * Validates a schedule's time fields and returns the normalised spec: expression trimmed, timezone
 * canonical as `Intl` reports it (`america/new_york` → `America/New_York`).
 *
 * - `expression`: a string croner accepts: 5 fields, or 6 with seconds first, or one of croner's
 *   nicknames. Croner's extensions (`L`, `W`, `#`, `?`, names such as `MON`) are allowed; a
 *   day-of-month and a day-of-week both restricted match when EITHER matches (classic cron). It
 *   must match at least one date (`0 0 30 2 *` never does).
 * - `timezone`: an IANA zone name; omitted (`undefined` or `null`) means `UTC`. Fixed offsets
 *   (`+05:30`) are refused.
 * - `dstStrategy`: one of `DST_STRATEGIES`; omitted (`undefined` or `null`) means `skip`.
 *
 * Pure: reads no clock and writes nothing.
 *
 * @param field the name of the object in error messages, e.g. `schedule` gives `schedule.timezone`.
 * @throws InvalidArgumentError naming `${field}.expression`, `${field}.timezone` or
 *   `${field}.dstStrategy`, the value, and the rule it broke.
 */
export function checkCronSpec(
  spec: { expression: unknown; timezone?: unknown; dstStrategy?: unknown },
  field: string,
): CronSpec {
  if (spec === null || typeof spec !== 'object')
    throw new InvalidArgumentError(field, spec, 'must be { expression, timezone?, dstStrategy? }');
  // `timeZone` (as Intl spells it) for `timezone` would otherwise fire on UTC unnoticed.
  checkKnownKeys(spec, SPEC_KEYS, field, 'a field of a cron spec ({ expression, timezone?, dstStrategy? })');
  return {
    expression: checkExpression(spec.expression, `${field}.expression`),
    timezone: checkTimezone(spec.timezone, `${field}.timezone`),
    dstStrategy: checkStrategy(spec.dstStrategy, `${field}.dstStrategy`),
  };
}

const SPEC_KEYS: readonly string[] = ['expression', 'timezone', 'dstStrategy'];

function checkExpression(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new InvalidArgumentError(field, value, `must be ${ACCEPTED_FORMS}`);
  const expression = value.trim();
  // Checked before: it parsed and fires (a failed check is not remembered; it throws each time).
  if (firingExpressions.get(expression) === true) return expression;
  let next: Date | null;
  try {
    next = cronPattern(expression).nextRun(NEVER_FIRES_PROBE_FROM);
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^CronPattern: /, '') : String(err);
    throw new InvalidArgumentError(field, value, `must be ${ACCEPTED_FORMS} (${why})`);
  }
  if (next === null) {
    throw new InvalidArgumentError(
      field,
      value,
      'must match at least one date; this expression never fires (e.g. day 30 of February)',
    );
  }
  firingExpressions.set(expression, true);
  return expression;
}

/** Expressions that passed `checkExpression` lately: the never-fires probe walks up to years. */
const firingExpressions = new RecentCache<string, true>(1000);

function checkTimezone(value: unknown, field: string): string {
  if (value === undefined || value === null) return 'UTC';
  const rule =
    "must be an IANA time zone name this runtime knows, such as 'America/New_York' or 'UTC' " +
    "(fixed offsets such as '+05:30' are not accepted)";
  if (typeof value !== 'string') throw new InvalidArgumentError(field, value, rule);
  const canonical = canonicalTimeZone(value);
  if (canonical === null) throw new InvalidArgumentError(field, value, rule);
  return canonical;
}

function checkStrategy(value: unknown, field: string): DstStrategy {
  if (value === undefined || value === null) return 'skip';
  if (typeof value === 'string' && (DST_STRATEGIES as readonly string[]).includes(value)) {
    return value as DstStrategy;
  }
  throw new InvalidArgumentError(
    field,
    value,
    `must be one of ${DST_STRATEGIES.map((s) => `'${s}'`).join(', ')} ('skip' when omitted)`,
  );
}
