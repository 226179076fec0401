import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { PayloadValidationError } from '../errors/payload-validation-error.js';
import { validateSchema, type Schema } from '../core/schema-validation.js';
import type { ConcurrencyReservation } from './concurrency-reservation.js';
import type { KeyedRateLimitRef, KeyedReservationRef } from './keyed-refs.js';
import { QUEUE_CONCURRENCY_PREFIX, isReservedName } from './names.js';
import type { ActorAcquireRequest, RateLimitPrimitive } from './acquire-request.js';

/** Validated payloads of one acquisition, per schema (several keyed refs may share one). */
export type PayloadCache = Map<Schema<unknown>, Promise<unknown>>;

/**
 * The concrete name a keyed ref derives for this job: `<baseName>:<key>`, the key computed by the
 * ref's `keyFn` from the payload validated against the ref's schema (once per schema and job).
 * @throws PayloadValidationError when the payload does not validate or `keyFn` returns no usable key
 */
export async function keyedConcreteName(
  ref: KeyedRateLimitRef | KeyedReservationRef,
  request: ActorAcquireRequest,
  cache: PayloadCache,
): Promise<string> {
  let validated = cache.get(ref.schema);
  if (!validated) {
    validated = validateSchema(ref.schema, request.payload, {
      actor: request.actor ?? '(unknown)',
      what: 'payload',
    });
    cache.set(ref.schema, validated);
  }
  const key = ref.keyFn(await validated);
  if (typeof key !== 'string' || key.length === 0 || key.includes('\u0000')) {
    throw new PayloadValidationError(
      `keyFn of keyed ref ${JSON.stringify(ref.baseName)} returned ${typeof key === 'string' ? 'an empty or NUL-containing string' : `a ${typeof key}`}; it must return a non-empty string`,
      { actor: request.actor ?? null },
    );
  }
  const concrete = `${ref.baseName}:${key}`;
  if (isReservedName(concrete)) {
    // Unreachable through keyedRateLimit()/keyedReservation(), which refuse such base names.
    throw new InvalidArgumentError(
      'keyed ref',
      concrete,
      `derives into the reserved namespace ${QUEUE_CONCURRENCY_PREFIX}`,
    );
  }
  return concrete;
}

/**
 * Two keyed refs may derive the same concrete name (base names overlapping through ':' in keys);
 * that is allowed only when they configure the bucket identically.
 * @throws InvalidArgumentError naming the concrete name
 */
export function checkKeyedRateLimitConfig(
  existing: RateLimitPrimitive,
  ref: KeyedRateLimitRef,
  name: string,
): void {
  if (
    existing.kind === 'token_bucket' &&
    existing.capacity === ref.capacity &&
    existing.refillPerSecond === ref.refillPerSecond &&
    existing.backend === ref.backend
  ) {
    return;
  }
  throw new InvalidArgumentError(
    'keyedRateLimit',
    name,
    `two keyed refs derive ${JSON.stringify(name)} with different configurations (base names overlap through ':' in keys); choose distinct baseNames`,
  );
}

/** The reservation counterpart of {@link checkKeyedRateLimitConfig}. */
export function checkKeyedReservationConfig(
  existing: ConcurrencyReservation,
  ref: KeyedReservationRef,
  name: string,
): void {
  if (existing.slots === ref.slots && existing.leaseMs === ref.leaseMs && existing.clock === ref.clock)
    return;
  throw new InvalidArgumentError(
    'keyedReservation',
    name,
    `two keyed refs derive ${JSON.stringify(name)} with different configurations (base names overlap through ':' in keys); choose distinct baseNames`,
  );
}
