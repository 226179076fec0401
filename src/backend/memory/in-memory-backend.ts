import type { ActivityObservation, ActivityObservationRequest } from '../activity-observation.js';
import type {
  BatchCounts,
  BatchPage,
  BatchRow,
  BatchWrite,
  BatchWriteResult,
  NormalizedBatchFilter,
} from '../batch-types.js';
import { MemorySchedules } from './memory-schedules.js';
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
} from '../schedule-types.js';
import type { FleetObservation, FleetObservationRequest } from '../fleet-observation.js';
import type { ActorObservation, ActorObservationRequest } from '../actor-observation.js';
import type { ExplainFactsRequest, JobExplainFacts } from '../explain-facts.js';

import type { Clock } from '../../core/clock.js';
import { SystemClock } from '../../core/clock.js';
import type { ClientLike } from '../../db/driver.js';
import { TaskQStateError } from '../../errors/client-errors.js';
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import { checkKnownKeys } from '../../core/closest-name.js';
import { rateLimitStoresFor, type RateLimitStores } from '../../ratelimit/stores/rate-limit-stores.js';
import {
  BACKEND_PROTOCOL_VERSION,
  type Backend,
  type CancelWhereCounts,
  type JobPage,
  type RateLimitStoreOptions,
} from '../backend.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import { ACTIVE_STATUSES } from '../state-machine.js';
import type {
  ActorCapacityChange,
  ActorConfigRow,
  ArchivedJob,
  AttemptRow,
  BulkCancelResult,
  BulkRetryResult,
  EnqueueArgs,
  EventKind,
  EventRow,
  JobRow,
} from '../types.js';
import type { DeregisterOptions, DeregisterResult, QueueConfigRow, QueueMode } from '../types.js';
import type {
  ActorConfigDrift,
  ActorConfigSyncOptions,
  ActorStructure,
  CancelCause,
  CancelFlag,
  DispatchRequest,
  LeaderFence,
  LeaderLease,
  LeaderSession,
  ProgressSnapshot,
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
} from '../worker-types.js';
import { MemoryTransaction, transactionOf } from './memory-transaction.js';
import * as maintenance from './memory-maintenance.js';
import { MemoryLeaderLease } from './memory-leader-lease.js';
import { DEFAULT_LEADER_LEASE_MS } from '../leader-lease.js';
import * as dispatch from './memory-dispatch.js';
import type { MemoryState } from './memory-state.js';
import { MemoryBatches } from './memory-batches.js';
import * as cancelProgress from './memory-cancel-progress.js';
import * as leases from './memory-leases.js';
import * as operatorConfig from './memory-operator-config.js';
import * as listing from './memory-listing.js';
import { assertKeysFree, assertNoRepeatedKey } from '../repeated-key.js';
import { checkEventIdCursor } from '../cursor.js';
import { findByKey, gateAndBuild, gateBatch, MemoryGateLocks } from './memory-enqueue.js';
import { assertNoUniqueGate, gateLockNames, needsGateLock } from '../enqueue-gates.js';
import { announcedIds } from '../announcements.js';
import { MemoryRateLimitStore } from '../../ratelimit/stores/memory/memory-rate-limit-store.js';
import { observeFleet } from './memory-fleet-observation.js';
import { observeActivity } from './memory-activity-observation.js';
import { observeActors } from './memory-actor-observation.js';
import { explainJob } from './memory-explain.js';
import { deregisterInMemory } from './memory-actor-deregistration.js';

/** Options of {@link InMemoryBackend}. */
export interface InMemoryBackendOptions {
  /** Time source for every time predicate. Default: the system clock. */
  clock?: Clock;
}

/** The keys of {@link InMemoryBackendOptions}: a misspelt `clock` must not leave tests on the system clock. */
const IN_MEMORY_BACKEND_OPTION_KEYS: readonly string[] = ['clock'];

const clone = <T>(v: T): T => structuredClone(v);

