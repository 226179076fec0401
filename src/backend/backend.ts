import type { ReloadableRedisCredentials } from '../credentials/reloadable-redis-credentials.js';
import type {
  DueSchedules,
  NextSlot,
  ScheduleCreateArgs,
  ScheduleFilter,
  ScheduleFireDecision,
  ScheduleFireRecord,
  ScheduleFireResult,
  ScheduleRecord,
  ScheduleSkipResult,
  ScheduleUpdateArgs,
} from './schedule-types.js';
import type { ActivityObservation, ActivityObservationRequest } from './activity-observation.js';
import type { ActorObservation, ActorObservationRequest } from './actor-observation.js';
import type { FleetObservation, FleetObservationRequest } from './fleet-observation.js';
import type { ExplainFactsRequest, JobExplainFacts } from './explain-facts.js';
import type {
  BatchCounts,
  BatchPage,
  BatchRow,
  BatchWrite,
  BatchWriteResult,
  NormalizedBatchFilter,
} from './batch-types.js';
import type { Redis } from 'ioredis';

import type { ClientLike } from '../db/driver.js';
import type { Logger } from '../obs/logger.js';
import type { RateLimitStores } from '../ratelimit/stores/rate-limit-stores.js';
import type { NormalizedJobFilter } from './job-filter.js';
import type {
  ActorCapacityChange,
  ActorConfigRow,
  ArchivedJob,
  AttemptRow,
  DeregisterOptions,
  DeregisterResult,
  BulkCancelResult,
  BulkRetryResult,
  ClaimedJob,
  EnqueueArgs,
  EventRow,
  JobRow,
  LongRunningJobEventsWriter,
  QueueConfigRow,
  QueueMode,
} from './types.js';
import type {
  CancelCause,
  CancelFlag,
  ProgressSnapshot,
  ActorConfigDrift,
  ActorConfigSyncOptions,
  ActorStructure,
  DispatchRequest,
  LeaderFence,
  LeaderLease,
  LeaderSession,
  NotificationHandlers,
  PromotionResult,
  ReclaimResult,
  RetentionPolicy,
  StrandedActor,
  NotificationSubscription,
  Settlement,
  SettleResult,
  SettleWithChildrenResult,
  WorkerRegistration,
} from './worker-types.js';

/**
 * Version of the Backend contract. Bump it when an existing member's observable behaviour changes
 * so that an implementation written against the old contract would silently misbehave.
 */
export const BACKEND_PROTOCOL_VERSION = 2;

/** One page of `list()`. `nextCursor` is null on the last page. */
export interface JobPage {
  jobs: JobRow[];
  nextCursor: string | null;
}

/** What {@link Backend.previewCancelWhere} counts: what `cancelWhere` would change now. */
export interface CancelWhereCounts {
  /** Pending or scheduled jobs matching the filter (they would end `cancelled`). */
  cancelledDirectly: number;
  /** Running jobs matching the filter with no cancel requested yet (they would be flagged). */
  cancelRequested: number;
}

/** What {@link Backend.rateLimitStores} takes besides the backend's own connections. */
export interface RateLimitStoreOptions {
  /** Your ioredis client for Redis-backed limits (never closed). Wins over `redisUrl`. */
  redis?: Redis | null;
  /** `TASKQ_REDIS_URL`: a client built (lazily) and owned by the stores. */
  redisUrl?: string | null;
  /** Authenticates the client built from `redisUrl` with a credential provider (and reloads it). */
  redisCredentials?: ReloadableRedisCredentials | null;
  /** Fall back to Postgres while Redis is unreachable (`TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED`). */
  pgFallback: boolean;
  /** Where the stores' warnings go. */
  logger: Logger;
}

/**
 * The one seam between TaskQ's client/worker and storage. `PostgresBackend` owns every SQL
 * statement; `InMemoryBackend` (from `taskq/testing`) passes the same contract suite for users'
 * own tests. Time predicates are the backend's: Postgres uses its own clock, the in-memory backend
 * its injected `Clock`.
 */
