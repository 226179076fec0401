import type { AnyActor } from '../core/actor.js';
import type { Clock } from '../core/clock.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { MissingProvider } from '../errors/missing-provider-error.js';
import { TaskQError } from '../errors/taskq-error.js';
import type { Logger } from '../obs/logger.js';
import { collectActorPrimitives, missingNames, syncRateLimitBuckets } from '../ratelimit/actor-limits.js';
import { ConcurrencyReservation, syncSlots } from '../ratelimit/concurrency-reservation.js';
import type { AcquiredResource } from '../ratelimit/handles.js';
import { ReservationUnavailable } from '../ratelimit/errors.js';
import { isKeyedRateLimitRef, isKeyedReservationRef } from '../ratelimit/keyed-refs.js';
import { queueConcurrencyReservationName } from '../ratelimit/names.js';
import type { ActorLimitEntry, RateLimitRegistry } from '../ratelimit/registry.js';
import type { RateLimitStores } from '../ratelimit/stores/rate-limit-stores.js';
import { KEYED_IDLE_THRESHOLD_MS, type RateLimitContext } from '../ratelimit/types.js';
import type { WorkerSettings } from '../settings/worker-settings.js';
import { BucketTurns } from './bucket-turns.js';
import { interruptibleSleep } from './sleep.js';

/** A queue with a fleet-wide cap on running jobs (`queues.max_concurrent`). */
export interface QueueCap {
  queue: string;
  maxConcurrent: number;
}

/** What the gate needs from the worker. */
export interface RateLimitGateOptions {
  /** Where the actors' names resolve; the gate registers the declared instances and queue caps in it. */
  registry: RateLimitRegistry;
  /** The worker's actors, by name. */
  actors: ReadonlyMap<string, AnyActor>;
  /** The worker's id (a UUID): the holder of its reservation slots. */
  workerId: string;
  /** The worker's settings (`schema`, `lockLeaseMs` for slot leases and queue caps). */
  settings: WorkerSettings;
  /**
   * Where the state lives (see `rateLimitStoresFor`): `shared` for acquisitions, releases, slot
   * sync and the leader sweep; `leases` for the heartbeat's renewals; `redis` for Redis-backed
   * limits (opened at start when an actor needs it; null: declaring one is a startup error).
   */
  stores: RateLimitStores;
  /** `close()` also closes `stores` (they were built for this gate alone). Default false. */
  closeStores?: boolean;
  /** Clock of memory-backed primitives. */
  clock: Clock;
  /** The worker's logger (the gate logs as `component: 'ratelimit'`). */
  logger: Logger;
}

/**
 * The waits of a reservation denial's local retry, one per retry (then the job is rescheduled):
 * a quarter of a second in all, which a parked job spends holding its concurrency slot. Without
 * it, a denied job went back to the queue for up to a second (`RESERVATION_DENIAL_MAX_DELAY_MS`)
 * even when the slot it wanted was about to be freed by a job of the same worker: with a keyed
 * reservation of 10 keys × 1 slot at c=10, in 2 alternating pairs of `npm run bench -- --only
 * taskq-features` runs, no-op jobs ran at 385 / 375 jobs/s without it and 492 / 521 with it.
 */
export const LOCAL_RETRY_WAITS_MS: readonly number[] = [25, 75, 150];

/**
 * How long after its first rate-limit denial a job may wait in its worker for the limit to admit
 * it, holding its concurrency slot, before it is rescheduled; a denial whose hint reaches past it
 * reschedules the job at once. Without it, every denial of a binding limit was written (a
 * `rate_limit_denied` attempt, an event, the job rescheduled) and the job claimed again: a Redis
 * token bucket of 500/s with a burst of 50 at c=10 was denied 2,733 times for 3,000 admissions.
 */
export const RATE_LIMIT_LOCAL_WAIT_MS = 250;

const usesRedis = (entry: ActorLimitEntry): boolean =>
  isKeyedRateLimitRef(entry)
    ? entry.backend === 'redis'
    : typeof entry === 'object' && entry !== null && 'backend' in entry && entry.backend === 'redis';

