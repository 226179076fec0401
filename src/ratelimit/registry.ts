import { SystemClock, type Clock } from '../core/clock.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { WaitTimeoutError } from '../errors/job-errors.js';
import { silentLogger, type Logger } from '../obs/logger.js';
import type { Schema } from '../core/schema-validation.js';
import { ConcurrencyReservation } from './concurrency-reservation.js';
import { RateLimitNotFound, ReservationUnavailable } from './errors.js';
import { RateLimitHandle, ReservationHandle, type AcquiredResource } from './handles.js';
import {
  isKeyedRateLimitRef,
  isKeyedReservationRef,
  type KeyedRateLimitRef,
  type KeyedReservationRef,
} from './keyed-refs.js';
import { checkKeyedRateLimitConfig, checkKeyedReservationConfig, keyedConcreteName } from './keyed-names.js';
import { KeyedTracker } from './keyed-tracker.js';
import {
  ACTOR_ACQUIRE_REQUEST_KEYS,
  type ActorAcquireRequest,
  type ActorLimitEntry,
  type RateLimitPrimitive,
} from './acquire-request.js';
import { publishBucket, sweepIdleKeyedRows, type SweepIdleKeyedResult } from './maintenance.js';
import { QUEUE_CONCURRENCY_PREFIX, checkNumber, checkUuid, isReservedName } from './names.js';
import { SlidingWindow } from './sliding-window.js';
import { checkRateLimitContext, hasSharedStore, sharedStoreOrNull } from './stores/context-stores.js';
import { TokenBucket } from './token-bucket.js';
import {
  DEFAULT_MAX_KEYED_RATE_LIMITS,
  DEFAULT_MAX_KEYED_RESERVATIONS,
  DEFAULT_REDIS_KEY_PREFIX,
  DEFAULT_RESERVATION_BACKOFF_MS,
  KEYED_IDLE_THRESHOLD_MS,
  type RateLimitContext,
  type RateLimitDecision,
  type RateLimitState,
} from './types.js';

export type { ActorAcquireRequest, ActorLimitEntry, RateLimitPrimitive } from './acquire-request.js';

/** Options of {@link RateLimitRegistry}. */
export interface RateLimitRegistryOptions {
  /** Prefix of every Redis key this registry's primitives use. Default `'taskq:rl:'`. */
  redisKeyPrefix?: string;
  /** Cap on materialised keyed reservations (`TASKQ_MAX_KEYED_RESERVATIONS`). Default 10 000. */
  maxKeyedReservations?: number;
  /** Cap on materialised keyed rate limits (`TASKQ_MAX_KEYED_RATE_LIMITS`). Default 10 000. */
  maxKeyedRateLimits?: number;
  /** Idle time after which opportunistic eviction (at a full cap) drops a keyed entry. Default 1 h. */
  keyedIdleThreshold?: Duration;
  /** Clock of the idle bookkeeping (its `monotonic()`). Default the system clock. */
  clock?: Clock;
  /** Where registry events go (conflicts, cap hits, rollback failures). Default silent. */
  logger?: Logger;
}

/**
 * The keys of {@link RateLimitRegistryOptions}: any other is refused (a misspelt cap kept the
 * default of 10 000).
 */
const REGISTRY_OPTION_KEYS: readonly string[] = [
  'redisKeyPrefix',
  'maxKeyedReservations',
  'maxKeyedRateLimits',
  'keyedIdleThreshold',
  'clock',
  'logger',
];

/** The keys of the options of `peekAll` and `reset`. */
const TIMEOUT_OPTION_KEYS: readonly string[] = ['timeout'];

/** How often a keyed Redis bucket's published row gets its `last_used_at` refreshed. */
const KEYED_TOUCH_INTERVAL_MS = 600_000;