export interface Backend {
  /** Contract version this implementation was written against. */
  readonly protocolVersion: number;
  /** Human-readable kind, for logs. */
  readonly kind: 'postgres' | 'memory';

  /**
   * Inserts one job, applying the enqueue gates in order — `uniqueFor` dedup, singleton,
   * `maxPending`, idempotency — and returns the new row or the existing one it deduplicated to.
   * `maxPending` and `uniqueFor` are checked holding their gate locks (`enqueue-gates.ts`), so they
   * hold exactly under concurrent callers.
   * @throws SingletonCollisionError, MaxPendingExceededError, IdempotencyKeyConflict (the key is
   *   another actor's job), SchemaNotMigratedError
   */
  enqueue(args: EnqueueArgs): Promise<JobRow>;
  /**
   * Same as {@link enqueue} on the caller's connection, which must already be inside the caller's
   * transaction: the job commits or rolls back with it. No BEGIN/COMMIT is issued.
   */
  enqueueWithConn(conn: ClientLike, args: EnqueueArgs): Promise<JobRow>;
  /**
   * Inserts up to 1000 validated jobs and returns one row per item, in order. The gates apply per
   * item as in {@link enqueue} (`resolveBatchGates` in `enqueue-gates.ts`): a `uniqueFor` hit, or
   * an earlier item with the same gate, returns that job; `maxPending` (`existing + items > limit`)
   * refuses the whole batch; an idempotency collision returns the existing row, or refuses the
   * whole batch with `IdempotencyKeyConflict` when the key is another actor's.
   */
  enqueueBatch(args: readonly EnqueueArgs[], options?: { connection?: ClientLike }): Promise<JobRow[]>;
  /**
   * Writes validated jobs for a bulk import (COPY on Postgres) and returns how many: all of them,
   * or none. `maxPending` is checked as in {@link enqueueBatch}. No conflict handling: an
   * idempotency key already stored, or repeated in the batch, refuses the whole batch with
   * `DuplicateIdempotencyKeyError`, and an item with a `uniqueFor` gate with `InvalidArgumentError`. The database clock decides status,
   * run time and deadlines, as for {@link enqueueBatch}. With `connection`, inside the caller's
   * transaction.
   */
  enqueueBatchFast(args: readonly EnqueueArgs[], options?: { connection?: ClientLike }): Promise<number>;

  /** The job, or null. */
  get(jobId: string): Promise<JobRow | null>;
  /**
   * The job holding idempotency key `key` in `scope` (`''` is the default scope), or null: the
   * admin UI's lookup. Jobs pruned from the live table are not found.
   */
  getByIdempotencyKey(key: string, scope: string): Promise<JobRow | null>;
  /** One page of jobs in the filter's keyset order. */
  listJobs(filter: NormalizedJobFilter): Promise<JobPage>;
  /** Pending + scheduled counts of the given actors (absent = 0), in one round trip. */
  countPendingJobs(actors: readonly string[]): Promise<Map<string, number>>;
  /** Pending + scheduled + running jobs on the given queues; an empty list counts 0. */
  countActiveJobs(queues: readonly string[]): Promise<number>;
  /** Stored `actor_config.max_pending` per actor with a row (null = row with no override). */
  getActorMaxPending(): Promise<Map<string, number | null>>;

  /**
   * Requests cancellation: pending/scheduled jobs end `cancelled` at once; a running job is
   * flagged (phase 1) and its worker notified. Returns false when nothing changed (terminal, or
   * already requested).
   */
  writeCancelRequest(jobId: string, reason: string | null): Promise<boolean>;
  /**
   * Set-based cancel of every active job matching the filter (its limit, cursor and ordering are
   * ignored): pending and scheduled jobs end `cancelled`, running ones are flagged and notified. An
   * empty filter matches every job — the client refuses that unless told otherwise.
   */
  cancelWhere(filter: NormalizedJobFilter, reason: string | null): Promise<BulkCancelResult>;
  /**
   * Counts, without changing or locking anything, what {@link cancelWhere} would change for this
   * filter now (the dry run of a bulk cancel).
   */
  previewCancelWhere(filter: NormalizedJobFilter): Promise<CancelWhereCounts>;
  /** Admin retry: a failed, crashed, cancelled or abandoned job goes back to `pending`. */
  retryJob(jobId: string): Promise<boolean>;
  /**
   * Set-based admin retry of every failed, crashed, cancelled or abandoned job matching the filter
   * (its limit, cursor and ordering are ignored), as {@link retryJob} retries one, in one
   * transaction. A singleton job that would join another active job of its actor refuses the whole
   * call (`SingletonCollisionError`) and nothing is retried.
   */
  retryWhere(filter: NormalizedJobFilter): Promise<BulkRetryResult>;
  /** Counts, without changing or locking anything, the jobs {@link retryWhere} would retry now. */
  previewRetryWhere(filter: NormalizedJobFilter): Promise<number>;