/**
 * The whole Backend contract in process memory, for users' own tests (with a `FakeClock` they
 * control). It passes the same contract suite as the Postgres backend. Single-threaded by design:
 * do not share one instance between worker threads.
 */
export class InMemoryBackend implements Backend {
  readonly protocolVersion = BACKEND_PROTOCOL_VERSION;
  readonly kind = 'memory' as const;
  readonly clock: Clock;
  private readonly jobs = new Map<string, JobRow>();
  private readonly schedules = new MemorySchedules({
    now: () => this.clock.now(),
    jobs: () => [...this.jobs.values()],
    insert: (rows) => {
      for (const r of rows) this.jobs.set(r.id, r);
      if (rows.length > 0) this.emitWake();
    },
  });
  /** Set by `close()`: `ping()` then fails, as a closed pool would. */
  private closed = false;
  private attempts: AttemptRow[] = [];
  private events: EventRow[] = [];
  private nextEventId = 1;
  /** Stored actor configuration (`actor_config` rows). */
  readonly actorConfig = new Map<string, ActorConfigRow>();
  private readonly txRows = new WeakMap<MemoryTransaction, JobRow[]>();
  /** Gate locks of maxPending and uniqueFor enqueues (see enqueue-gates.ts). */
  private readonly gateLocks = new MemoryGateLocks();
  /** The `queues` rows: dispatch mode (absent = strict FIFO) and fleet-wide cap per queue. */
  private readonly queues = new Map<string, QueueConfigRow>();
  /** Dispatch mode per queue, read by dispatch (kept in step with {@link setQueueMode}). */
  private readonly queueModes = new Map<string, QueueMode>();
  /** The worker registry (`workers` rows). */
  readonly workers = new Map<string, WorkerRegistration & { startedAt: Date; lastSeenAt: Date }>();
  private readonly subscribers = new Set<{ handlers: NotificationHandlers; workerId: string | null }>();
  /** `jobs_archive` rows (pruned terminal jobs). */
  readonly archive = new Map<string, JobRow & { archivedAt: Date; expireAt: Date }>();
  /** `job_attempts_archive` rows. */
  readonly archivedAttempts: AttemptRow[] = [];
  private readonly maintenanceState: MemoryState = {
    clock: this.clockRef(),
    jobs: this.jobs,
    attempts: () => this.attempts,
    setAttempts: (rows) => {
      this.attempts = rows;
    },
    events: () => this.events,
    setEvents: (rows) => {
      this.events = rows;
    },
    archive: this.archive,
    archivedAttempts: this.archivedAttempts,
    actorConfig: this.actorConfig,
    queues: this.queues,
    queueModes: this.queueModes,
    workers: this.workers,
    event: (jobId, kind, detail) => this.event(jobId, kind, detail),
    emitWake: () => this.emitWake(),
    emitDone: (ids) => this.emitDone(ids),
    emitCancel: (jobId, owner) =>
      this.emit((sub) =>
        sub.workerId === owner.toLowerCase() ? sub.handlers.onCancel?.(jobId, owner) : undefined,
      ),
    emitProgress: (ids) => this.emit((sub) => sub.handlers.onProgress?.(announcedIds(ids))),
    statusChanged: (changes) => this.batches.statusChanged(changes),
  };
  /** The `batches` rows and their accounting (the trigger's in-memory twin). */
  private readonly batches = new MemoryBatches({
    state: this.maintenanceState,
    gateLocks: this.gateLocks,
    txRows: this.txRows,
  });

  /**
   * The fleet-wide rate-limit state (the `reservation_slots` and `rate_limit_buckets` of Postgres):
   * one store that every {@link rateLimitStores} call shares, so that the workers of one backend
   * contend for the same slots and {@link observeFleet} sees them.
   */
  private readonly sharedRateLimits: MemoryRateLimitStore;

