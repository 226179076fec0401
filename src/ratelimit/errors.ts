import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { TaskQError } from '../errors/taskq-error.js';
import type { RateLimitBackend } from './types.js';

/** Which kind of primitive refused an admission. */
export type ReservationUnavailableSource = 'reservation' | 'rate_limit';

/**
 * A concurrency slot or a rate-limit token could not be acquired.
 *
 * Thrown by `ConcurrencyReservation.acquire()` and `RateLimitRegistry.acquireForActor()` (which
 * releases whatever it already acquired first). `retryAfterMs` is never null: the registry puts
 * `DEFAULT_RESERVATION_BACKOFF_MS` (5 s) in when the primitive gives no hint (a fixed quota that
 * never refills). A dispatcher reschedules the job after `retryAfterMs` without consuming an
 * attempt; `source` tells which attempt outcome to record (`reservation_denied` or
 * `rate_limit_denied`).
 */
export class ReservationUnavailable extends TaskQError {
  /** Name of the primitive that refused. */
  readonly bucketName: string;
  /** How long to wait before trying again, in milliseconds (>= 0, never null). */
  readonly retryAfterMs: number;
  /** `'reservation'` for a concurrency slot, `'rate_limit'` for a token bucket or sliding window. */
  readonly source: ReservationUnavailableSource;

  constructor(
    bucketName: string,
    retryAfterMs: number,
    options: { source?: ReservationUnavailableSource; cause?: unknown } = {},
  ) {
    if (typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs) || retryAfterMs < 0) {
      throw new InvalidArgumentError(
        'ReservationUnavailable.retryAfterMs',
        retryAfterMs,
        'must be a finite number of milliseconds >= 0 (never null: substitute a default backoff)',
      );
    }
    const source = options.source ?? 'reservation';
    super(
      'TASKQ_RESERVATION_UNAVAILABLE',
      `${source === 'reservation' ? 'no free slot in reservation' : 'rate limit exhausted:'} ${JSON.stringify(bucketName)}; ` +
        `retry in ${Math.ceil(retryAfterMs)} ms`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.bucketName = bucketName;
    this.retryAfterMs = retryAfterMs;
    this.source = source;
  }
}

/**
 * The rate-limit store answered with something no honest write produces (a non-numeric or negative
 * token count, a key of the wrong type). The limiter refuses to guess; inspect the key or row,
 * then `reset()` the bucket.
 */
export class RateLimitStoreCorrupt extends TaskQError {
  /** Name of the primitive whose state is corrupt. */
  readonly bucketName: string;
  /** The store holding the corrupt state. */
  readonly backend: RateLimitBackend;
  /** What was found, for the operator. */
  readonly detail: string;

  constructor(
    bucketName: string,
    backend: RateLimitBackend,
    detail: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      'TASKQ_RATE_LIMIT_STORE_CORRUPT',
      `rate-limit state of ${JSON.stringify(bucketName)} in ${backend} is corrupt (${detail}); ` +
        'inspect it, then reset the bucket (registry.reset(name) or the admin UI)',
      options,
    );
    this.bucketName = bucketName;
    this.backend = backend;
    this.detail = detail;
  }
}

/**
 * The rate-limit store could not be reached and nothing could stand in for it: a Redis connection
 * or timeout error with the Postgres fallback disabled (`pgFallback: false`, i.e.
 * `TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED=false`) or no `driver` to fall back to; or a Postgres row
 * lock that was not won within the lock budget on a refund. The original error is `cause`. A store
 * raises it for an outage, and a `FallbackRateLimitStore` reacts to it.
 */
export class RateLimitStoreUnavailable extends TaskQError {
  /** Name of the primitive. */
  readonly bucketName: string;
  /** The store that failed. */
  readonly backend: RateLimitBackend;
  /** What went wrong, without the store and bucket names. */
  readonly reason: string;

  constructor(
    bucketName: string,
    backend: RateLimitBackend,
    reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      'TASKQ_RATE_LIMIT_STORE_UNAVAILABLE',
      `rate-limit store ${backend} unavailable for ${JSON.stringify(bucketName)}: ${reason}`,
      options,
    );
    this.bucketName = bucketName;
    this.backend = backend;
    this.reason = reason;
  }
}

/**
 * A primitive was used without the store its backend needs: `backend: 'redis'` without `ctx.redis`
 * (or a Redis store), `'postgres'` (or a reservation) without `ctx.driver` (or a shared store),
 * `'memory'` without `ctx.clock`; or a reservation was given a store that holds no slots (Redis).
 * A configuration error, never retried and never covered by the Postgres fallback.
 */
export class RateLimitBackendMissing extends TaskQError {
  /** Name of the primitive. */
  readonly bucketName: string;
  /** The context field that was missing. */
  readonly missing: 'redis' | 'driver' | 'clock';

  constructor(bucketName: string, missing: 'redis' | 'driver' | 'clock', hint: string) {
    super(
      'TASKQ_RATE_LIMIT_BACKEND_MISSING',
      `rate limit ${JSON.stringify(bucketName)} needs ctx.${missing}: ${hint}`,
    );
    this.bucketName = bucketName;
    this.missing = missing;
  }
}

/** A name that is not registered in the registry namespace it was looked up in. */
export class RateLimitNotFound extends TaskQError {
  /** The unknown name (`name` is the error class name). */
  readonly limitName: string;
  /** The namespace searched. */
  readonly namespace: 'rate_limit' | 'reservation';

  constructor(name: string, namespace: 'rate_limit' | 'reservation', hint = '') {
    super(
      'TASKQ_RATE_LIMIT_NOT_FOUND',
      `no ${namespace === 'rate_limit' ? 'rate limit' : 'reservation'} named ${JSON.stringify(name)} is registered` +
        (hint ? `; ${hint}` : '; register it with registry.register(...) before the worker starts'),
    );
    this.limitName = name;
    this.namespace = namespace;
  }
}