  /** Appends an attempt row. */
  writeAttempt(attempt: AttemptRow): Promise<void>;
  /** Attempt rows of a job, oldest first. */
  getAttempts(jobId: string): Promise<AttemptRow[]>;
  /** Event rows of a job, oldest first. */
  getEvents(jobId: string): Promise<EventRow[]>;
  /**
   * A job from the archive (`jobs_archive`, where sweep 5 moves terminal jobs past their
   * retention) with its archived attempts; null when the archive holds no such job (never
   * archived, still in `jobs`, or deleted by sweep 6). Reads only the archive.
   */
  getArchivedJob(jobId: string): Promise<ArchivedJob | null>;

  // --- worker side -------------------------------------------------------------------------

  /**
   * Claims up to `limit` pending jobs of the given actors and queues for one worker (pending →
   * running, attempt + 1, lease set), honouring per-actor `maxConcurrent` (best effort across
   * producers), identity serialisation (strict) and queue modes. Each job comes back as a
   * {@link ClaimedJob} (what running it needs), not the whole row.
   */
  dispatchBatch(request: DispatchRequest): Promise<ClaimedJob[]>;
  /**
   * Renews the leases of the given jobs this worker still owns (storing each handler's latest
   * heartbeat details, JSON text, when given); returns the ids still owned: those renewed, and on
   * Postgres those skipped this once because another transaction held the row (a heartbeat never
   * waits on a row lock). A missing id was reclaimed or finished elsewhere.
   */
  heartbeatJobs(
    workerId: string,
    jobIds: readonly string[],
    leaseMs: number,
    details?: ReadonlyMap<string, string>,
  ): Promise<string[]>;
  /** Running jobs of this worker with a cancel requested (the polling fallback of cancel NOTIFY). */
  pollCancelFlags(workerId: string): Promise<CancelFlag[]>;
  /**
   * Phase 2 of a cancel, written (with its event) before the worker forces anything; false if not at
   * phase 1. With `cause` `'shutdown'` (the worker's FORCING phase) phase 0 qualifies too, and no
   * caller's cancel is recorded (`cancelRequestedAt` stays as it is).
   */
  writeCancelEscalation(jobId: string, workerId: string, cause?: CancelCause): Promise<boolean>;
  /**
   * Phase 3: ends a phase-2 job `abandoned` (attempt row and event included); false if not owned at
   * phase 2. `cause` only changes the recorded message and event reason.
   */
  markAbandoned(
    jobId: string,
    workerId: string,
    progress?: ProgressSnapshot | null,
    cause?: CancelCause,
  ): Promise<boolean>;
  /** Writes coalesced progress of running jobs this worker owns (seq only moves forward); returns rows written. */
  flushProgress(
    workerId: string,
    items: readonly { jobId: string; seq: number; state: Record<string, unknown> }[],
  ): Promise<number>;
  /**
   * Writes the outcomes of attempts, each guarded by ownership (running and locked by the item's
   * worker), with its attempt row and event row in the same transaction. Retry delays and
   * deadlines are decided by the backend's clock.
   */
  settle(items: readonly Settlement[]): Promise<SettleResult[]>;
  /**
   * Puts claimed-but-unstarted jobs back to pending, giving the attempt back (drain at shutdown); a
   * job whose cancel was requested meanwhile ends `cancelled` instead (its attempt given back too).
   * Returns how many jobs it changed.
   */
  repend(workerId: string, jobIds: readonly string[]): Promise<number>;
  /**
   * Records that the handlers of these claimed jobs (claimed into the local queue, see
   * {@link DispatchRequest.startNow}) are about to start; returns the ids this worker still owns.
   * Durable before it resolves: only the returned jobs may start.
   */
  markStarted(workerId: string, jobIds: readonly string[]): Promise<string[]>;
  /** Adds (or refreshes) a worker in the registry. */
  registerWorker(registration: WorkerRegistration): Promise<void>;
  /** Marks a worker alive. */
  touchWorker(workerId: string): Promise<void>;
  /** Removes a worker from the registry. */
  deregisterWorker(workerId: string): Promise<void>;
  /**
   * Creates missing `actor_config` rows and reports structural drift (queue, metadata) of existing
   * ones; with `force`, overwrites the drifted structure. Capacity fields are never touched.
   */
  syncActorConfig(
    actors: readonly ActorStructure[],
    options: ActorConfigSyncOptions,
  ): Promise<ActorConfigDrift[]>;
  /** Stored actor configuration (all actors, or the given ones). */
  getActorConfigs(actors?: readonly string[]): Promise<ActorConfigRow[]>;
  /**
   * Changes an actor's operator-owned capacity (see {@link ActorCapacityChange}); returns the new
   * row, or null when the actor has no row (no worker has registered it yet). Values are validated
   * by the caller.
   */
  setActorCapacity(actor: string, change: ActorCapacityChange): Promise<ActorConfigRow | null>;
  /**
   * Removes an actor's `actor_config` row, in one transaction serialised against the actor's
   * enqueues: refuses (writing nothing) while it has non-terminal jobs or enabled cron schedules;
   * with `force`, cancels its pending and scheduled jobs (as `cancelWhere` does) and disables its
   * schedules, but running jobs still refuse. See {@link DeregisterOptions} for `purgeQueue`.
   * Validates its arguments itself.
   * @throws ActorNotFoundError, ActorHasActiveJobsError, ActorHasEnabledSchedulesError,
   *   InvalidArgumentError
   */
  deregisterActor(actor: string, options?: DeregisterOptions): Promise<DeregisterResult>;
  /** Every configured queue (`queues` rows), by name. */
  listQueues(): Promise<QueueConfigRow[]>;
  /** Sets a queue's dispatch mode, creating its row. */
  setQueueMode(queue: string, mode: QueueMode): Promise<QueueConfigRow>;
  /** Sets (or with null, clears) a queue's fleet-wide cap on running jobs, creating its row. */
  setQueueMaxConcurrent(queue: string, maxConcurrent: number | null): Promise<QueueConfigRow>;
  /**
   * The stores rate limits and reservations keep their state in, beside this backend's own: on
   * Postgres its tables, on its dispatcher pool (lease renewals on its heartbeat pool); in memory, a
   * store on the backend's clock. With `redis` or `redisUrl`, also the Redis store, falling back to
   * the Postgres one while Redis is unreachable. `close()` releases what this built (an owned Redis
   * client), never the backend's pools.
   */
  rateLimitStores(options: RateLimitStoreOptions): RateLimitStores & { close(): Promise<void> };
  /**
   * Checks that the storage is ready for this version of TaskQ before a worker claims anything.
   * @throws SchemaNotMigratedError, SchemaTooNewError
   */
  verifySchema(): Promise<void>;
  /**
   * Subscribes to wake-ups, job-done announcements and (with `workerId`) cancel requests for that
   * worker's jobs.
   */
  subscribe(
    handlers: NotificationHandlers,
    options?: { workerId?: string },
  ): Promise<NotificationSubscription>;