/**
 * The worker's side of `taskq/ratelimit`. At startup it registers the actors' declared primitives,
 * refuses to start on names nothing provides ({@link MissingProvider}), registers and slot-syncs
 * the queue caps, and publishes the buckets for the admin UI. Per job it acquires the queue cap,
 * the actor's reservations and then its rate limits (the registry rolls back on a denial), and
 * releases the slots once the handler has settled; tokens stay spent. The heartbeat renews the
 * slot leases; a 30-second loop evicts idle keyed entries, and the leader reclaims idle keyed rows.
 */
export class RateLimitGate {
  private readonly registry: RateLimitRegistry;
  private readonly ctx: RateLimitContext;
  private readonly heartbeatCtx: RateLimitContext;
  private readonly capped = new Set<string>();
  private readonly logger: Logger;
  /** This worker's jobs waiting out a rate limit's denial, in turns per limit. */
  private readonly turns = new BucketTurns();

  constructor(private readonly options: RateLimitGateOptions) {
    this.registry = options.registry;
    this.logger = options.logger.child({ component: 'ratelimit' });
    const stores = options.stores;
    this.ctx = { stores, clock: options.clock, logger: this.logger };
    this.heartbeatCtx = { ...this.ctx, stores: { ...stores, shared: stores.leases ?? stores.shared } };
  }

  /** True when some actor declares a limit or a queue cap applies (otherwise the gate is skipped). */
  static wanted(actors: Iterable<AnyActor>, caps: readonly QueueCap[]): boolean {
    if (caps.length > 0) return true;
    for (const a of actors) if (a.rateLimits.length > 0 || a.reservations.length > 0) return true;
    return false;
  }