/**
 * Holds the rate limits and reservations of a process and composes them per job.
 *
 * Two namespaces (a rate limit and a reservation may share a name). Registration is idempotent for
 * an identical configuration and refuses a conflicting one. Keyed refs materialise one primitive
 * per key on first use, bounded by independent caps and evicted when idle.
 */
export class RateLimitRegistry {
  private readonly rateLimitMap = new Map<string, RateLimitPrimitive>();
  private readonly reservationMap = new Map<string, ConcurrencyReservation>();
  private readonly keyedRateLimits: KeyedTracker;
  private readonly keyedReservations: KeyedTracker;
  private readonly keyedRateLimitPublishedAt = new Map<string, number>();
  private readonly releaseWaiters = new Map<string, Set<() => void>>();

  /** Redis key prefix passed to every primitive call. */
  readonly redisKeyPrefix: string;
  /** Cap on keyed reservations. */
  readonly maxKeyedReservations: number;
  /** Cap on keyed rate limits. */
  readonly maxKeyedRateLimits: number;
  /** Idle threshold of opportunistic eviction, ms. */
  readonly keyedIdleThresholdMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(options: RateLimitRegistryOptions = {}) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('RateLimitRegistry.options', options, 'must be an object');
    checkKnownKeys(
      options,
      REGISTRY_OPTION_KEYS,
      'RateLimitRegistry.options',
      'an option of RateLimitRegistry',
    );
    this.redisKeyPrefix = options.redisKeyPrefix ?? DEFAULT_REDIS_KEY_PREFIX;
    this.maxKeyedReservations = checkNumber(
      options.maxKeyedReservations ?? DEFAULT_MAX_KEYED_RESERVATIONS,
      'maxKeyedReservations',
      { min: 1, integer: true },
    );
    this.maxKeyedRateLimits = checkNumber(
      options.maxKeyedRateLimits ?? DEFAULT_MAX_KEYED_RATE_LIMITS,
      'maxKeyedRateLimits',
      { min: 1, integer: true },
    );
    this.keyedIdleThresholdMs = toMs(
      options.keyedIdleThreshold ?? KEYED_IDLE_THRESHOLD_MS,
      'keyedIdleThreshold',
    );
    this.clock = options.clock ?? new SystemClock();
    this.logger = options.logger ?? silentLogger;
    this.keyedRateLimits = new KeyedTracker(this.clock, this.maxKeyedRateLimits);
    this.keyedReservations = new KeyedTracker(this.clock, this.maxKeyedReservations);
  }

  // ---------------------------------------------------------------- registration

  /**
   * Registers a primitive. Same name and identical configuration again: a no-op. Same name with a
   * different configuration, or a name in the reserved `taskq:global:queue:` namespace:
   * `InvalidArgumentError`.
   */
  register(primitive: TokenBucket | SlidingWindow | ConcurrencyReservation): void {
    if (!(
      primitive instanceof TokenBucket ||
      primitive instanceof SlidingWindow ||
      primitive instanceof ConcurrencyReservation
    )) {
      throw new InvalidArgumentError(
        'primitive',
        primitive,
        'must be a TokenBucket, SlidingWindow or ConcurrencyReservation',
      );
    }
    if (isReservedName(primitive.name)) {
      throw new InvalidArgumentError(
        'primitive.name',
        primitive.name,
        `starts with the reserved prefix ${JSON.stringify(QUEUE_CONCURRENCY_PREFIX)}; queue caps are registered with registerQueueCapReservation()`,
      );
    }
    if (primitive instanceof ConcurrencyReservation) this.registerReservation(primitive);
    else this.registerRateLimit(primitive);
  }

  /**
   * Registers a fleet-wide queue cap (the only way into the reserved namespace). The name must be
   * `queueConcurrencyReservationName(queue)`.
   */
  registerQueueCapReservation(reservation: ConcurrencyReservation): void {
    if (!(reservation instanceof ConcurrencyReservation) || !isReservedName(reservation.name)) {
      throw new InvalidArgumentError(
        'reservation.name',
        (reservation as { name?: unknown })?.name,
        `must start with ${JSON.stringify(QUEUE_CONCURRENCY_PREFIX)} (use queueConcurrencyReservationName(queue))`,
      );
    }
    this.registerReservation(reservation);
  }

  private registerRateLimit(primitive: RateLimitPrimitive): void {
    const existing = this.rateLimitMap.get(primitive.name);
    if (existing) {
      if (existing === primitive || existing.sameConfig(primitive)) {
        // A static claim over a keyed materialisation pins it: never evicted again.
        this.keyedRateLimits.forget(primitive.name);
        this.keyedRateLimitPublishedAt.delete(primitive.name);
        return;
      }
      throw new InvalidArgumentError(
        'primitive',
        primitive.name,
        `a rate limit named ${JSON.stringify(primitive.name)} is already registered with a different configuration`,
      );
    }
    this.rateLimitMap.set(primitive.name, primitive);
  }

  private registerReservation(reservation: ConcurrencyReservation): void {
    const existing = this.reservationMap.get(reservation.name);
    if (existing) {
      if (existing === reservation || existing.sameConfig(reservation)) {
        this.keyedReservations.forget(reservation.name);
        return;
      }
      throw new InvalidArgumentError(
        'primitive',
        reservation.name,
        `a reservation named ${JSON.stringify(reservation.name)} is already registered with a different configuration`,
      );
    }
    if (reservation.leaseShorterThanLockLease()) {
      this.logger.warn(
        { bucketName: reservation.name, leaseMs: reservation.leaseMs, lockLeaseMs: reservation.lockLeaseMs },
        'reservation-lease-shorter-than-lock-lease',
      );
    }
    this.reservationMap.set(reservation.name, reservation);
  }

  /** The rate limit named `name`. @throws RateLimitNotFound */
  getRateLimit(name: string): RateLimitPrimitive {
    const p = this.rateLimitMap.get(name);
    if (!p) throw new RateLimitNotFound(name, 'rate_limit');
    return p;
  }

  /** The reservation named `name`. @throws RateLimitNotFound */
  getReservation(name: string): ConcurrencyReservation {
    const r = this.reservationMap.get(name);
    if (!r) throw new RateLimitNotFound(name, 'reservation');
    return r;
  }

  /** O(1) membership, no copy (hot path). */
  hasRateLimit(name: string): boolean {
    return this.rateLimitMap.has(name);
  }

  /** O(1) membership, no copy (hot path: the dispatch queue-cap check). */
  hasReservation(name: string): boolean {
    return this.reservationMap.has(name);
  }

  /** A copy of the registered rate limits. */
  get rateLimits(): ReadonlyMap<string, RateLimitPrimitive> {
    return new Map(this.rateLimitMap);
  }

  /** A copy of the registered reservations. */
  get reservations(): ReadonlyMap<string, ConcurrencyReservation> {
    return new Map(this.reservationMap);
  }

  /** Whether `name` is a keyed-materialised rate limit (metrics aggregate these: unbounded names). */
  isKeyedRateLimit(name: string): boolean {
    return this.keyedRateLimits.has(name);
  }

  /** Whether `name` is a keyed-materialised reservation. */
  isKeyedReservation(name: string): boolean {
    return this.keyedReservations.has(name);
  }

  /** Materialised keyed rate limits tracked now. */
  get keyedRateLimitCount(): number {
    return this.keyedRateLimits.size;
  }

  /** Materialised keyed reservations tracked now. */
  get keyedReservationCount(): number {
    return this.keyedReservations.size;
  }

  // ---------------------------------------------------------------- acquisition

  /** The caller's context (checked here: it comes from outside) with the registry's logger and key prefix. */
  private withDefaults(ctx: RateLimitContext, field: string): RateLimitContext {
    checkRateLimitContext(ctx, field);
    return {
      ...ctx,
      logger: ctx.logger ?? this.logger,
      redisKeyPrefix: ctx.redisKeyPrefix ?? this.redisKeyPrefix,
    };
  }

  /**
   * One admission of the rate limit `name`, for code outside job dispatch (an HTTP handler sharing
   * a budget with actors). Returns the decision; the caller checks `allowed`. Nothing is refunded.
   * @throws RateLimitNotFound, InvalidArgumentError (a reservation name)
   */
  async acquire(name: string, ctx: RateLimitContext, count = 1): Promise<RateLimitDecision> {
    const c = this.withDefaults(ctx, 'RateLimitRegistry.acquire.ctx');
    const p = this.rateLimitMap.get(name);
    if (!p) {
      if (this.reservationMap.has(name)) {
        throw new InvalidArgumentError(
          'name',
          name,
          'is a ConcurrencyReservation; registry.acquire() is for rate limits (reservations need a job: acquireForActor)',
        );
      }
      throw new RateLimitNotFound(name, 'rate_limit');
    }
    return p.kind === 'token_bucket' ? p.acquire(c, count) : p.acquire(c);
  }

  /**
   * AND-composition for one job: every reservation (in order), then one token of every rate limit
   * (in order). On any denial or error, everything already acquired is given back in reverse order
   * (each failure logged, `ratelimit-rollback-failure`), then the error is rethrown — a denial as
   * `ReservationUnavailable` with a non-null `retryAfterMs` (5 s when the primitive gives none),
   * logged as `composition-denied` at `request.denialLogLevel` (info by default).
   * Keyed refs are resolved first (payload validated by the ref's schema → `PayloadValidationError`),
   * so a bad payload acquires nothing.
   */
  async acquireForActor(request: ActorAcquireRequest, ctx: RateLimitContext): Promise<AcquiredResource[]> {
    if (request === null || typeof request !== 'object')
      throw new InvalidArgumentError(
        'RateLimitRegistry.acquireForActor.request',
        request,
        'must be an object',
      );
    // Per job on the worker's path: the check that allocates nothing.
    checkKnownKeys(
      request,
      ACTOR_ACQUIRE_REQUEST_KEYS,
      'RateLimitRegistry.acquireForActor.request',
      'a field of an ActorAcquireRequest',
    );
    const c = this.withDefaults(ctx, 'RateLimitRegistry.acquireForActor.ctx');
    const jobId = checkUuid(request.jobId, 'jobId');
    const workerId = checkUuid(request.workerId, 'workerId');
    const logLevel = request.denialLogLevel === 'debug' ? 'debug' : 'info';
    const validated = new Map<Schema<unknown>, Promise<unknown>>();
    const reservations: ConcurrencyReservation[] = [];
    for (const entry of request.reservations ?? []) {
      reservations.push(await this.resolveReservation(entry, request, validated, c));
    }
    const rateLimits: RateLimitPrimitive[] = [];
    for (const entry of request.rateLimits ?? []) {
      rateLimits.push(await this.resolveRateLimit(entry, request, validated));
    }

    const acquired: AcquiredResource[] = [];
    try {
      for (const res of reservations) {
        let attempt = await res.tryAcquire(jobId, workerId, c);
        if (!attempt.ok && this.keyedReservations.has(res.name) && attempt.totalRows < res.slots) {
          // The leader sweep reclaimed this idle key's rows while this process still had it
          // registered: re-create them and try once more.
          await res.ensureSlots(c);
          attempt = await res.tryAcquire(jobId, workerId, c);
        }
        if (!attempt.ok) {
          c.logger?.[logLevel](
            { jobId, failedBucket: res.name, source: 'reservation', retryAfterMs: attempt.retryAfterMs },
            'composition-denied',
          );
          throw new ReservationUnavailable(res.name, attempt.retryAfterMs, { source: 'reservation' });
        }
        acquired.push(new ReservationHandle(res, attempt.lease, c));
        this.keyedReservations.touch(res.name);
      }
      for (const rl of rateLimits) {
        const d = rl.kind === 'token_bucket' ? await rl.acquire(c, 1) : await rl.acquire(c);
        if (!d.allowed) {
          // Never a truthiness test: 0 ms is a valid delay.
          const retry = d.retryAfterMs === null ? DEFAULT_RESERVATION_BACKOFF_MS : d.retryAfterMs;
          c.logger?.[logLevel](
            { jobId, failedBucket: rl.name, source: 'rate_limit', retryAfterMs: retry },
            'composition-denied',
          );
          throw new ReservationUnavailable(rl.name, retry, { source: 'rate_limit' });
        }
        acquired.push(new RateLimitHandle(rl, d, c));
        await this.touchKeyedRateLimit(rl, c);
      }
      return acquired;
    } catch (err) {
      await this.rollback(acquired, c);
      throw err;
    }
  }

  private async rollback(acquired: readonly AcquiredResource[], ctx: RateLimitContext): Promise<void> {
    for (const handle of [...acquired].reverse()) {
      try {
        if (handle.kind === 'reservation') {
          await handle.release();
          this.notifyRelease(handle.name);
        } else {
          await handle.refund();
        }
      } catch (err) {
        ctx.logger?.error(
          {
            handleName: handle.name,
            operation: handle.kind === 'reservation' ? 'release' : 'refund',
            err: (err as Error).message,
            acquiredCount: acquired.length,
          },
          'ratelimit-rollback-failure',
        );
      }
    }
  }

  /**
   * After the job's handler ran: frees the reservation slots in reverse order (fenced: a zombie
   * attempt frees nothing). Rate-limit tokens stay spent. A failure is logged
   * (`ratelimit-release-failure`) and the loop continues.
   */
  async releaseForActor(acquired: readonly AcquiredResource[]): Promise<void> {
    for (const handle of [...acquired].reverse()) {
      if (handle.kind !== 'reservation') continue;
      try {
        await handle.release();
        this.notifyRelease(handle.name);
      } catch (err) {
        this.logger.error(
          { handleName: handle.name, operation: 'release', err: (err as Error).message },
          'ratelimit-release-failure',
        );
      }
    }
  }

  /**
   * Resolves when this process releases a slot of reservation `name`, or after `timeoutMs` (a wake
   * signal for a bounded local retry after a denial, never a token; releases by other processes
   * are not seen, hence the timeout). Resolves `true` on a release.
   */
  waitForRelease(name: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      let set = this.releaseWaiters.get(name);
      if (!set) {
        set = new Set();
        this.releaseWaiters.set(name, set);
      }
      const waiters = set;
      const done = (released: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        waiters.delete(wake);
        if (waiters.size === 0 && this.releaseWaiters.get(name) === waiters) this.releaseWaiters.delete(name);
        resolve(released);
      };
      const wake = (): void => done(true);
      const onAbort = (): void => done(false);
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      waiters.add(wake);
      if (signal?.aborted) done(false);
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private notifyRelease(name: string): void {
    const set = this.releaseWaiters.get(name);
    if (!set) return;
    for (const wake of [...set]) wake();
  }

  // ---------------------------------------------------------------- keyed resolution

  private async resolveRateLimit(
    entry: ActorLimitEntry,
    request: ActorAcquireRequest,
    cache: Map<Schema<unknown>, Promise<unknown>>,
  ): Promise<RateLimitPrimitive> {
    if (typeof entry === 'string') return this.getRateLimit(entry);
    if (entry instanceof TokenBucket || entry instanceof SlidingWindow) {
      const p = this.rateLimitMap.get(entry.name);
      if (!p) {
        throw new RateLimitNotFound(
          entry.name,
          'rate_limit',
          'actor-declared instances are registered by collectActorPrimitives() at worker startup',
        );
      }
      return p;
    }
    if (isKeyedRateLimitRef(entry))
      return this.materialiseRateLimit(entry, await keyedConcreteName(entry, request, cache));
    throw new InvalidArgumentError(
      'rateLimits[]',
      entry,
      'must be a rate-limit name, a TokenBucket / SlidingWindow or a keyedRateLimit() ref',
    );
  }

  private async resolveReservation(
    entry: ActorLimitEntry,
    request: ActorAcquireRequest,
    cache: Map<Schema<unknown>, Promise<unknown>>,
    ctx: RateLimitContext,
  ): Promise<ConcurrencyReservation> {
    if (typeof entry === 'string') return this.getReservation(entry);
    if (entry instanceof ConcurrencyReservation) {
      const r = this.reservationMap.get(entry.name);
      if (!r) {
        throw new RateLimitNotFound(
          entry.name,
          'reservation',
          'actor-declared instances are registered by collectActorPrimitives() at worker startup',
        );
      }
      return r;
    }
    if (isKeyedReservationRef(entry)) {
      return this.materialiseReservation(entry, await keyedConcreteName(entry, request, cache), ctx);
    }
    throw new InvalidArgumentError(
      'reservations[]',
      entry,
      'must be a reservation name, a ConcurrencyReservation or a keyedReservation() ref',
    );
  }

  private materialiseRateLimit(ref: KeyedRateLimitRef, name: string): RateLimitPrimitive {
    const existing = this.rateLimitMap.get(name);
    if (existing) {
      if (this.keyedRateLimits.has(name)) checkKeyedRateLimitConfig(existing, ref, name);
      return existing; // a static registration of the concrete name is reused as-is
    }
    if (!this.keyedRateLimits.makeRoom(() => this.evictIdleKeyedRateLimits(this.keyedIdleThresholdMs))) {
      this.logger.warn(
        { bucketName: name, cap: this.maxKeyedRateLimits },
        'registry-keyed-rate-limit-limit-exceeded',
      );
      throw new ReservationUnavailable(name, DEFAULT_RESERVATION_BACKOFF_MS, { source: 'rate_limit' });
    }
    const bucket = new TokenBucket(name, {
      capacity: ref.capacity,
      refillPerSecond: ref.refillPerSecond,
      backend: ref.backend,
      keyed: true,
    });
    this.rateLimitMap.set(name, bucket);
    this.keyedRateLimits.track(name);
    return bucket;
  }

  private async materialiseReservation(
    ref: KeyedReservationRef,
    name: string,
    ctx: RateLimitContext,
  ): Promise<ConcurrencyReservation> {
    const existing = this.reservationMap.get(name);
    if (existing) {
      if (this.keyedReservations.has(name)) checkKeyedReservationConfig(existing, ref, name);
      return existing;
    }
    if (!this.keyedReservations.makeRoom(() => this.evictIdleKeyedReservations(this.keyedIdleThresholdMs))) {
      this.logger.warn(
        { bucketName: name, cap: this.maxKeyedReservations },
        'registry-keyed-reservation-limit-exceeded',
      );
      throw new ReservationUnavailable(name, DEFAULT_RESERVATION_BACKOFF_MS, { source: 'reservation' });
    }
    const res = new ConcurrencyReservation(name, {
      slots: ref.slots,
      lease: ref.leaseMs,
      keyed: true,
      ...(ref.clock ? { clock: ref.clock } : {}),
    });
    await res.ensureSlots(ctx);
    const raced = this.reservationMap.get(name);
    if (raced) {
      if (this.keyedReservations.has(name)) checkKeyedReservationConfig(raced, ref, name);
      return raced;
    }
    this.reservationMap.set(name, res);
    this.keyedReservations.track(name);
    return res;
  }

  private async touchKeyedRateLimit(primitive: RateLimitPrimitive, ctx: RateLimitContext): Promise<void> {
    const name = primitive.name;
    if (!this.keyedRateLimits.touch(name)) return;
    const now = this.clock.monotonic();
    if (primitive.backend === 'memory' || !hasSharedStore(ctx)) return;
    // Postgres-backed buckets refresh last_used_at with every acquire; a Redis-backed one's row is
    // published on first use and re-touched now and then, so the leader sweep sees it in use.
    const published = this.keyedRateLimitPublishedAt.get(name);
    if (
      published !== undefined &&
      (primitive.backend === 'postgres' || now - published < KEYED_TOUCH_INTERVAL_MS)
    )
      return;
    this.keyedRateLimitPublishedAt.set(name, now);
    try {
      await publishBucket(primitive, true, ctx);
    } catch (err) {
      this.keyedRateLimitPublishedAt.delete(name);
      ctx.logger?.warn({ bucketName: name, err: (err as Error).message }, 'ratelimit-publish-failed');
    }
  }

  // ---------------------------------------------------------------- peek / reset

  /** State of the rate limit `name`. @throws RateLimitNotFound, InvalidArgumentError (a reservation name) */
  async peek(name: string, ctx: RateLimitContext): Promise<RateLimitState> {
    const c = this.withDefaults(ctx, 'RateLimitRegistry.peek.ctx');
    const p = this.rateLimitMap.get(name);
    if (!p) {
      if (this.reservationMap.has(name))
        throw new InvalidArgumentError(
          'name',
          name,
          'is a ConcurrencyReservation; use getReservation(name).peek(ctx)',
        );
      throw new RateLimitNotFound(name, 'rate_limit');
    }
    return p.peek(c);
  }

  /**
   * State of every registered rate limit. One round trip per bucket; a bucket whose read fails is
   * logged (`ratelimit-peek-failed`) and left out. `timeout` bounds the whole pass
   * (`WaitTimeoutError`).
   */
  async peekAll(
    ctx: RateLimitContext,
    options: { timeout?: Duration } = {},
  ): Promise<Map<string, RateLimitState>> {
    const c = this.withDefaults(ctx, 'RateLimitRegistry.peekAll.ctx');
    const timeoutMs = checkTimeoutOptions(
      options,
      'RateLimitRegistry.peekAll.options',
      'an option of peekAll',
    );
    const pass = async (): Promise<Map<string, RateLimitState>> => {
      const out = new Map<string, RateLimitState>();
      for (const [name, p] of [...this.rateLimitMap]) {
        try {
          out.set(name, await p.peek(c));
        } catch (err) {
          c.logger?.warn({ bucketName: name, err: (err as Error).message }, 'ratelimit-peek-failed');
        }
      }
      return out;
    };
    return withTimeout(pass(), timeoutMs, 'peekAll');
  }

  /**
   * Refills the rate limit `name` at once (admin action; logs warning `ratelimit-reset`).
   * `timeout` bounds the store round trip (`WaitTimeoutError`).
   */
  async reset(name: string, ctx: RateLimitContext, options: { timeout?: Duration } = {}): Promise<void> {
    const c = this.withDefaults(ctx, 'RateLimitRegistry.reset.ctx');
    const timeoutMs = checkTimeoutOptions(options, 'RateLimitRegistry.reset.options', 'an option of reset');
    const p = this.rateLimitMap.get(name);
    if (!p) {
      if (this.reservationMap.has(name))
        throw new InvalidArgumentError(
          'name',
          name,
          'is a ConcurrencyReservation; reservations have no reset',
        );
      throw new RateLimitNotFound(name, 'rate_limit');
    }
    await withTimeout(p.reset(c), timeoutMs, `reset of ${name}`);
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Drops keyed rate limits not acquired for `idleForMs` (process bookkeeping only: Redis keys
   * expire by TTL, Postgres rows are reclaimed by the leader's `sweepIdleKeyedRows`). A memory
   * fixed quota that has spent tokens is kept (eviction would refill it). Returns how many.
   */
  evictIdleKeyedRateLimits(idleForMs: number): number {
    checkNumber(idleForMs, 'idleForMs', { allowZero: true });
    let evicted = 0;
    for (const name of this.keyedRateLimits.idle(idleForMs)) {
      if (this.rateLimitMap.get(name)?.holdsConsumedQuota()) continue;
      this.rateLimitMap.delete(name);
      this.keyedRateLimits.forget(name);
      this.keyedRateLimitPublishedAt.delete(name);
      evicted++;
    }
    if (evicted > 0) this.logger.debug({ evicted }, 'registry-evicted-idle-keyed-rate-limits');
    return evicted;
  }

  /**
   * Drops keyed reservations not acquired for `idleForMs` (bookkeeping only; slot rows are
   * reclaimed by the leader's `sweepIdleKeyedRows`). An in-memory reservation with a live holder
   * is kept. Returns how many.
   */
  evictIdleKeyedReservations(idleForMs: number): number {
    checkNumber(idleForMs, 'idleForMs', { allowZero: true });
    let evicted = 0;
    for (const name of this.keyedReservations.idle(idleForMs)) {
      if (this.reservationMap.get(name)?.hasLiveHolders()) continue;
      this.reservationMap.delete(name);
      this.keyedReservations.forget(name);
      evicted++;
    }
    if (evicted > 0) this.logger.debug({ evicted }, 'registry-evicted-idle-keyed-reservations');
    return evicted;
  }

  /**
   * Heartbeat: renews to now + `leaseMs` every reservation slot `workerId` holds — one operation on
   * the context's shared store (`ctx.stores.shared`, or Postgres on `ctx.driver`: one statement for
   * the schema's rows), plus the reservations with an own memory store. Returns how many slots were
   * renewed.
   */
  async extendReservationLeases(workerId: string, leaseMs: number, ctx: RateLimitContext): Promise<number> {
    checkRateLimitContext(ctx, 'RateLimitRegistry.extendReservationLeases.ctx');
    const worker = checkUuid(workerId, 'workerId');
    const ms = checkNumber(leaseMs, 'leaseMs');
    let n = 0;
    for (const r of this.reservationMap.values()) {
      if (r.backend === 'memory') n += await r.extendLeases(worker, ctx, ms);
    }
    const shared = sharedStoreOrNull(ctx);
    if (shared) n += await shared.extendSlotLeases(worker, ms, null);
    return n;
  }

  /** Leader sweep of idle keyed state in the shared store; see {@link sweepIdleKeyedRows}. */
  async sweepIdleKeyedRows(idleForMs: number, ctx: RateLimitContext): Promise<SweepIdleKeyedResult> {
    return sweepIdleKeyedRows(idleForMs, this.withDefaults(ctx, 'RateLimitRegistry.sweepIdleKeyedRows.ctx'));
  }

  /** Test aid: forgets everything (never touches Redis or Postgres). Not safe while a worker runs. */
  clear(): void {
    this.rateLimitMap.clear();
    this.reservationMap.clear();
    this.keyedRateLimits.clear();
    this.keyedReservations.clear();
    this.keyedRateLimitPublishedAt.clear();
  }
}

/**
 * The `timeout` of `peekAll` / `reset` in ms (null: none), checked before the work starts: a bad
 * value or a misspelt key must not leave a reset done but reported as refused.
 */
function checkTimeoutOptions(options: { timeout?: Duration }, field: string, what: string): number | null {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(field, options, 'must be an object');
  checkKnownKeys(options, TIMEOUT_OPTION_KEYS, field, what);
  return options.timeout === undefined ? null : toMs(options.timeout, `${field}.timeout`);
}

async function withTimeout<T>(work: Promise<T>, ms: number | null, what: string): Promise<T> {
  if (ms === null) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(what, ms)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