  // --- maintenance (leader) ------------------------------------------------------------------
  //
  // The leader-only sweeps take an optional `fence`, the term of the lease their caller holds. A
  // fenced sweep runs only while that term is the current, unexpired lease, and no takeover happens
  // while it runs; a stale term throws `LeadershipLostError` and writes nothing. Workers always
  // fence; calling a sweep without a fence (tests, tools) runs it unconditionally.

  /**
   * Opens a session competing for the maintenance leadership: a lease of `leaseMs` (default 60 s)
   * on the backend's clock, renewed by each `tryAcquire`, with a term that grows with every change of
   * holder. A holder that stops renewing loses the lease when it expires.
   * @throws InvalidArgumentError when `leaseMs` is not a positive whole number
   */
  openLeaderSession(
    workerId: string,
    hostname: string,
    options?: { leaseMs?: number },
  ): Promise<LeaderSession>;
  /** The maintenance leader's lease as it stands (null before any worker led). */
  getLeaderLease(): Promise<LeaderLease | null>;
  /**
   * Sweep 3: moves up to `limit` due scheduled jobs to pending (backend clock) and wakes producers.
   */
  scheduledToPending(limit?: number, fence?: LeaderFence): Promise<PromotionResult>;
  /**
   * Sweep 1: reclaims running jobs whose lease expired (backend clock): back to pending when attempts
   * remain, else crashed (or cancelled when a cancel was in flight). Jobs with a cancel in flight get
   * `cancelGraceMs + cleanupGraceMs + 60 s` of extra headroom. Writes a `crashed` attempt row and a
   * `lock_expired` event per job.
   */
  reclaimExpiredLocks(
    cancelGraceMs: number,
    cleanupGraceMs: number,
    limit?: number,
    fence?: LeaderFence,
  ): Promise<ReclaimResult>;
  /** Sweep 2: fails pending/scheduled jobs past their deadline with `DeadlineExceeded`; returns the count. */
  deadlineSweep(limit?: number, fence?: LeaderFence): Promise<number>;
  /** Drops stored results past `result_expires_at`; returns the count. */
  sweepExpiredResults(limit?: number, fence?: LeaderFence): Promise<number>;
  /** Removes workers not seen for `olderThanMs`; returns the count. */
  cleanupStaleWorkers(olderThanMs: number, fence?: LeaderFence): Promise<number>;
  /**
   * Refreshes the planner's statistics of `jobs` when they are missing or far out of date (a new
   * table filled in a burst), so claims keep their index plan. Returns whether it analyzed. Workers
   * starting together refresh one at a time: the first analyzes, the others wait for it and find
   * the statistics fresh. Optional: backends without a planner leave it out.
   */
  refreshStatistics?(): Promise<boolean>;
  /**
   * Opens the connections a worker claims and writes outcomes on and plans their statements on
   * each, claiming and writing nothing (`req.limit` is ignored), so that the first burst of work
   * does not pay for it. Optional (the in-memory backend has nothing to warm).
   */
  warmUp?(req: DispatchRequest): Promise<void>;
  /** Actors with pending/scheduled jobs and no `actor_config` row. */
  strandedActors(): Promise<StrandedActor[]>;
  /** Sweep 5, one batch: moves up to `batchSize` expired terminal jobs (and their attempts) to the archive. */
  pruneJobs(
    retention: RetentionPolicy,
    batchSize: number,
    fence?: LeaderFence,
  ): Promise<{ archived: number; attempts: number }>;
  /** Sweep 6, one batch: deletes up to `batchSize` archived jobs past their expiry; returns the count. */
  expireArchive(batchSize: number, fence?: LeaderFence): Promise<number>;
  /**
   * The crash-reclaim feed: `lock_expired` events with id > `afterId`, ascending, older than the
   * visibility delay (a trailing watermark; see docs/maintenance.md).
   */
  pollReclaimEvents(
    afterId: string,
    options?: { limit?: number; visibilityDelayMs?: number },
  ): Promise<EventRow[]>;

