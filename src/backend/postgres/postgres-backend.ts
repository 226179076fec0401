import type { ActivityObservation, ActivityObservationRequest } from '../activity-observation.js';
import * as schedules from './pg-schedules.js';
import * as batches from './pg-batches.js';
import type {
  BatchCounts,
  BatchPage,
  BatchRow,
  BatchWrite,
  BatchWriteResult,
  NormalizedBatchFilter,
} from '../batch-types.js';
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
import { executorFromClient, type ClientLike, type Driver, type Executor } from '../../db/driver.js';
import { assertNoRepeatedKey } from '../repeated-key.js';
import { enqueueFast } from './pg-enqueue-fast.js';
import { assertNoUniqueGate } from '../enqueue-gates.js';
import { SchemaNotMigratedError } from '../../errors/schema-errors.js';
import { Migrator } from '../../migrations/migrator.js';
import { checkKnownKeys } from '../../core/closest-name.js';
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import type { Logger } from '../../obs/logger.js';
import { silentLogger } from '../../obs/logger.js';

import {
  doneChannel,
  eventsChannel,
  progressChannel,
  quoteSchema,
  renderSql,
  validateSchemaName,
  wakeChannel,
} from '../../core/schema-name.js';
import { SystemClock } from '../../core/clock.js';
import { rateLimitStoresFor, type RateLimitStores } from '../../ratelimit/stores/rate-limit-stores.js';
import {
  BACKEND_PROTOCOL_VERSION,
  type Backend,
  type CancelWhereCounts,
  type JobPage,
  type RateLimitStoreOptions,
} from '../backend.js';
import { isTerminal } from '../state-machine.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import type {
  ActorCapacityChange,
  ActorConfigRow,
  ArchivedJob,
  AttemptRow,
  BulkCancelResult,
  BulkRetryResult,
  ClaimedJob,
  DeregisterOptions,
  DeregisterResult,
  EnqueueArgs,
  EventRow,
  JobRow,
  LongRunningJobEventsWriter,
  QueueConfigRow,
  QueueMode,
} from '../types.js';
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
import { cursorForRow } from './filter-sql.js';
import { listStages, RARE_TAG_ROWS, rareTagsProbe } from './list-sql.js';
import { Dispatcher } from './pg-dispatch.js';
import { enqueueMany, enqueueOne, translateUnique, type EnqueueWake } from './pg-enqueue.js';
import * as bulk from './pg-bulk-actions.js';
import { DERIVED_STATEMENTS, deriveStatement, type PgOps, type StatementName } from './pg-ops.js';
import { subscribe } from './pg-sessions.js';
import { fenced, openLeaderSession, readLeaderLease } from './pg-leader-lease.js';
import { DEFAULT_LEADER_LEASE_MS } from '../leader-lease.js';
import { refreshJobsStatistics } from './pg-statistics.js';
import { settleWithChildren } from './pg-sub-jobs.js';
import {
  allPlainSuccesses,
  settleParams,
  settleResults,
  settleSucceededParams,
  type SettleRow,
} from './pg-settle.js';
import { CLAIM_COLUMNS, JOB_COLUMNS } from './job-columns.js';
import { PgAnnouncer } from './pg-announcer.js';
import { observeFleet } from './pg-fleet-observation.js';
import { observeActivity } from './pg-activity-observation.js';
import { observeActors } from './pg-actor-observation.js';
import { explainJob } from './pg-explain.js';
import * as sweeps from './pg-maintenance.js';
import * as config from './pg-operator-config.js';
import { deregisterActor } from './pg-actor-deregistration.js';
import { toAttemptRow, toEventRow, toJobRow } from './row-mapper.js';
import * as SQL from './sql.generated.js';

type Raw = Record<string, unknown>;