  /**
   * Startup, before any claim: register, check names, register and sync queue caps (a failed sync
   * stops the start; it is idempotent on the next one), publish buckets, connect Redis if needed.
   */
  async start(caps: readonly QueueCap[]): Promise<void> {
    const actors = [...this.options.actors.values()];
    collectActorPrimitives(actors, this.registry);
    const missing = missingNames(actors, this.registry);
    if (missing.length > 0) throw new MissingProvider(missing);
    for (const { queue, maxConcurrent } of caps) {
      const name = queueConcurrencyReservationName(queue);
      // A queue cap's slots live in the shared store: Postgres, or memory on the in-memory backend.
      this.registry.registerQueueCapReservation(
        new ConcurrencyReservation(name, { slots: maxConcurrent, lease: this.options.settings.lockLeaseMs }),
      );
      this.capped.add(queue);
    }
    const shared = [...this.registry.reservations.values()].filter((r) => r.backend !== 'memory');
    let synced: Awaited<ReturnType<typeof syncSlots>>;
    try {
      synced = await syncSlots(shared, { store: this.options.stores.shared });
    } catch (err) {
      // The worker must not run with slots it could not create (the cap would not hold), and
      // the store's error alone does not say which reservations were being synced.
      const names = shared.map((r) => r.name).join(', ');
      throw new TaskQError(
        'TASKQ_RESERVATION_SYNC_FAILED',
        `the worker did not start: syncing the slots of reservations [${names}] in schema ` +
          `${this.options.settings.schema} failed: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    if (synced.skippedHeld.length > 0) this.logger.warn({ ...synced }, 'reservation-sync-skipped-held-slots');
    await this.openRedis(actors);
    await syncRateLimitBuckets(this.registry, this.ctx);
    this.logger.info(
      {
        rateLimits: this.registry.rateLimits.size,
        reservations: this.registry.reservations.size,
        queueCaps: caps,
      },
      'ratelimit-gate-ready',
    );
  }

  /** Opens the Redis store when a Redis-backed limit is declared (an outage then is not fatal). */
  private async openRedis(actors: readonly AnyActor[]): Promise<void> {
    const needsRedis =
      [...this.registry.rateLimits.values()].some((p) => p.backend === 'redis') ||
      actors.some((a) => a.rateLimits.some(usesRedis));
    if (!needsRedis) return;
    const redis = this.options.stores.redis;
    if (!redis) {
      throw new InvalidArgumentError(
        'redisUrl',
        null,
        'a Redis-backed rate limit is declared: set TASKQ_REDIS_URL (or pass a redis client), or declare the limit with backend "postgres"',
      );
    }
    await redis.open?.();
  }

  /** True when this job has anything to acquire. */
  applies(queue: string, actor: AnyActor): boolean {
    return this.capped.has(queue) || actor.rateLimits.length > 0 || actor.reservations.length > 0;
  }

  /**
   * Acquires the queue cap, the actor's reservations, then its rate limits. A denial is waited out
   * here first, within bounds, rather than rescheduling the job at once:
   * - a reservation's, a few times within {@link LOCAL_RETRY_WAITS_MS}: each wait ends early when
   *   this process releases a slot of that reservation (`RateLimitRegistry.waitForRelease`), so a
   *   job whose slot a live job of this worker holds starts the moment that slot is freed. Releases
   *   by other processes are not seen; the wait's bound covers them.
   * - a rate limit's, when the limit's hint falls within {@link RATE_LIMIT_LOCAL_WAIT_MS} of the
   *   job's first rate-limit denial: the job queues behind this worker's other jobs waiting on that
   *   limit and, at the head, sleeps out the hint and tries again ({@link waitOutRateLimit}).
   * `abort` (the job's cancel and shutdown flag) ends the waiting, with no further try. Throws
   * `ReservationUnavailable` on the denial that ends it (nothing stays held; logged as
   * `composition-denied` at info, the denials waited out before it at debug),
   * `PayloadValidationError` when a keyed ref's key cannot be derived, or a store error.
   */
  async acquire(
    job: { id: string; queue: string; payload: unknown },
    actor: AnyActor,
    abort?: { readonly aborted: boolean; readonly signal: AbortSignal },
  ): Promise<AcquiredResource[]> {
    let reservationRetries = 0;
    let deadline: number | null = null;
    let attempt = (): Promise<AcquiredResource[]> => this.acquireOnce(job, actor);
    for (;;) {
      let err: unknown;
      try {
        return await attempt();
      } catch (e) {
        err = e;
      }
      if (!(err instanceof ReservationUnavailable)) throw err;
      if (abort?.aborted) throw this.deniedFor(job, err);
      if (err.source === 'reservation') {
        const wait = LOCAL_RETRY_WAITS_MS[reservationRetries++];
        if (wait === undefined) throw this.deniedFor(job, err);
        await this.registry.waitForRelease(err.bucketName, Math.min(wait, err.retryAfterMs), abort?.signal);
        // Cancelled or shutting down while parked: no further try (it could start the handler).
        if (abort?.aborted) throw this.deniedFor(job, err);
        attempt = () => this.acquireOnce(job, actor);
      } else {
        const now = performance.now();
        const until = (deadline ??= now + RATE_LIMIT_LOCAL_WAIT_MS);
        if (now + err.retryAfterMs > until) throw this.deniedFor(job, err);
        const denial = err;
        attempt = () => this.waitOutRateLimit(denial, now, until, job, actor, abort);
      }
    }
  }

  /**
   * A rate limit's denial (`denial`, given at `deniedAt`), waited out in this worker: the job takes
   * its turn on that limit ({@link BucketTurns}), sleeps until the hint has passed and tries again,
   * keeping the turn while the same limit denies it with a hint that ends before `until`. One probe
   * at a time per limit: a token that comes back admits the head, and the jobs behind wait for
   * their turn instead of all probing at once. Returns what the try acquired, or throws the denial
   * that ends the wait (`until` reached, aborted, or another primitive denied: the caller decides).
   */
  private async waitOutRateLimit(
    denial: ReservationUnavailable,
    deniedAt: number,
    until: number,
    job: { id: string; queue: string; payload: unknown },
    actor: AnyActor,
    abort?: { readonly aborted: boolean; readonly signal: AbortSignal },
  ): Promise<AcquiredResource[]> {
    const end = await this.turns.take(denial.bucketName, until, abort?.signal);
    if (!end) throw denial;
    try {
      let last = denial;
      let notBefore = deniedAt + denial.retryAfterMs;
      for (;;) {
        const wait = notBefore - performance.now();
        if (wait > 0) await interruptibleSleep(wait, abort?.signal).promise;
        if (abort?.aborted) throw last;
        try {
          return await this.acquireOnce(job, actor);
        } catch (err) {
          if (
            !(err instanceof ReservationUnavailable) ||
            err.source !== 'rate_limit' ||
            err.bucketName !== denial.bucketName
          )
            throw err;
          const now = performance.now();
          if (now + err.retryAfterMs > until) throw err;
          last = err;
          notBefore = now + err.retryAfterMs;
        }
      }
    } finally {
      end();
    }
  }

  /**
   * The denial that ends a job's acquisition, logged (`composition-denied`, info). The tries before
   * it, which the gate may still wait out, log theirs at debug: a binding limit denies a probe or
   * two per admitted job.
   */
  private deniedFor(job: { id: string }, err: ReservationUnavailable): ReservationUnavailable {
    this.logger.info(
      { jobId: job.id, failedBucket: err.bucketName, source: err.source, retryAfterMs: err.retryAfterMs },
      'composition-denied',
    );
    return err;
  }

  private acquireOnce(
    job: { id: string; queue: string; payload: unknown },
    actor: AnyActor,
  ): Promise<AcquiredResource[]> {
    const reservations: readonly ActorLimitEntry[] = this.capped.has(job.queue)
      ? [queueConcurrencyReservationName(job.queue), ...actor.reservations]
      : actor.reservations;
    return this.registry.acquireForActor(
      {
        rateLimits: actor.rateLimits as readonly ActorLimitEntry[],
        reservations,
        jobId: job.id,
        workerId: this.options.workerId,
        payload: job.payload,
        actor: actor.name,
        denialLogLevel: 'debug',
      },
      this.ctx,
    );
  }

  /**
   * True when a denial by `bucketName` holds for every job of `actor` on `queue`: the queue's cap,
   * or a primitive the actor declares by name or instance. A keyed limit denies one key only.
   */
  deniesActorWide(queue: string, actor: AnyActor, bucketName: string): boolean {
    if (this.capped.has(queue) && bucketName === queueConcurrencyReservationName(queue)) return true;
    const entries = [...actor.rateLimits, ...actor.reservations] as readonly ActorLimitEntry[];
    return entries.some((e) => {
      if (isKeyedRateLimitRef(e) || isKeyedReservationRef(e)) return false;
      return (typeof e === 'string' ? e : e.name) === bucketName;
    });
  }

  /** After the handler: frees the slots (tokens stay spent). Never throws. */
  async release(held: readonly AcquiredResource[]): Promise<void> {
    if (held.length === 0) return;
    await this.registry.releaseForActor(held);
  }

  /** Heartbeat: renews every slot this worker holds. Failures are logged; the lease then decides. */
  async extendLeases(): Promise<void> {
    try {
      await this.registry.extendReservationLeases(
        this.options.workerId,
        this.options.settings.lockLeaseMs,
        this.heartbeatCtx,
      );
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'reservation-lease-renewal-failed');
    }
  }

  /** Every worker, every 30 s: forget keyed primitives idle for an hour (they re-materialise). */
  evictIdle(): number {
    return (
      this.registry.evictIdleKeyedRateLimits(KEYED_IDLE_THRESHOLD_MS) +
      this.registry.evictIdleKeyedReservations(KEYED_IDLE_THRESHOLD_MS)
    );
  }

  /** Leader: deletes keyed state idle for an hour fleet-wide from the shared store. */
  async sweepFleet(): Promise<void> {
    const r = await this.registry.sweepIdleKeyedRows(KEYED_IDLE_THRESHOLD_MS, this.ctx);
    this.logger.debug({ ...r }, 'ratelimit-keyed-rows-swept');
  }

  /** Closes the stores when they were built for this gate (`closeStores`); else nothing. */
  async close(): Promise<void> {
    if (this.options.closeStores) await this.options.stores.close?.();
  }
}