  /**
   * Transactions that have held `job_events` open for longer than `marginMs` — the situation in
   * which the reclaim feed's visibility delay could be too short (a proxy signal for
   * `watchReclaims`). Optional: backends without concurrent writers leave it out.
   */
  checkReclaimVisibilityDelayRisk?(marginMs: number): Promise<LongRunningJobEventsWriter[]>;

  /**
   * One round trip to the storage, for the worker's readiness probe: resolves when it answers,
   * rejects with the storage's error when it does not. Postgres runs `SELECT 1` on the dispatcher
   * pool, so a pool with no free connection is as not-ready as a server that is down. It has no
   * timeout of its own: the caller bounds it (`healthPgPingTimeout`). The in-memory backend answers
   * until it is closed.
   */
  ping(): Promise<void>;

  /**
   * Creates a cron schedule; its first slot is `nextSlot` of the backend's clock (the database's).
   * @throws ScheduleExistsError when `(actor, name)` has one; nothing is written
   */
  createSchedule(args: ScheduleCreateArgs, nextSlot: NextSlot): Promise<ScheduleRecord>;
  /**
   * Creates each schedule whose `(actor, name)` has none and leaves existing ones untouched
   * (declarations in code); returns each stored row and whether this call created it.
   */
  ensureSchedules(
    list: readonly ScheduleCreateArgs[],
    nextSlot: NextSlot,
  ): Promise<{ record: ScheduleRecord; created: boolean }[]>;
  getSchedule(id: string): Promise<ScheduleRecord | null>;
  listSchedules(filter?: ScheduleFilter): Promise<ScheduleRecord[]>;
  /**
   * Changes a schedule (absent fields stay); a new expression's next slot is `nextSlot` of the
   * backend's clock in the stored zone; enabling clears the failure count and last error, and
   * re-anchors a schedule whose slot passed while it was disabled (those slots never fire). Null
   * when there is no such schedule.
   */
  updateSchedule(id: string, change: ScheduleUpdateArgs, nextSlot: NextSlot): Promise<ScheduleRecord | null>;
  /**
   * Moves a schedule past its next slot without firing it (no job, no fire recorded): its next
   * slot becomes `slotAfter(<the skipped slot>, schedule)`. With `expected`, only when the stored
   * next slot is still that instant (a second click on the same page skips nothing more). Null
   * when there is no such schedule; `skipped` is null when nothing was skipped (no next slot, or
   * not at `expected`).
   */
  skipScheduleFire(id: string, slotAfter: NextSlot, expected?: Date): Promise<ScheduleSkipResult | null>;
  /** Deletes a schedule and its fire history; false when there was none. */
  deleteSchedule(id: string): Promise<boolean>;
  /** The most recent fires of a schedule, newest first (at most `CRON_FIRE_HISTORY` are kept). */
  listScheduleFires(id: string, limit: number): Promise<ScheduleFireRecord[]>;
  /** Enabled schedules whose next slot is due on the backend's clock, oldest first, with that clock's reading. */
  dueSchedules(limit: number): Promise<DueSchedules>;
  /**
   * Writes the leader's fire decisions atomically (behind `fence` when given): each decision whose
   * schedule is still at `expectedNextFireAt` inserts its jobs, records its slots and moves the
   * schedule on; a failure (the decision's, or a gate refusing a job) is counted instead, and the
   * schedule is disabled when the count reaches `autoDisableThreshold`.
   * @throws LeadershipLostError when the fence's term is no longer current
   */
  fireSchedules(
    decisions: readonly ScheduleFireDecision[],
    options: { autoDisableThreshold: number },
    fence?: LeaderFence,
  ): Promise<ScheduleFireResult[]>;