/** Options of {@link PostgresBackend}. */
export interface PostgresBackendOptions {
  /** Schema holding TaskQ's tables. Default `taskq`. */
  schema?: string;
  /** Logger for warnings. */
  logger?: Logger;
  /**
   * Pool the dispatch (claim) statement runs on; default `driver`. Workers give it a connection of
   * its own whose session always uses the statement's generic plan (`PINNED_PLAN_SESSION_SETTINGS`).
   */
  claimDriver?: Driver;
  /**
   * Pool the settle statement (outcome writes) runs on; default `driver`. Workers give it a
   * connection of its own with the statement's generic plan, like the claim connection.
   */
  settleDriver?: Driver;
  /**
   * Pool of the worker's liveness writes (lease renewals, worker touch, cancel-flag polls); default
   * `driver`. Workers give it a pool of its own so a busy dispatcher pool cannot starve it.
   */
  heartbeatDriver?: Driver;
  /** Connections of `claimDriver` that `warmUp` opens (its pool size). Default 1. */
  claimConnections?: number;
  /** Connections of `settleDriver` that `warmUp` opens (its pool size). Default 1. */
  settleConnections?: number;
}

/** The keys of {@link PostgresBackendOptions}: a misspelt `schema` must not select the default schema. */
const POSTGRES_BACKEND_OPTION_KEYS: readonly string[] = [
  'schema',
  'logger',
  'claimDriver',
  'settleDriver',
  'heartbeatDriver',
  'claimConnections',
  'settleConnections',
];

const SCHEMA_MISSING_CODES = new Set(['42P01', '3F000', '42704']);

/**
 * True for a Postgres error raised because TaskQ's tables (or schema, or enum type) are missing,
 * or the gate functions of migration 0002 (a schema migrated by an older TaskQ).
 */
export function isSchemaMissingError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: string; message?: string };
  if (code === '42883') return /lock_enqueue_gates|enqueue_gate_/.test(message ?? '');
  return SCHEMA_MISSING_CODES.has(code ?? '');
}

/**
 * The Backend over Postgres. Every statement lives in `sql/*.sql`; this class binds parameters,
 * maps rows and translates errors. Time predicates use the database clock.
 */
export class PostgresBackend implements Backend {
  readonly protocolVersion = BACKEND_PROTOCOL_VERSION;
  readonly kind = 'postgres' as const;
  readonly schema: string;
  readonly driver: Driver;
  private readonly claimDriver: Driver;
  private readonly claimConnections: number;
  private readonly settleDriver: Driver;
  private readonly settleConnections: number;
  private readonly heartbeatDriver: Driver;
  protected readonly logger: Logger;
  private readonly sql: Record<StatementName, string>;
  private readonly quoted: string;
  private readonly wake: string;
  private readonly events: string;
  private readonly done: string;
  private readonly progress: string;
  private readonly ops: PgOps;
  private readonly announcer: PgAnnouncer;
  /** Enqueue statements of this backend running on its own pool (see {@link onOwnPool}). */
  private enqueuesInFlight = 0;
  /** Runs claims: the lean statement when it applies, else the full one. */
  readonly dispatcher: Dispatcher;

