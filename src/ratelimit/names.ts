import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { toMs, type Duration } from '../core/duration.js';
import { checkText } from '../core/text-checks.js';

/**
 * Reserved namespace of the fleet-wide per-queue concurrency caps. Only
 * `RateLimitRegistry.registerQueueCapReservation()` registers such names; `register()` and keyed
 * refs refuse them, so user code can never shadow a queue cap.
 */
export const QUEUE_CONCURRENCY_PREFIX = 'taskq:global:queue:';

/** Registry name of the concurrency cap of `queue`: `taskq:global:queue:{queue}`. */
export function queueConcurrencyReservationName(queue: string): string {
  checkText(queue, 'queue', { notBlank: true });
  return `${QUEUE_CONCURRENCY_PREFIX}${queue}`;
}

/** Longest primitive name accepted, in UTF-8 bytes (names are Redis keys and Postgres text). */
export const MAX_NAME_BYTES = 512;

/**
 * Validates a primitive name. Names are bound parameters and Redis key suffixes, never SQL
 * identifiers, so any non-blank text without NUL up to 512 bytes is allowed — including `:`, which
 * keyed (`base:key`) and queue-cap (`taskq:global:queue:q`) names contain.
 */
export function checkName(name: unknown, field: string): string {
  return checkText(name, field, { notBlank: true, maxBytes: MAX_NAME_BYTES });
}

/** Validates a finite number > 0 (or >= 0 with `allowZero`). */
export function checkNumber(
  value: unknown,
  field: string,
  rule: { min?: number; allowZero?: boolean; integer?: boolean } = {},
): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new InvalidArgumentError(field, value, 'must be a finite number');
  if (rule.integer && !Number.isInteger(value))
    throw new InvalidArgumentError(field, value, 'must be an integer');
  if (rule.min !== undefined) {
    if (value < rule.min) throw new InvalidArgumentError(field, value, `must be >= ${rule.min}`);
  } else if (rule.allowZero) {
    if (value < 0) throw new InvalidArgumentError(field, value, 'must be >= 0');
  } else if (value <= 0) {
    throw new InvalidArgumentError(field, value, 'must be > 0');
  }
  return value;
}

/** A positive {@link Duration} in ms, or null when absent. */
export function optionalDuration(value: Duration | null | undefined, field: string): number | null {
  return value === undefined || value === null ? null : toMs(value, field);
}

/** Job and worker ids are UUIDs (the reservation_slots columns are `uuid`). */
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Validates a UUID string (job id, worker id). */
export function checkUuid(value: unknown, field: string): string {
  if (typeof value !== 'string' || !UUID_RE.test(value))
    throw new InvalidArgumentError(field, value, 'must be a UUID string');
  return value.toLowerCase();
}

/** True when `name` lies in the reserved queue-cap namespace. */
export function isReservedName(name: string): boolean {
  return name.startsWith(QUEUE_CONCURRENCY_PREFIX);
}

/**
 * True when some key could derive `${baseName}:${key}` into the reserved namespace: either the
 * derived prefix already starts with it, or it is a prefix of it (`taskq`, `taskq:global`, …).
 */
export function baseNameCanReachReserved(baseName: string): boolean {
  const derived = `${baseName}:`;
  return derived.startsWith(QUEUE_CONCURRENCY_PREFIX) || QUEUE_CONCURRENCY_PREFIX.startsWith(derived);
}