  /**
   * One snapshot of the queues (live jobs by status, oldest pending age, alive workers), the
   * reservations (slots and held slots, keyed ones summed by base name) and the live leaders, for
   * the fleet gauges. One round trip on Postgres. See {@link FleetObservation}.
   */
  observeFleet(request: FleetObservationRequest): Promise<FleetObservation>;

  /**
   * Every actor with an `actor_config` row, by name: its pending, scheduled and running jobs and
   * the alive workers serving its queue (see {@link ActorObservation}), for the admin UI's actors
   * page. One round trip on Postgres, whose cost follows the actors' live jobs (read index-only),
   * never the finished ones.
   * @throws InvalidArgumentError for a malformed request (nothing is read)
   */
  observeActors(request: ActorObservationRequest): Promise<ActorObservation[]>;

  /**
   * Every registered worker (alive or not, with its age on the database clock) and the jobs that
   * finished within a recent window per queue and outcome, counting at most the newest
   * `maxCounted` (see {@link ActivityObservation}), for the admin UI's overview. One round trip on
   * Postgres.
   * @throws InvalidArgumentError for a malformed request (nothing is read)
   */
  observeActivity(request: ActivityObservationRequest): Promise<ActivityObservation>;

  /**
   * The raw facts about one job that say what holds it back (`tq.explain`): the job, its actor's
   * and queue's configuration, the workers serving its queue, the running jobs of its actor and
   * queue, the holder of its identity key, the jobs ahead of it, its latest attempt and the
   * leader's liveness — read together, on the backend's clock, locking nothing. One round trip on
   * Postgres. Null when there is no such job. The client decides what the facts mean.
   * @throws InvalidArgumentError for a malformed request (nothing is read)
   */
  explainJob(request: ExplainFactsRequest): Promise<JobExplainFacts | null>;