  constructor(driver: Driver, options: PostgresBackendOptions = {}) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('PostgresBackend.options', options, 'must be an object');
    checkKnownKeys(
      options,
      POSTGRES_BACKEND_OPTION_KEYS,
      'PostgresBackend',
      'an option of new PostgresBackend()',
    );
    this.driver = driver;
    this.claimDriver = options.claimDriver ?? driver;
    this.claimConnections = options.claimConnections ?? 1;
    this.settleDriver = options.settleDriver ?? driver;
    this.settleConnections = options.settleConnections ?? 1;
    this.heartbeatDriver = options.heartbeatDriver ?? driver;
    this.schema = validateSchemaName(options.schema ?? 'taskq');
    this.quoted = quoteSchema(this.schema);
    this.logger = options.logger ?? silentLogger;
    this.wake = wakeChannel(this.schema);
    this.events = eventsChannel(this.schema);
    this.done = doneChannel(this.schema);
    this.progress = progressChannel(this.schema);
    const rendered = {} as Record<StatementName, string>;
    for (const [name, text] of Object.entries(SQL) as [keyof typeof SQL, string][]) {
      rendered[name] = renderSql(text, this.schema)
        .replaceAll('{job_columns}', JOB_COLUMNS)
        .replaceAll('{claim_columns}', CLAIM_COLUMNS);
    }
    for (const [name, { from, drop }] of Object.entries(DERIVED_STATEMENTS))
      rendered[name as keyof typeof DERIVED_STATEMENTS] = deriveStatement(rendered[from], drop);
    this.sql = rendered;
    this.ops = {
      driver: this.driver,
      schema: this.schema,
      logger: this.logger,
      sql: this.sql,
      channels: { wake: this.wake, events: this.events, done: this.done, progress: this.progress },
      run: (name, values, ex) => this.run(name, values, ex),
      translate: (err) => this.translate(err),
    };
    this.dispatcher = new Dispatcher(this.ops, this.claimDriver);
    this.announcer = new PgAnnouncer(this.ops, this.logger);
  }

  /** The rendered text of a named statement (for diagnostics and tests). */
  statement(name: StatementName): string {
    return this.sql[name];
  }

  /** Runs a named statement on `ex` (the pool by default), translating a missing schema. */
  protected async run<R = Raw>(
    name: StatementName,
    values: readonly unknown[],
    ex: Executor = this.driver,
  ): Promise<R[]> {
    try {
      const res = await ex.query<R>(this.sql[name], values, `taskq_${name}_${this.schema}`);
      return res.rows;
    } catch (err) {
      throw this.translate(err);
    }
  }

  protected translate(err: unknown): unknown {
    if (isSchemaMissingError(err)) return new SchemaNotMigratedError(this.schema, { cause: err });
    return err;
  }

  async enqueue(args: EnqueueArgs): Promise<JobRow> {
    return this.onOwnPool((wake) => enqueueOne(this.ops, { ex: this.driver, ownPool: true }, args, wake));
  }

  async enqueueWithConn(conn: ClientLike, args: EnqueueArgs): Promise<JobRow> {
    return enqueueOne(this.ops, { ex: executorFromClient(conn), ownPool: false }, args, 'inline');
  }

  async enqueueBatch(
    list: readonly EnqueueArgs[],
    options: { connection?: ClientLike } = {},
  ): Promise<JobRow[]> {
    if (options.connection)
      return enqueueMany(
        this.ops,
        list,
        { ex: executorFromClient(options.connection), ownPool: false },
        'inline',
      );
    return this.onOwnPool((wake) => enqueueMany(this.ops, list, { ex: this.driver, ownPool: true }, wake));
  }

  async enqueueBatchFast(
    list: readonly EnqueueArgs[],
    options: { connection?: ClientLike } = {},
  ): Promise<number> {
    assertNoRepeatedKey(list);
    assertNoUniqueGate(list);
    if (list.length === 0) return 0;
    if (options.connection) return enqueueFast(this.ops, list, executorFromClient(options.connection));
    return this.driver.transaction((tx) => enqueueFast(this.ops, list, tx));
  }

  /**
   * Runs an enqueue on the backend's pool. Alone, it notifies inline (the earliest wake-up); while
   * another is in flight, after its commit, so that concurrent inserts can share a WAL flush (see
   * {@link EnqueueWake}).
   */
  private async onOwnPool<T>(enqueue: (wake: EnqueueWake) => Promise<T>): Promise<T> {
    const wake: EnqueueWake = this.enqueuesInFlight === 0 ? 'inline' : 'afterCommit';
    this.enqueuesInFlight++;
    try {
      return await enqueue(wake);
    } finally {
      this.enqueuesInFlight--;
    }
  }

  async get(jobId: string): Promise<JobRow | null> {
    const rows = await this.run('getJob', [jobId]);
    return rows[0] ? toJobRow(rows[0]) : null;
  }

  async getByIdempotencyKey(key: string, scope: string): Promise<JobRow | null> {
    const rows = await this.run('getJobByIdempotencyKey', [key, scope]);
    return rows[0] ? toJobRow(rows[0]) : null;
  }

  async listJobs(filter: NormalizedJobFilter): Promise<JobPage> {
    if (filter.limit === 0) return { jobs: [], nextCursor: null };
    // One row past the page tells whether another exists; a later stage runs only when the
    // earlier ones ran out (list-sql.ts).
    const rows: Raw[] = [];
    let rareTags = false;
    if (filter.tags.length > 0) {
      const probe = rareTagsProbe(filter, this.quoted);
      try {
        const [row] = (await this.driver.query<{ n: number }>(probe.text, probe.values)).rows;
        rareTags = (row?.n ?? 0) < RARE_TAG_ROWS;
      } catch (err) {
        throw this.translate(err);
      }
    }
    for (const stage of listStages(filter, this.quoted, JOB_COLUMNS, { rareTags })) {
      const q = stage(filter.limit + 1 - rows.length);
      try {
        rows.push(...(await this.driver.query<Raw>(q.text, q.values)).rows);
      } catch (err) {
        throw this.translate(err);
      }
      if (rows.length > filter.limit) break;
    }
    const more = rows.length > filter.limit;
    const page = more ? rows.slice(0, filter.limit) : rows;
    const last = page[page.length - 1];
    return {
      jobs: page.map(toJobRow),
      nextCursor:
        more && last
          ? cursorForRow(filter, {
              id: last.id as string,
              priority: Number(last.priority),
              _cursor_us: last._cursor_us as string | null,
            })
          : null,
    };
  }

  async countPendingJobs(actors: readonly string[]): Promise<Map<string, number>> {
    if (actors.length === 0) return new Map();
    const rows = await this.run<{ actor: string; n: number }>('countPendingJobs', [actors]);
    return new Map(rows.map((r) => [r.actor, Number(r.n)]));
  }

  async countActiveJobs(queues: readonly string[]): Promise<number> {
    if (queues.length === 0) return 0;
    const rows = await this.run<{ n: number }>('countActiveJobs', [queues]);
    return Number(rows[0]?.n ?? 0);
  }

  async getActorMaxPending(): Promise<Map<string, number | null>> {
    const rows = await this.run<{ actor: string; max_pending: number | null }>('getActorMaxPending', []);
    return new Map(rows.map((r) => [r.actor, r.max_pending === null ? null : Number(r.max_pending)]));
  }

  async writeCancelRequest(jobId: string, reason: string | null): Promise<boolean> {
    const rows = await this.run<{ cancelled: number; requested: number; requested_worker: string | null }>(
      'writeCancelRequest',
      [jobId, reason],
    );
    const r = rows[0];
    if (Number(r?.cancelled ?? 0) > 0) void this.announcer.send({ done: [jobId] });
    if (r?.requested_worker) void this.announcer.send({ cancels: [{ jobId, workerId: r.requested_worker }] });
    return Number(r?.cancelled ?? 0) + Number(r?.requested ?? 0) > 0;
  }

  async cancelWhere(filter: NormalizedJobFilter, reason: string | null): Promise<BulkCancelResult> {
    const { requestedWorkers, ...result } = await bulk.cancelWhere(this.ops, this.quoted, filter, reason);
    await this.announcer.send({
      done: result.cancelledIds,
      cancels: result.cancelRequestedIds.map((jobId, i) => ({ jobId, workerId: requestedWorkers[i]! })),
    });
    return result;
  }

  async previewCancelWhere(filter: NormalizedJobFilter): Promise<CancelWhereCounts> {
    return bulk.previewCancelWhere(this.ops, this.quoted, filter);
  }

  async retryJob(jobId: string): Promise<boolean> {
    let rows: { retried: number }[];
    try {
      rows = await this.run<{ retried: number }>('retryJob', [jobId, this.wake]);
    } catch (err) {
      const row = await this.get(jobId);
      throw translateUnique(err, row?.actor ?? '');
    }
    return Number(rows[0]?.retried ?? 0) > 0;
  }

  async retryWhere(filter: NormalizedJobFilter): Promise<BulkRetryResult> {
    const result = await bulk.retryWhere(this.ops, this.quoted, filter);
    if (result.retried > 0) await this.announcer.send({ wake: true });
    return result;
  }

  async previewRetryWhere(filter: NormalizedJobFilter): Promise<number> {
    return bulk.previewRetryWhere(this.ops, this.quoted, filter);
  }

  async writeAttempt(a: AttemptRow): Promise<void> {
    await this.run('writeAttempt', [
      a.jobId,
      a.attempt,
      a.workerId,
      a.startedAt,
      a.finishedAt,
      a.durationMs,
      a.outcome,
      a.errorClass,
      a.errorMessage,
      a.errorTraceback,
    ]);
  }

  async getAttempts(jobId: string): Promise<AttemptRow[]> {
    return (await this.run('getAttempts', [jobId])).map(toAttemptRow);
  }

  async getEvents(jobId: string): Promise<EventRow[]> {
    return (await this.run('getEvents', [jobId])).map(toEventRow);
  }

  async getArchivedJob(jobId: string): Promise<ArchivedJob | null> {
    const rows = await this.run('getArchivedJob', [jobId]);
    const r = rows[0];
    if (!r) return null;
    const attempts = await this.run('getArchivedAttempts', [jobId]);
    return {
      job: toJobRow(r),
      archivedAt: new Date(r.archived_at as number),
      expireAt: new Date(r.expire_at as number),
      attempts: attempts.map(toAttemptRow),
    };
  }

  // --- worker side -------------------------------------------------------------------------

  async dispatchBatch(req: DispatchRequest): Promise<ClaimedJob[]> {
    return this.dispatcher.dispatch(req);
  }

  async heartbeatJobs(
    workerId: string,
    jobIds: readonly string[],
    leaseMs: number,
    details?: ReadonlyMap<string, string>,
  ): Promise<string[]> {
    if (jobIds.length === 0) return [];
    const rows = await this.run<{ id: string }>(
      'heartbeatJobs',
      [workerId, jobIds, leaseMs, jobIds.map((id) => details?.get(id) ?? null)],
      this.heartbeatDriver,
    );
    return rows.map((r) => r.id);
  }

  async pollCancelFlags(workerId: string): Promise<CancelFlag[]> {
    const rows = await this.run<{ id: string; cancel_phase: number }>(
      'pollCancelFlags',
      [workerId],
      this.heartbeatDriver,
    );
    return rows.map((r) => ({ jobId: r.id, phase: Number(r.cancel_phase) as 0 | 1 | 2 }));
  }

  async writeCancelEscalation(
    jobId: string,
    workerId: string,
    cause: CancelCause = 'cancel',
  ): Promise<boolean> {
    const rows = await this.run<{ escalated: number }>('writeCancelEscalation', [jobId, workerId, cause]);
    return Number(rows[0]?.escalated ?? 0) > 0;
  }

  async markAbandoned(
    jobId: string,
    workerId: string,
    progress?: ProgressSnapshot | null,
    cause: CancelCause = 'cancel',
  ): Promise<boolean> {
    const rows = await this.run<{ abandoned: number }>('markAbandoned', [
      jobId,
      workerId,
      progress?.seq ?? null,
      progress ? JSON.stringify(progress.state) : null,
      cause,
    ]);
    const abandoned = Number(rows[0]?.abandoned ?? 0) > 0;
    if (abandoned) void this.announcer.send({ done: [jobId] });
    return abandoned;
  }

  async flushProgress(
    workerId: string,
    items: readonly { jobId: string; seq: number; state: Record<string, unknown> }[],
  ): Promise<number> {
    if (items.length === 0) return 0;
    const rows = await this.run<{ flushed_ids: string[] }>('flushProgress', [
      workerId,
      items.map((i) => i.jobId),
      items.map((i) => i.seq),
      items.map((i) => JSON.stringify(i.state)),
    ]);
    const flushed = rows[0]?.flushed_ids ?? [];
    void this.announcer.send({ progress: flushed });
    return flushed.length;
  }

  async settle(items: readonly Settlement[]): Promise<SettleResult[]> {
    if (items.length === 0) return [];
    // A batch of plain successes (the usual one) goes through a statement with a much smaller plan.
    const rows = allPlainSuccesses(items)
      ? await this.run<SettleRow>('settleSucceeded', settleSucceededParams(items), this.settleDriver)
      : await this.run<SettleRow>('settle', settleParams(items), this.settleDriver);
    const results = settleResults(items, rows);
    this.announceSettled(results);
    return results;
  }

  /**
   * After a settle commits: finished jobs on the done channel, and a wake-up when any went back to
   * `pending`. Not awaited, so the next outcome write does not wait for it.
   */
  private announceSettled(results: readonly SettleResult[]): void {
    const done: string[] = [];
    let repended = false;
    for (const r of results) {
      if (r.status === 'noop') continue;
      if (isTerminal(r.status)) done.push(r.jobId);
      else if (r.status === 'pending') repended = true;
    }
    void this.announcer.send({ done, wake: repended });
  }

  async repend(workerId: string, jobIds: readonly string[]): Promise<number> {
    if (jobIds.length === 0) return 0;
    const rows = await this.run<{ repended: number; cancelled_ids: string[] }>('repend', [
      workerId,
      jobIds,
      this.wake,
    ]);
    await this.announcer.send({ done: rows[0]?.cancelled_ids ?? [] });
    return Number(rows[0]?.repended ?? 0);
  }

  async markStarted(workerId: string, jobIds: readonly string[]): Promise<string[]> {
    if (jobIds.length === 0) return [];
    const rows = await this.run<{ id: string }>('markStarted', [workerId, jobIds]);
    return rows.map((r) => r.id);
  }

  async registerWorker(r: WorkerRegistration): Promise<void> {
    await this.run('registerWorker', [
      r.workerId,
      r.hostname,
      r.pid,
      r.label,
      r.queues,
      r.maxConcurrency,
      r.version,
    ]);
  }

  async touchWorker(workerId: string): Promise<void> {
    await this.run('touchWorker', [workerId], this.heartbeatDriver);
  }

  async deregisterWorker(workerId: string): Promise<void> {
    await this.run('deregisterWorker', [workerId]);
  }

  async syncActorConfig(
    actors: readonly ActorStructure[],
    options: ActorConfigSyncOptions,
  ): Promise<ActorConfigDrift[]> {
    return config.syncActorConfig(this.ops, actors, options);
  }

  async getActorConfigs(actors?: readonly string[]): Promise<ActorConfigRow[]> {
    return config.getActorConfigs(this.ops, actors);
  }

  async setActorCapacity(actor: string, change: ActorCapacityChange): Promise<ActorConfigRow | null> {
    return config.setActorCapacity(this.ops, actor, change);
  }

  async deregisterActor(actor: string, options?: DeregisterOptions): Promise<DeregisterResult> {
    const out = await deregisterActor(this.ops, this.quoted, actor, options);
    if (out.cancelledIds.length > 0) await this.announcer.send({ done: out.cancelledIds });
    return out.result;
  }

  async listQueues(): Promise<QueueConfigRow[]> {
    return config.listQueues(this.ops);
  }

  async setQueueMode(queue: string, mode: QueueMode): Promise<QueueConfigRow> {
    return config.setQueueMode(this.ops, queue, mode);
  }

  async setQueueMaxConcurrent(queue: string, maxConcurrent: number | null): Promise<QueueConfigRow> {
    return config.setQueueMaxConcurrent(this.ops, queue, maxConcurrent);
  }

  rateLimitStores(o: RateLimitStoreOptions): RateLimitStores & { close(): Promise<void> } {
    return rateLimitStoresFor({
      driver: this.driver,
      leaseDriver: this.heartbeatDriver,
      schema: this.schema,
      redis: o.redis ?? null,
      redisUrl: o.redisUrl ?? null,
      redisCredentials: o.redisCredentials ?? null,
      clock: new SystemClock(),
      pgFallback: o.pgFallback,
      logger: o.logger,
    });
  }

  async verifySchema(): Promise<void> {
    await new Migrator(this.driver, { schema: this.schema, logger: this.logger }).verify();
  }

  async subscribe(
    handlers: NotificationHandlers,
    options: { workerId?: string } = {},
  ): Promise<NotificationSubscription> {
    return subscribe(this.ops, handlers, options.workerId);
  }

  // --- maintenance (leader) ------------------------------------------------------------------

  async openLeaderSession(
    workerId: string,
    hostname: string,
    options: { leaseMs?: number } = {},
  ): Promise<LeaderSession> {
    return openLeaderSession(this.ops, workerId, hostname, options.leaseMs ?? DEFAULT_LEADER_LEASE_MS);
  }

  async getLeaderLease(): Promise<LeaderLease | null> {
    return readLeaderLease(this.ops);
  }

  async scheduledToPending(limit = 10_000, fence?: LeaderFence): Promise<PromotionResult> {
    return fenced(this.ops, this.announcer, fence, (ops) => sweeps.scheduledToPending(ops, limit));
  }

  async reclaimExpiredLocks(
    cancelGraceMs: number,
    cleanupGraceMs: number,
    limit = 1000,
    fence?: LeaderFence,
  ): Promise<ReclaimResult> {
    return fenced(this.ops, this.announcer, fence, (ops, announcer) =>
      sweeps.reclaimExpiredLocks(ops, announcer, cancelGraceMs, cleanupGraceMs, limit),
    );
  }

  async deadlineSweep(limit = 1000, fence?: LeaderFence): Promise<number> {
    return fenced(this.ops, this.announcer, fence, (ops, announcer) =>
      sweeps.deadlineSweep(ops, announcer, limit),
    );
  }

  async sweepExpiredResults(limit = 1000, fence?: LeaderFence): Promise<number> {
    return fenced(this.ops, this.announcer, fence, (ops) => sweeps.sweepExpiredResults(ops, limit));
  }

  async cleanupStaleWorkers(olderThanMs: number, fence?: LeaderFence): Promise<number> {
    return fenced(this.ops, this.announcer, fence, (ops) => sweeps.cleanupStaleWorkers(ops, olderThanMs));
  }

  async strandedActors(): Promise<StrandedActor[]> {
    return sweeps.strandedActors(this.ops);
  }

  async pruneJobs(
    r: RetentionPolicy,
    batchSize: number,
    fence?: LeaderFence,
  ): Promise<{ archived: number; attempts: number }> {
    return fenced(this.ops, this.announcer, fence, (ops) => sweeps.pruneJobs(ops, r, batchSize));
  }

  async expireArchive(batchSize: number, fence?: LeaderFence): Promise<number> {
    return fenced(this.ops, this.announcer, fence, (ops) => sweeps.expireArchive(ops, batchSize));
  }

  async pollReclaimEvents(
    afterId: string,
    options: { limit?: number; visibilityDelayMs?: number } = {},
  ): Promise<EventRow[]> {
    return sweeps.pollReclaimEvents(this.ops, afterId, options);
  }

  /**
   * Transactions that have held `job_events` open (a write lock) for longer than `marginMs` — the
   * situation in which the reclaim feed's visibility delay could be too short. A proxy signal.
   */
  async checkReclaimVisibilityDelayRisk(marginMs: number): Promise<LongRunningJobEventsWriter[]> {
    return sweeps.reclaimVisibilityRisk(this.ops, `${this.quoted}.job_event_log`, marginMs);
  }

  async warmUp(req: DispatchRequest): Promise<void> {
    // The outcome writes with no items: planned, and they write nothing. Each settle connection runs
    // both, in a transaction that holds it (the chains run at once, so each gets its own).
    const empty = (params: number) => ['{}', ...Array.from({ length: params - 1 }, () => null)];
    const warmSettle = () =>
      this.settleDriver.transaction(async (tx) => {
        await this.run('settle', empty(33), tx);
        await this.run('settleSucceeded', empty(13), tx);
      });
    await Promise.all([
      this.dispatcher.warmUp(req, this.claimConnections),
      ...Array.from({ length: this.settleConnections }, warmSettle),
    ]);
  }

  async refreshStatistics(): Promise<boolean> {
    return refreshJobsStatistics(this.ops, this.quoted);
  }

  /** {@link Backend.observeFleet}: one statement (sql/fleet.sql) on the dispatcher pool. */
  async createSchedule(args: ScheduleCreateArgs, nextSlot: NextSlot): Promise<ScheduleRecord> {
    return schedules.createSchedule(this.ops, args, nextSlot);
  }

  async ensureSchedules(
    list: readonly ScheduleCreateArgs[],
    nextSlot: NextSlot,
  ): Promise<{ record: ScheduleRecord; created: boolean }[]> {
    return schedules.ensureSchedules(this.ops, list, nextSlot);
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    return schedules.getSchedule(this.ops, id);
  }

  async listSchedules(filter: ScheduleFilter = {}): Promise<ScheduleRecord[]> {
    return schedules.listSchedules(this.ops, filter);
  }

  async updateSchedule(
    id: string,
    change: ScheduleUpdateArgs,
    nextSlot: NextSlot,
  ): Promise<ScheduleRecord | null> {
    return schedules.updateSchedule(this.ops, id, change, nextSlot);
  }

  async skipScheduleFire(
    id: string,
    slotAfter: NextSlot,
    expected?: Date,
  ): Promise<ScheduleSkipResult | null> {
    return schedules.skipScheduleFire(this.ops, id, slotAfter, expected);
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return schedules.deleteSchedule(this.ops, id);
  }

  async listScheduleFires(id: string, limit: number): Promise<ScheduleFireRecord[]> {
    return schedules.listFires(this.ops, id, limit);
  }

  async dueSchedules(limit: number): Promise<DueSchedules> {
    return schedules.dueSchedules(this.ops, limit);
  }

  async fireSchedules(
    decisions: readonly ScheduleFireDecision[],
    options: { autoDisableThreshold: number },
    fence?: LeaderFence,
  ): Promise<ScheduleFireResult[]> {
    return schedules.fireSchedules(this.ops, decisions, options.autoDisableThreshold, fence);
  }

  async observeFleet(request: FleetObservationRequest): Promise<FleetObservation> {
    return observeFleet(this.ops, request);
  }

  /** {@link Backend.observeActivity}: one statement (sql/fleet.sql) on the dispatcher pool. */
  async observeActivity(request: ActivityObservationRequest): Promise<ActivityObservation> {
    return observeActivity(this.ops, request);
  }

  /** {@link Backend.observeActors}: one statement (sql/fleet.sql) on the dispatcher pool. */
  async observeActors(request: ActorObservationRequest): Promise<ActorObservation[]> {
    return observeActors(this.ops, request);
  }

  /** {@link Backend.explainJob}: one statement (sql/explain.sql) on the dispatcher pool. */
  async explainJob(request: ExplainFactsRequest): Promise<JobExplainFacts | null> {
    return explainJob(this.ops, request);
  }

  async writeBatch(w: BatchWrite, options: { connection?: ClientLike } = {}): Promise<BatchWriteResult> {
    const out = options.connection
      ? await batches.writeBatchIn(this.ops, executorFromClient(options.connection), w)
      : await this.driver.transaction((tx) => batches.writeBatchIn(this.ops, tx, w));
    return { batch: out.batch, rows: out.rows, finalizer: out.finalizer };
  }

  async getBatch(batchId: string): Promise<BatchRow | null> {
    const [r] = await this.run('getBatch', [batchId]);
    return r ? batches.toBatchRow(r) : null;
  }

  async listBatches(filter: NormalizedBatchFilter): Promise<BatchPage> {
    return batches.listBatchesPage(this.ops, filter);
  }

  async batchCounts(
    batchId: string,
    excludeJobId: string | null = null,
  ): Promise<{ batch: BatchRow | null; counts: BatchCounts }> {
    return batches.batchCountsOf(this.ops, batchId, excludeJobId);
  }

  async completeStaleBatches(limit = 1000, fence?: LeaderFence): Promise<string[]> {
    return fenced(this.ops, this.announcer, fence, async (ops) =>
      (await ops.run('completeStaleBatches', [limit])).map((r) => String(r.id)),
    );
  }

  async pruneBatches(olderThanMs: number, limit = 10_000, fence?: LeaderFence): Promise<number> {
    return fenced(
      this.ops,
      this.announcer,
      fence,
      async (ops) => (await ops.run('pruneBatches', [olderThanMs, limit])).length,
    );
  }

  /** {@link Backend.ping}: `SELECT 1` on the dispatcher pool (waiting for a free connection, if any). */
  async ping(): Promise<void> {
    await this.driver.query('SELECT 1');
  }

  /** Closes every pool the backend was given (a driver over a caller's own pool leaves that pool open). */
  async close(): Promise<void> {
    const drivers = new Set([this.driver, this.claimDriver, this.settleDriver, this.heartbeatDriver]);
    for (const d of drivers) await d.close().catch(() => undefined);
  }

  // --- sub-jobs ---

  /**
   * {@link Backend.settleWithChildren}: one transaction on the backend's pool (not the settle
   * connection, which the completer's batched writes keep busy), see `pg-sub-jobs.ts`.
   */
  async settleWithChildren(
    item: Settlement,
    children: readonly EnqueueArgs[],
  ): Promise<SettleWithChildrenResult> {
    const out = await settleWithChildren(this.ops, item, children);
    const done = out.result.status !== 'noop' && isTerminal(out.result.status) ? [out.result.jobId] : [];
    void this.announcer.send({ done, wake: out.children.length > 0 });
    return out;
  }
}