  constructor(options: InMemoryBackendOptions = {}) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('InMemoryBackend.options', options, 'must be an object ({ clock })');
    checkKnownKeys(
      options,
      IN_MEMORY_BACKEND_OPTION_KEYS,
      'InMemoryBackend',
      'an option of new InMemoryBackend()',
    );
    const { clock } = options;
    if (
      clock !== undefined &&
      (clock === null || typeof clock !== 'object' || typeof clock.now !== 'function')
    )
      throw new InvalidArgumentError('InMemoryBackend.clock', clock, 'must be a Clock (e.g. a FakeClock)');
    this.clock = options.clock ?? new SystemClock();
    this.sharedRateLimits = new MemoryRateLimitStore({ clock: this.clock });
  }

  private clockRef(): Clock {
    // Field initialisers run before the constructor body: read the clock lazily.
    return { now: () => this.clock.now(), monotonic: () => this.clock.monotonic() };
  }

  /**
   * Forgets every job, attempt, event, stored configuration, worker, the leader lease, the
   * rate-limit and reservation state and the cron schedules (between tests). Subscriptions stay.
   */
  clear(): void {
    this.jobs.clear();
    this.attempts = [];
    this.events = [];
    this.actorConfig.clear();
    this.queueModes.clear();
    this.queues.clear();
    this.workers.clear();
    this.archive.clear();
    this.archivedAttempts.length = 0;
    this.leaderLease.clear();
    this.sharedRateLimits.clear();
    this.schedules.clear();
    this.batches.clear();
  }

  /** Starts a simulated transaction for `enqueueWithConn` (commit/rollback like a real one). */
  beginTransaction(): MemoryTransaction {
    return new MemoryTransaction();
  }

  private event(jobId: string, kind: EventKind, detail: Record<string, unknown>): void {
    this.events.push({
      eventId: String(this.nextEventId++),
      jobId,
      occurredAt: this.clock.now(),
      kind,
      detail,
    });
  }

  private visibleJobs(extra: readonly JobRow[]): JobRow[] {
    return extra.length > 0 ? [...this.jobs.values(), ...extra] : [...this.jobs.values()];
  }

  async enqueue(args: EnqueueArgs): Promise<JobRow> {
    // A maxPending or uniqueFor gate is checked holding its gate lock (see enqueue-gates.ts).
    const release = needsGateLock(args)
      ? await this.gateLocks.acquire(gateLockNames([args]), undefined)
      : undefined;
    try {
      const out = gateAndBuild(args, [...this.jobs.values()], this.clock.now());
      if ('existing' in out) return clone(out.existing);
      this.jobs.set(out.insert.id, out.insert);
      this.emitWake();
      return clone(out.insert);
    } finally {
      release?.();
    }
  }

  async enqueueWithConn(caller: ClientLike, args: EnqueueArgs): Promise<JobRow> {
    const conn = transactionOf(caller, 'enqueueWithConn')!;
    // Held until the transaction ends, as the advisory lock is on Postgres.
    if (needsGateLock(args)) await this.gateLocks.acquire(gateLockNames([args]), conn);
    const buffered = this.txRows.get(conn) ?? [];
    const out = gateAndBuild(args, this.visibleJobs(buffered), this.clock.now());
    if ('existing' in out) return clone(out.existing);
    const row = out.insert;
    buffered.push(row);
    this.txRows.set(conn, buffered);
    conn.defer(() => {
      // A row committed meanwhile under the same key wins, as the unique index would decide.
      if (
        row.idempotencyKey !== null &&
        findByKey(this.jobs.values(), row.idempotencyScope, row.idempotencyKey)
      )
        return;
      this.jobs.set(row.id, row);
    });
    return clone(row);
  }

  async enqueueBatch(
    list: readonly EnqueueArgs[],
    options: { connection?: ClientLike } = {},
  ): Promise<JobRow[]> {
    const tx = transactionOf(options.connection, 'enqueueBatch');
    const names = gateLockNames(list);
    const release = names.length > 0 ? await this.gateLocks.acquire(names, tx) : undefined;
    try {
      const base = this.visibleJobs(tx ? (this.txRows.get(tx) ?? []) : []);
      const { rows, staged } = gateBatch(list, base, this.clock.now());
      if (tx) {
        this.txRows.set(tx, [...(this.txRows.get(tx) ?? []), ...staged]);
        tx.defer(() => {
          for (const r of staged) this.jobs.set(r.id, r);
          if (staged.length > 0) this.emitWake();
        });
      } else {
        for (const r of staged) this.jobs.set(r.id, r);
        if (staged.length > 0) this.emitWake();
      }
      return rows.map(clone);
    } finally {
      release?.();
    }
  }

  async enqueueBatchFast(
    list: readonly EnqueueArgs[],
    options: { connection?: ClientLike } = {},
  ): Promise<number> {
    // Postgres's unique index refuses a repeated or stored key; checked here before writing, after
    // which no key is taken and the batch insert writes every item.
    assertNoRepeatedKey(list);
    assertNoUniqueGate(list);
    const tx = transactionOf(options.connection, 'enqueueBatchFast');
    const visible = this.visibleJobs(tx ? (this.txRows.get(tx) ?? []) : []);
    assertKeysFree(list, (scope, key) => findByKey(visible, scope, key) !== undefined);
    await this.enqueueBatch(list, options);
    return list.length;
  }

  async get(jobId: string): Promise<JobRow | null> {
    const r = this.jobs.get(jobId.toLowerCase());
    return r ? clone(r) : null;
  }

  async getByIdempotencyKey(key: string, scope: string): Promise<JobRow | null> {
    for (const r of this.jobs.values())
      if (r.idempotencyKey === key && r.idempotencyScope === scope) return clone(r);
    return null;
  }

  async listJobs(filter: NormalizedJobFilter): Promise<JobPage> {
    return listing.listJobs(this.jobs.values(), filter);
  }

  async countPendingJobs(actors: readonly string[]): Promise<Map<string, number>> {
    const wanted = new Set(actors);
    const out = new Map<string, number>();
    for (const r of this.jobs.values()) {
      if (wanted.has(r.actor) && (r.status === 'pending' || r.status === 'scheduled'))
        out.set(r.actor, (out.get(r.actor) ?? 0) + 1);
    }
    return out;
  }

  async countActiveJobs(queues: readonly string[]): Promise<number> {
    const wanted = new Set(queues);
    let n = 0;
    for (const r of this.jobs.values()) if (wanted.has(r.queue) && ACTIVE_STATUSES.has(r.status)) n++;
    return n;
  }

  async getActorMaxPending(): Promise<Map<string, number | null>> {
    return new Map([...this.actorConfig.values()].map((c) => [c.actor, c.maxPending]));
  }

  async writeCancelRequest(jobId: string, reason: string | null): Promise<boolean> {
    return cancelProgress.writeCancelRequest(this.maintenanceState, jobId, reason);
  }

  async cancelWhere(filter: NormalizedJobFilter, reason: string | null): Promise<BulkCancelResult> {
    return cancelProgress.cancelWhere(this.maintenanceState, filter, reason);
  }

  async previewCancelWhere(filter: NormalizedJobFilter): Promise<CancelWhereCounts> {
    return cancelProgress.previewCancelWhere(this.maintenanceState, filter);
  }

  async retryJob(jobId: string): Promise<boolean> {
    return cancelProgress.retryJob(this.maintenanceState, jobId);
  }

  async retryWhere(filter: NormalizedJobFilter): Promise<BulkRetryResult> {
    return cancelProgress.retryWhere(this.maintenanceState, filter);
  }

  async previewRetryWhere(filter: NormalizedJobFilter): Promise<number> {
    return cancelProgress.previewRetryWhere(this.maintenanceState, filter);
  }

  async writeAttempt(a: AttemptRow): Promise<void> {
    if (!this.jobs.has(a.jobId)) throw new Error(`job ${a.jobId} does not exist (foreign key)`);
    this.attempts.push(clone(a));
  }

  async getAttempts(jobId: string): Promise<AttemptRow[]> {
    return this.attempts.filter((a) => a.jobId === jobId).map(clone);
  }

  async getEvents(jobId: string): Promise<EventRow[]> {
    return this.events.filter((e) => e.jobId === jobId).map(clone);
  }

  async getArchivedJob(jobId: string): Promise<ArchivedJob | null> {
    const row = this.archive.get(jobId);
    if (!row) return null;
    const { archivedAt, expireAt, ...job } = clone(row);
    return {
      job,
      archivedAt,
      expireAt,
      attempts: this.archivedAttempts.filter((a) => a.jobId === jobId).map(clone),
    };
  }

  // --- worker side -------------------------------------------------------------------------

  private emit(fn: (sub: { handlers: NotificationHandlers; workerId: string | null }) => void): void {
    for (const sub of [...this.subscribers]) {
      try {
        fn(sub);
      } catch {
        // A subscriber's callback failing must not break the write that notified it.
      }
    }
  }

  private emitWake(): void {
    this.emit((sub) => sub.handlers.onWake?.());
  }

  private emitDone(ids: readonly string[]): void {
    this.emit((sub) => sub.handlers.onDone?.(announcedIds(ids)));
  }

  async dispatchBatch(req: DispatchRequest): Promise<JobRow[]> {
    return dispatch.dispatchBatch(this.maintenanceState, req);
  }

  async settle(items: readonly Settlement[]): Promise<SettleResult[]> {
    return dispatch.settle(this.maintenanceState, items);
  }

  async pollCancelFlags(workerId: string): Promise<CancelFlag[]> {
    return cancelProgress.pollCancelFlags(this.maintenanceState, workerId);
  }

  async writeCancelEscalation(
    jobId: string,
    workerId: string,
    cause: CancelCause = 'cancel',
  ): Promise<boolean> {
    return cancelProgress.writeCancelEscalation(this.maintenanceState, jobId, workerId, cause);
  }

  async markAbandoned(
    jobId: string,
    workerId: string,
    progress?: ProgressSnapshot | null,
    cause: CancelCause = 'cancel',
  ): Promise<boolean> {
    return cancelProgress.markAbandoned(this.maintenanceState, jobId, workerId, progress, cause);
  }

  async flushProgress(
    workerId: string,
    items: readonly { jobId: string; seq: number; state: Record<string, unknown> }[],
  ): Promise<number> {
    return cancelProgress.flushProgress(this.maintenanceState, workerId, items);
  }

  async heartbeatJobs(
    workerId: string,
    jobIds: readonly string[],
    leaseMs: number,
    details?: ReadonlyMap<string, string>,
  ): Promise<string[]> {
    return leases.heartbeatJobs(this.maintenanceState, workerId, jobIds, leaseMs, details);
  }

  async repend(workerId: string, jobIds: readonly string[]): Promise<number> {
    return leases.repend(this.maintenanceState, workerId, jobIds);
  }

  async markStarted(workerId: string, jobIds: readonly string[]): Promise<string[]> {
    return dispatch.markStarted(this.maintenanceState, workerId, jobIds);
  }

  async registerWorker(r: WorkerRegistration): Promise<void> {
    const now = this.clock.now();
    const startedAt = this.workers.get(r.workerId)?.startedAt ?? now;
    this.workers.set(r.workerId, { ...clone(r), startedAt, lastSeenAt: now });
  }

  async touchWorker(workerId: string): Promise<void> {
    const w = this.workers.get(workerId);
    if (w) w.lastSeenAt = this.clock.now();
  }

  async deregisterWorker(workerId: string): Promise<void> {
    this.workers.delete(workerId);
  }

  async syncActorConfig(
    actors: readonly ActorStructure[],
    options: ActorConfigSyncOptions,
  ): Promise<ActorConfigDrift[]> {
    return operatorConfig.syncActorConfig(this.maintenanceState, actors, options);
  }

  async getActorConfigs(actors?: readonly string[]): Promise<ActorConfigRow[]> {
    return operatorConfig.getActorConfigs(this.maintenanceState, actors);
  }

  async setActorCapacity(actor: string, change: ActorCapacityChange): Promise<ActorConfigRow | null> {
    return operatorConfig.setActorCapacity(this.maintenanceState, actor, change);
  }

  async deregisterActor(actor: string, options?: DeregisterOptions): Promise<DeregisterResult> {
    return deregisterInMemory(
      {
        actorConfig: this.actorConfig,
        jobs: this.jobs,
        queues: this.queues,
        queueModes: this.queueModes,
        enabledSchedules: (a) => this.schedules.list({ actor: a, enabled: true }),
        disableSchedule: (id) => void this.schedules.update(id, { enabled: false }, () => null),
        cancelWhere: (filter, reason) => cancelProgress.cancelWhere(this.maintenanceState, filter, reason),
      },
      actor,
      options,
    );
  }

  async listQueues(): Promise<QueueConfigRow[]> {
    return operatorConfig.listQueues(this.maintenanceState);
  }

  async setQueueMode(queue: string, mode: QueueMode): Promise<QueueConfigRow> {
    return operatorConfig.setQueueMode(this.maintenanceState, queue, mode);
  }

  async setQueueMaxConcurrent(queue: string, maxConcurrent: number | null): Promise<QueueConfigRow> {
    return operatorConfig.setQueueMaxConcurrent(this.maintenanceState, queue, maxConcurrent);
  }

  /**
   * This backend's memory store, on its clock, shared by every call (and Redis when given: its
   * fallback is not memory).
   */
  rateLimitStores(o: RateLimitStoreOptions): RateLimitStores & { close(): Promise<void> } {
    const stores = rateLimitStoresFor({
      clock: this.clock,
      redis: o.redis ?? null,
      redisUrl: o.redisUrl ?? null,
      redisCredentials: o.redisCredentials ?? null,
      pgFallback: o.pgFallback,
      logger: o.logger,
    });
    return { ...stores, shared: this.sharedRateLimits };
  }

  /** Nothing to migrate in memory: always ready. */
  async verifySchema(): Promise<void> {}

  async subscribe(
    handlers: NotificationHandlers,
    options: { workerId?: string } = {},
  ): Promise<NotificationSubscription> {
    const sub = { handlers, workerId: options.workerId?.toLowerCase() ?? null };
    this.subscribers.add(sub);
    return {
      ping: async () => undefined,
      onClose: () => undefined,
      close: async () => {
        this.subscribers.delete(sub);
      },
    };
  }

  // --- maintenance (leader) ------------------------------------------------------------------

  /** The maintenance leader's lease, on this backend's clock. */
  private readonly leaderLease = new MemoryLeaderLease(this.clockRef());

  async openLeaderSession(
    workerId: string,
    hostname: string,
    options: { leaseMs?: number } = {},
  ): Promise<LeaderSession> {
    return this.leaderLease.open(workerId, hostname, options.leaseMs ?? DEFAULT_LEADER_LEASE_MS);
  }

  async getLeaderLease(): Promise<LeaderLease | null> {
    return this.leaderLease.read();
  }

  async scheduledToPending(limit = 10_000, fence?: LeaderFence): Promise<PromotionResult> {
    this.leaderLease.check(fence);
    const now = this.clock.now().getTime();
    let promoted = 0;
    let next: number | null = null;
    const due = [...this.jobs.values()]
      .filter((j) => j.status === 'scheduled')
      .sort((a, b) => a.scheduledAt.getTime() - b.scheduledAt.getTime());
    for (const j of due) {
      const at = j.scheduledAt.getTime();
      if (at <= now && promoted < limit) {
        j.status = 'pending';
        this.event(j.id, 'state_change', { from_state: 'scheduled', to_state: 'pending', reason: 'due' });
        promoted++;
      } else if (at > now) {
        next = next === null ? at - now : Math.min(next, at - now);
      }
    }
    if (promoted > 0) this.emitWake();
    return { promoted, nextDueInMs: next };
  }

  async reclaimExpiredLocks(
    cancelGraceMs: number,
    cleanupGraceMs: number,
    limit = 1000,
    fence?: LeaderFence,
  ): Promise<ReclaimResult> {
    this.leaderLease.check(fence);
    return maintenance.reclaimExpiredLocks(this.maintenanceState, cancelGraceMs, cleanupGraceMs, limit);
  }

  async deadlineSweep(limit = 1000, fence?: LeaderFence): Promise<number> {
    this.leaderLease.check(fence);
    return maintenance.deadlineSweep(this.maintenanceState, limit);
  }

  async sweepExpiredResults(limit = 1000, fence?: LeaderFence): Promise<number> {
    this.leaderLease.check(fence);
    return maintenance.sweepExpiredResults(this.maintenanceState, limit);
  }

  async cleanupStaleWorkers(olderThanMs: number, fence?: LeaderFence): Promise<number> {
    this.leaderLease.check(fence);
    return maintenance.cleanupStaleWorkers(this.maintenanceState, olderThanMs);
  }

  async strandedActors(): Promise<StrandedActor[]> {
    return maintenance.strandedActors(this.maintenanceState);
  }

  async pruneJobs(
    retention: RetentionPolicy,
    batchSize: number,
    fence?: LeaderFence,
  ): Promise<{ archived: number; attempts: number }> {
    this.leaderLease.check(fence);
    return maintenance.pruneJobs(this.maintenanceState, retention, batchSize);
  }

  async expireArchive(batchSize: number, fence?: LeaderFence): Promise<number> {
    this.leaderLease.check(fence);
    return maintenance.expireArchive(this.maintenanceState, batchSize);
  }

  async pollReclaimEvents(
    afterId: string,
    options: { limit?: number; visibilityDelayMs?: number } = {},
  ): Promise<EventRow[]> {
    checkEventIdCursor(afterId);
    return maintenance.pollReclaimEvents(
      this.maintenanceState,
      afterId,
      options.limit ?? 100,
      options.visibilityDelayMs ?? 2000,
    );
  }

  /** {@link Backend.observeFleet}: from this backend's state, on its clock. */
  async createSchedule(args: ScheduleCreateArgs, nextSlot: NextSlot): Promise<ScheduleRecord> {
    return this.schedules.create(args, nextSlot);
  }

  async ensureSchedules(
    list: readonly ScheduleCreateArgs[],
    nextSlot: NextSlot,
  ): Promise<{ record: ScheduleRecord; created: boolean }[]> {
    return this.schedules.ensure(list, nextSlot);
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    return this.schedules.get(id);
  }

  async listSchedules(filter: ScheduleFilter = {}): Promise<ScheduleRecord[]> {
    return this.schedules.list(filter);
  }

  async updateSchedule(
    id: string,
    change: ScheduleUpdateArgs,
    nextSlot: NextSlot,
  ): Promise<ScheduleRecord | null> {
    return this.schedules.update(id, change, nextSlot);
  }

  async skipScheduleFire(
    id: string,
    slotAfter: NextSlot,
    expected?: Date,
  ): Promise<ScheduleSkipResult | null> {
    return this.schedules.skip(id, slotAfter, expected);
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return this.schedules.delete(id);
  }

  async listScheduleFires(id: string, limit: number): Promise<ScheduleFireRecord[]> {
    return this.schedules.listFires(id, limit);
  }

  async dueSchedules(limit: number): Promise<DueSchedules> {
    return this.schedules.due(limit);
  }

  async fireSchedules(
    decisions: readonly ScheduleFireDecision[],
    options: { autoDisableThreshold: number },
    fence?: LeaderFence,
  ): Promise<ScheduleFireResult[]> {
    this.leaderLease.check(fence);
    return this.schedules.fire(decisions, options.autoDisableThreshold);
  }

  async observeFleet(request: FleetObservationRequest): Promise<FleetObservation> {
    return observeFleet(
      {
        clock: this.clock,
        jobs: this.jobs.values(),
        queueRows: this.queues.keys(),
        workers: this.workers.values(),
        reservations: await this.sharedRateLimits.listReservations(),
        leaderValid: this.leaderLease.read()?.valid ?? false,
      },
      request,
    );
  }

  /** {@link Backend.observeActivity}: from this backend's state, on its clock. */
  async observeActivity(request: ActivityObservationRequest): Promise<ActivityObservation> {
    return observeActivity(
      { clock: this.clock, jobs: this.jobs.values(), workers: this.workers.values() },
      request,
    );
  }

  /** {@link Backend.observeActors}: from this backend's state, on its clock. */
  async observeActors(request: ActorObservationRequest): Promise<ActorObservation[]> {
    return observeActors(
      {
        clock: this.clock,
        jobs: this.jobs.values(),
        actorConfig: this.actorConfig.values(),
        workers: this.workers.values(),
      },
      request,
    );
  }

  /** {@link Backend.explainJob}: from this backend's state, on its clock. */
  async explainJob(request: ExplainFactsRequest): Promise<JobExplainFacts | null> {
    return explainJob(
      {
        clock: this.clock,
        jobs: this.jobs,
        attempts: this.attempts,
        actorConfig: this.actorConfig,
        queues: this.queues,
        workers: this.workers,
        leaderValid: this.leaderLease.read()?.valid ?? false,
      },
      request,
    );
  }

  /** {@link Backend.ping}: answers until the backend is closed. */
  async ping(): Promise<void> {
    if (this.closed) throw new TaskQStateError('the InMemoryBackend is closed');
  }

  // --- batches (memory-batches.ts) ------------------------------------------------------------

  async writeBatch(w: BatchWrite, options: { connection?: ClientLike } = {}): Promise<BatchWriteResult> {
    return this.batches.write(w, transactionOf(options.connection, 'writeBatch'));
  }

  async getBatch(batchId: string): Promise<BatchRow | null> {
    return this.batches.get(batchId);
  }

  async listBatches(filter: NormalizedBatchFilter): Promise<BatchPage> {
    return this.batches.list(filter);
  }

  async batchCounts(
    batchId: string,
    excludeJobId: string | null = null,
  ): Promise<{ batch: BatchRow | null; counts: BatchCounts }> {
    return this.batches.counts(batchId, excludeJobId);
  }

  async completeStaleBatches(limit = 1000, fence?: LeaderFence): Promise<string[]> {
    this.leaderLease.check(fence);
    return this.batches.completeStale(limit);
  }

  async pruneBatches(olderThanMs: number, limit = 10_000, fence?: LeaderFence): Promise<number> {
    this.leaderLease.check(fence);
    return this.batches.prune(olderThanMs, limit);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
  }

  // --- sub-jobs ---

  /**
   * {@link Backend.settleWithChildren}: the children are staged in a {@link MemoryTransaction}
   * through {@link enqueueBatch} (gate locks held until it ends), then the success and the commit
   * are applied with no `await` between them, so that no other call sees one without the other.
   */
  async settleWithChildren(
    item: Settlement,
    children: readonly EnqueueArgs[],
  ): Promise<SettleWithChildrenResult> {
    const noop = (): SettleWithChildrenResult => ({
      result: { jobId: item.jobId, status: 'noop', errorClass: null },
      children: [],
    });
    const owned = this.jobs.get(item.jobId);
    if (!owned || owned.status !== 'running' || owned.lockedByWorker !== item.workerId.toLowerCase())
      return noop();
    const tx = new MemoryTransaction();
    const rows: JobRow[] = [];
    try {
      for (let i = 0; i < children.length; i += 1000)
        rows.push(...(await this.enqueueBatch(children.slice(i, i + 1000), { connection: tx })));
    } catch (err) {
      await tx.rollback();
      throw err;
    }
    const [result] = dispatch.settle(this.maintenanceState, [item]);
    if (result!.status === 'noop') {
      await tx.rollback();
      return noop();
    }
    // `commit` applies the staged rows before its first await: in the same turn as the success.
    await tx.commit();
    return { result: result!, children: rows };
  }
}