  // --- batches ---------------------------------------------------------------------------------
  //
  // A batch created with a failure policy or a finalizer has a `batches` row. Its children count
  // toward it: the backend changes the row's counters (by status, the failure streak) in the same
  // transaction as every status change of a child, whichever operation makes it, aborts the batch
  // at its threshold (cancelling its pending and scheduled children in that transaction) and
  // completes a sealed batch when its last child ends.

  /**
   * Writes a batch atomically (in the caller's transaction with `connection`): with `create`, the
   * finalizer job and the row first; then the children, through the same gates as
   * {@link enqueueBatch}, each new job counting toward the batch; then, with `seal`, the seal (a
   * sealed batch whose children are all terminal completes at once).
   * @throws BatchNotOpenError (a later chunk for a missing or sealed batch), BatchAbortedError
   *   (children for a batch its policy aborted: they would run for a batch that is over), and what
   *   {@link enqueueBatch} throws; nothing is written on failure
   */
  writeBatch(write: BatchWrite, options?: { connection?: ClientLike }): Promise<BatchWriteResult>;
  /** The batch's row, or null (no such batch, or a batch without a row). */
  getBatch(batchId: string): Promise<BatchRow | null>;
  /** One page of batch rows, newest first. */
  listBatches(filter: NormalizedBatchFilter): Promise<BatchPage>;
  /**
   * A batch's row (null without one) and its children by status, in one round trip: from the row's
   * counters, or, for a batch without a row, counted from the jobs by `metadata.batch_id` with
   * `excludeJobId` left out.
   */
  batchCounts(
    batchId: string,
    excludeJobId?: string | null,
  ): Promise<{ batch: BatchRow | null; counts: BatchCounts }>;
  /**
   * The safety net (leader): completes up to `limit` active sealed batches with no child left that
   * is not terminal; returns their ids.
   */
  completeStaleBatches(limit?: number, fence?: LeaderFence): Promise<string[]>;
  /**
   * Deletes up to `limit` batch rows that finished more than `olderThanMs` ago and have no child
   * left in the jobs table (run after job pruning); returns how many.
   */
  pruneBatches(olderThanMs: number, limit?: number, fence?: LeaderFence): Promise<number>;

  /** Releases what the backend owns. */
  close(): Promise<void>;

  // --- sub-jobs ---

  /**
   * Writes one attempt's outcome together with the jobs its handler enqueued through `ctx.jobs`, in
   * one transaction: the same ownership-guarded write as {@link settle} for `item`, then `children`
   * through the code path of {@link enqueueBatch} (every gate applies, in any number of chunks of
   * 1,000), then the commit, then the announcements {@link settle} makes. The children exist if
   * and only if the write committed. When this worker no longer owns the job nothing is written,
   * children included (`noop`). A gate refusing a child (`MaxPendingExceededError`,
   * `SingletonCollisionError`, `IdempotencyKeyConflict`) throws, and nothing is written.
   */
  settleWithChildren(item: Settlement, children: readonly EnqueueArgs[]): Promise<SettleWithChildrenResult>;
}
