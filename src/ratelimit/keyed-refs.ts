import type { Clock } from '../core/clock.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isStandardSchema, type Schema } from '../core/schema-validation.js';
import { QUEUE_CONCURRENCY_PREFIX, baseNameCanReachReserved, checkName, checkNumber } from './names.js';
import type { RateLimitBackend } from './types.js';

/** Options of {@link keyedRateLimit}. */
export interface KeyedRateLimitOptions<P> {
  /** Namespace of the derived buckets: each key `k` gets the bucket `${baseName}:${k}`. */
  baseName: string;
  /** Derives the key from the validated payload; must return a non-empty string. */
  keyFn: (payload: P) => string;
  /** Capacity of every derived token bucket. */
  capacity: number;
  /** Refill per second of every derived token bucket (0 = fixed quota per key). */
  refillPerSecond: number;
  /** Store of the derived buckets. Default `'redis'`; use `'postgres'` or `'memory'` without Redis. */
  backend?: RateLimitBackend;
}

/** Options of {@link keyedReservation}. */
export interface KeyedReservationOptions<P> {
  /** Namespace of the derived reservations: each key `k` gets `${baseName}:${k}`. */
  baseName: string;
  /** Derives the key from the validated payload; must return a non-empty string. */
  keyFn: (payload: P) => string;
  /** Slots of every derived reservation. */
  slots: number;
  /** Lease of every derived reservation. */
  lease: Duration;
  /** Keep each derived reservation's slots in a memory store of its own on this clock, instead of the shared store (tests). */
  clock?: Clock;
}

/** The keys of {@link KeyedRateLimitOptions}: any other is refused (a misspelt `backend` meant Redis). */
const KEYED_RATE_LIMIT_OPTION_KEYS: readonly string[] = [
  'baseName',
  'keyFn',
  'capacity',
  'refillPerSecond',
  'backend',
];

/** The keys of {@link KeyedReservationOptions}: any other is refused (a misspelt `clock` meant the shared store). */
const KEYED_RESERVATION_OPTION_KEYS: readonly string[] = ['baseName', 'keyFn', 'slots', 'lease', 'clock'];

/** A per-key token bucket, derived from each job's payload (see {@link keyedRateLimit}). */
export interface KeyedRateLimitRef<P = unknown> {
  /** Discriminator. */
  readonly kind: 'keyed_rate_limit';
  /** Namespace of the derived bucket names. */
  readonly baseName: string;
  /** Payload validator run before `keyFn`. */
  readonly schema: Schema<P>;
  /** Key derivation (method syntax keeps refs of any payload type assignable to `KeyedRateLimitRef`). */
  keyFn(payload: P): string;
  /** Capacity per key. */
  readonly capacity: number;
  /** Refill per second per key. */
  readonly refillPerSecond: number;
  /** Store of the derived buckets. */
  readonly backend: RateLimitBackend;
}

/** A per-key concurrency reservation, derived from each job's payload (see {@link keyedReservation}). */
export interface KeyedReservationRef<P = unknown> {
  /** Discriminator. */
  readonly kind: 'keyed_reservation';
  /** Namespace of the derived reservation names. */
  readonly baseName: string;
  /** Payload validator run before `keyFn`. */
  readonly schema: Schema<P>;
  /** Key derivation (method syntax keeps refs of any payload type assignable to `KeyedRateLimitRef`). */
  keyFn(payload: P): string;
  /** Slots per key. */
  readonly slots: number;
  /** Lease per key, in ms. */
  readonly leaseMs: number;
  /** Clock of the derived reservations' own memory stores (null: the context's shared store). */
  readonly clock: Clock | null;
}

function checkBaseName(baseName: unknown, field: string): string {
  const name = checkName(baseName, field);
  if (baseNameCanReachReserved(name)) {
    throw new InvalidArgumentError(
      field,
      name,
      `derived names ${JSON.stringify(`${name}:<key>`)} could fall into the reserved namespace ${JSON.stringify(QUEUE_CONCURRENCY_PREFIX)}; choose another baseName`,
    );
  }
  return name;
}

function checkCommon(schema: unknown, options: unknown, known: readonly string[], where: string): void {
  if (!isStandardSchema(schema))
    throw new InvalidArgumentError(
      `${where}.schema`,
      schema,
      'must be a Standard Schema (Zod, Valibot, ArkType, …)',
    );
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`${where}.options`, options, 'must be an object');
  checkKnownKeys(options, known, where, `an option of ${where}()`);
  const keyFn = (options as { keyFn?: unknown }).keyFn;
  if (typeof keyFn !== 'function')
    throw new InvalidArgumentError(`${where}.keyFn`, keyFn, 'must be a function');
}

/**
 * A token bucket per key: `keyFn` runs on the payload validated by `schema` (the actor's payload
 * schema) and the job acquires the bucket `${baseName}:${key}`, created on first use with this
 * ref's capacity and refill, and reused afterwards.
 *
 * ```ts
 * keyedRateLimit(ApiRequest, { baseName: 'api-per-tenant', keyFn: (p) => p.tenantId, capacity: 10, refillPerSecond: 1 })
 * ```
 */
export function keyedRateLimit<P>(
  schema: Schema<P>,
  options: KeyedRateLimitOptions<P>,
): KeyedRateLimitRef<P> {
  checkCommon(schema, options, KEYED_RATE_LIMIT_OPTION_KEYS, 'keyedRateLimit');
  const backend = options.backend ?? 'redis';
  if (backend !== 'redis' && backend !== 'postgres' && backend !== 'memory')
    throw new InvalidArgumentError(
      'keyedRateLimit.backend',
      backend,
      "must be 'redis', 'postgres' or 'memory'",
    );
  return Object.freeze({
    kind: 'keyed_rate_limit' as const,
    baseName: checkBaseName(options.baseName, 'keyedRateLimit.baseName'),
    schema,
    keyFn: options.keyFn,
    capacity: checkNumber(options.capacity, 'keyedRateLimit.capacity'),
    refillPerSecond: checkNumber(options.refillPerSecond, 'keyedRateLimit.refillPerSecond', {
      allowZero: true,
    }),
    backend,
  });
}

/**
 * A concurrency reservation per key: at most `slots` concurrent jobs for each key derived by
 * `keyFn` from the validated payload. The reservation `${baseName}:${key}` and its slot rows are
 * created on first use.
 */
export function keyedReservation<P>(
  schema: Schema<P>,
  options: KeyedReservationOptions<P>,
): KeyedReservationRef<P> {
  checkCommon(schema, options, KEYED_RESERVATION_OPTION_KEYS, 'keyedReservation');
  return Object.freeze({
    kind: 'keyed_reservation' as const,
    baseName: checkBaseName(options.baseName, 'keyedReservation.baseName'),
    schema,
    keyFn: options.keyFn,
    slots: checkNumber(options.slots, 'keyedReservation.slots', { min: 1, integer: true }),
    leaseMs: toMs(options.lease, 'keyedReservation.lease'),
    clock: options.clock ?? null,
  });
}

/** True for a {@link KeyedRateLimitRef}. */
export function isKeyedRateLimitRef(value: unknown): value is KeyedRateLimitRef {
  return (
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'keyed_rate_limit'
  );
}

/** True for a {@link KeyedReservationRef}. */
export function isKeyedReservationRef(value: unknown): value is KeyedReservationRef {
  return (
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'keyed_reservation'
  );
}
