import {
  ScheduleApi,
  type CreateScheduleOptions,
  type ScheduleHandle,
  type UpdateScheduleOptions,
} from './schedules.js';
import type { ScheduleRecord } from '../backend/schedule-types.js';
import { ClientMetrics } from '../obs/metrics/client-metrics.js';
import type { Redis } from 'ioredis';
import type pg from 'pg';

import type { ActorRef, AnyActor } from '../core/actor.js';
import type { Backend, JobPage } from '../backend/backend.js';
import { normalizeJobFilter, type JobFilter } from '../backend/job-filter.js';
import {
  checkBulkOptions,
  checkRetryableFilter,
  type CancelWhereOptions,
  type CancelWherePreview,
  type RetryWhereOptions,
  type RetryWherePreview,
} from './bulk-options.js';
import { openReloadableClientBackend } from '../backend/open-backend.js';
import type {
  BulkCancelResult,
  BulkRetryResult,
  CancelResult,
  EnqueueArgs,
  EventRow,
  JobRow,
} from '../backend/types.js';
import type { Clock } from '../core/clock.js';
import { SystemClock } from '../core/clock.js';
import type { Driver } from '../db/driver.js';
import { validateConnectionString } from '../db/connection-string.js';
import { TASKQ_SESSION_SETTINGS } from '../db/session-settings.js';
import type { PgCredentialProvider } from '../credentials/credential-types.js';
import { makePgPoolFactory } from '../credentials/pg-pool-factory.js';
import { resolveCredentialProvider } from '../credentials/provider-reference.js';
import type { ReloadableResource } from '../credentials/reloadable-resource.js';
import { toMs, type Duration } from '../core/duration.js';
import { EmptyFilterError, TaskQStateError } from '../errors/client-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import { isUuid } from '../core/ids.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { checkInt, checkStorableText } from '../core/text-checks.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import { EnqueueTracing } from '../obs/tracing/enqueue-tracing.js';
import { SPAN_ATTRIBUTES } from '../obs/tracing/span-attributes.js';
import { JobNotificationFanout } from '../progress/job-notification-fanout.js';
import type { JobEvent, ProgressEvent } from '../progress/progress-event.js';
import { RedisLiveProgress } from '../progress/redis-live-progress.js';
import { createOwnedRedis } from '../progress/redis-progress-publisher.js';
import type { RedisCredentialProvider } from '../credentials/credential-types.js';
import { ReloadableRedisCredentials } from '../credentials/reloadable-redis-credentials.js';
import type { Schema } from '../core/schema-validation.js';
import {
  loadTaskQSettings,
  type TaskQSettings,
  type TaskQSettingsInput,
} from '../settings/taskq-settings.js';
import { checkActorRef, type BatchOptions, type EnqueueItem, type FastBatchOptions } from './batch-items.js';
import { BatchEnqueuer } from './batch-enqueuer.js';
import { enqueueBatchStreaming, type StreamingBatchOptions } from './batch-streaming.js';
import { completionOf, type BatchCompletionStatus, type BatchHandle } from './batch-handle.js';
import { normalizeBatchFilter, type BatchFilter } from './batch-filter.js';
import { waitForBatchOn, type WaitForBatchOptions } from './wait-for-batch.js';
import type { BatchPage, BatchRow } from '../backend/batch-types.js';
import { ActorCapacityCache, DEFAULT_CAPACITY_CACHE_TTL_MS } from './capacity-cache.js';
import { ActorsClient } from './actors-client.js';
import { buildEnqueueArgs, type EnqueueOptions } from './enqueue-options.js';
import { JobHandle } from './job-handle.js';
import { jobStream, type JobStreamOptions } from './job-stream.js';
import { DEFAULT_PAYLOAD_MAX_BYTES, PAYLOAD_MAX_BYTES_RANGE, payloadJson } from './payload-json.js';
import { progressStream, type ProgressStreamOptions } from './progress-stream.js';
import { watchReclaims, type WatchReclaimsOptions } from './reclaim-watcher.js';
import type { StreamSources } from './stream-sources.js';
import { waitForTerminal } from './wait-for-terminal.js';
import { explainJob } from './job-explainer.js';
import type { ExplainOptions, JobExplanation } from './job-explanation.js';
import { checkResolvedSettingKeys } from '../settings/load-worker-settings.js';
import { unknownEnvVarWarnings } from '../settings/unknown-env-vars.js';

/** Default byte bound of idempotency keys and scopes. */
export const DEFAULT_IDEMPOTENCY_KEY_MAX_BYTES = 1024;

/** Options of `new TaskQ(backend, options)`: everything but where the jobs are stored. */
export interface TaskQClientOptions {
  /** Clock for client-side timing (the capacity cache's TTL). Default: the system clock. */
  clock?: Clock;
  /** Logger (pino-compatible). Default: silent. */
  logger?: Logger;
  /** Staleness bound of stored `max_pending` values. Default 5 s. */
  capacityCacheTtl?: Duration;
  /** Byte bound of idempotency keys and scopes (1-2048). Default 1024. */
  idempotencyKeyMaxBytes?: number;
  /** Bound on a payload's JSON, in UTF-8 bytes (1 KiB-64 MiB). Default 1 MiB. */
  payloadMaxBytes?: number;
  /**
   * Live progress over Redis for `stream()` and `progressStream()` (every report, as it happens).
   * Default: none — streams follow Postgres (LISTEN and polling). Closed by `close()`.
   */
  liveProgress?: RedisLiveProgress | null;
  /** `close()` also closes the backend. Default false: the backend is yours. */
  ownsBackend?: boolean;
  /**
   * What {@link TaskQ.reloadCredentials} rebuilds, in order (a factory-built pool, an owned Redis
   * client). Default: nothing (`TaskQ.open` fills it for a pool factory or credential provider).
   */
  reloadables?: readonly ReloadableResource[];
  /**
   * A `send <queue>` span (OpenTelemetry, through the global tracer provider) around every enqueue,
   * its ids stored on the job (docs/tracing.md). Default true; false calls no tracer at all.
   */
  otelEnabled?: boolean;
}

/** Where `TaskQ.open()` gets its database connections. Give exactly one of `dsn`, `pool`, `poolFactory`, `driver`. */
export interface TaskQOptions {
  /** Connection string; TaskQ builds and owns a pool (closed by `close()`). */
  dsn?: string;
  /** Your own `pg.Pool`; TaskQ never closes it. */
  pool?: pg.Pool;
  /**
   * Builds a pool (e.g. `makePgPoolFactory`); the pool is TaskQ-owned, and
   * {@link TaskQ.reloadCredentials} calls the factory again to replace it.
   */
  poolFactory?: () => Promise<pg.Pool>;
  /**
   * Authenticates the pool built from `dsn` through this provider instead of a password in the
   * DSN: sugar for `poolFactory: makePgPoolFactory(dsn, provider, { maxSize: maxPoolSize })`.
   * Needs `dsn`; excludes `pool` and `poolFactory`. See docs/credentials.md.
   */
  pgCredentialProvider?: PgCredentialProvider;
  /** A ready driver (advanced: the embedded PGlite driver). Owned by TaskQ. */
  driver?: Driver;
  /** Schema holding TaskQ's tables. Default `taskq`. */
  schema?: string;
  /** Size of the pool TaskQ builds from `dsn`. Default 5. */
  maxPoolSize?: number;
  /** Byte bound of idempotency keys and scopes (1-2048). Default 1024. */
  idempotencyKeyMaxBytes?: number;
  /** Bound on a payload's JSON, in UTF-8 bytes (1 KiB-64 MiB). Default 1 MiB. */
  payloadMaxBytes?: number;
  /** Staleness bound of stored `max_pending` values. Default 5 s. */
  capacityCacheTtl?: Duration;
  /** Logger (pino-compatible). Default: silent. */
  logger?: Logger;
  /**
   * Redis for live progress (`progressStream()`, `stream()`): TaskQ builds and owns the client
   * (closed by `close()`). Give at most one of `redisUrl` and `redis`. Default: none (Postgres only).
   */
  redisUrl?: string;
  /** Your own ioredis client for live progress; TaskQ never closes it (it subscribes on a duplicate it owns). */
  redis?: Redis;
  /**
   * Authenticates the Redis client built from `redisUrl` (which then carries no credentials) with
   * this provider at every (re)connect; {@link TaskQ.reloadCredentials} re-authenticates it. Needs
   * `redisUrl`. See docs/credentials.md.
   */
  redisCredentialProvider?: RedisCredentialProvider;
  /** `send <queue>` spans around enqueues (docs/tracing.md). Default true; false calls no tracer. */
  otelEnabled?: boolean;
}

const CLIENT_OPTION_KEYS: readonly string[] = [
  'clock',
  'logger',
  'capacityCacheTtl',
  'idempotencyKeyMaxBytes',
  'payloadMaxBytes',
  'liveProgress',
  'ownsBackend',
  'otelEnabled',
  'reloadables',
];

const OPEN_OPTION_KEYS: readonly string[] = [
  'dsn',
  'pool',
  'poolFactory',
  'pgCredentialProvider',
  'driver',
  'schema',
  'maxPoolSize',
  'idempotencyKeyMaxBytes',
  'payloadMaxBytes',
  'capacityCacheTtl',
  'logger',
  'redisUrl',
  'redis',
  'redisCredentialProvider',
  'otelEnabled',
];

/**
 * The connection source `openClientBackend` takes: `pgCredentialProvider` becomes the pool factory
 * it is sugar for, after checking it comes with `dsn` and without `pool` / `poolFactory`.
 */
function clientPoolSource(o: TaskQOptions): Omit<TaskQOptions, 'pgCredentialProvider'> {
  const { pgCredentialProvider: provider, ...rest } = o;
  if (provider === undefined || provider === null) return rest;
  const field = 'TaskQ.open.pgCredentialProvider';
  if (typeof provider !== 'object' || typeof provider.getPgCredential !== 'function')
    throw new InvalidArgumentError(field, provider, 'must have a getPgCredential() method');
  if (rest.pool !== undefined || rest.poolFactory !== undefined || rest.driver !== undefined)
    throw new InvalidArgumentError(
      field,
      '(a provider)',
      'authenticates the pool TaskQ builds from dsn: give it with dsn, not with pool, poolFactory or driver',
    );
  if (rest.dsn === undefined || rest.dsn === null)
    throw new InvalidArgumentError(
      field,
      '(a provider)',
      'needs dsn (the server to connect to, without a password)',
    );
  const dsn = validateConnectionString(rest.dsn, 'TaskQ.open.dsn');
  const { dsn: _dsn, ...others } = rest;
  return {
    ...others,
    poolFactory: makePgPoolFactory(dsn, provider, {
      maxSize: rest.maxPoolSize ?? 5,
      applicationName: 'taskq',
      sessionSettings: TASKQ_SESSION_SETTINGS,
    }),
  };
}

/** What {@link TaskQ.fromSettings} and {@link TaskQ.fromEnv} take besides the settings. */
export type TaskQExtraOptions = Pick<
  TaskQOptions,
  'maxPoolSize' | 'capacityCacheTtl' | 'logger' | 'otelEnabled'
>;

/**
 * The client: enqueue, read, wait, stream, cancel. It works over any {@link Backend}: open one on
 * Postgres with {@link TaskQ.open}, or construct one over the in-memory backend in tests. Open one
 * per process and share it.
 *
 * ```ts
 * const tq = await TaskQ.open({ dsn: process.env.TASKQ_PG_DSN });
 * try {
 *   const job = await tq.enqueue(sendEmail, { to: 'a@example.com' });
 * } finally {
 *   await tq.close();
 * }
 *
 * // In tests:
 * const tq = new TaskQ(new InMemoryBackend({ clock }));
 * ```
 */
export class TaskQ implements AsyncDisposable {
  /** The storage this client works on. */
  readonly backend: Backend;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly capacity: ActorCapacityCache;
  private readonly idempotencyMaxBytes: number;
  private readonly payloadMaxBytes: number;
  private readonly warnedUniqueFor = new Set<string>();
  private readonly notifications: JobNotificationFanout;
  private readonly liveProgress: RedisLiveProgress | null;
  private readonly ownsBackend: boolean;
  private readonly closing = new AbortController();
  private readonly sources: StreamSources;
  /** Null with `otelEnabled: false`: enqueues then never call a tracer. */
  private readonly tracing: EnqueueTracing | null;
  /** Null with `otelEnabled: false`: nothing is counted. */
  private readonly metrics: ClientMetrics | null;
  private readonly schedules: ScheduleApi;
  /** Actor configuration (`actor_config`): list, get, set capacity, deregister. */
  readonly actors: ActorsClient;
  private readonly batches: BatchEnqueuer;
  private closed = false;
  private readonly reloadables: readonly ReloadableResource[];

  /**
   * A client over `backend` (for example `new InMemoryBackend()` from `taskq/testing`). The backend
   * stays yours unless `ownsBackend` is set; for Postgres, {@link TaskQ.open} builds it for you.
   */
  constructor(backend: Backend, options: TaskQClientOptions = {}) {
    if (backend === null || typeof backend !== 'object' || typeof backend.enqueue !== 'function')
      throw new InvalidArgumentError('TaskQ.backend', backend, 'must be a Backend (e.g. InMemoryBackend)');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('TaskQ.options', options, 'must be an object');
    checkKnownKeys(options, CLIENT_OPTION_KEYS, 'TaskQ.options', 'an option of new TaskQ()');
    this.backend = backend;
    this.clock = options.clock ?? new SystemClock();
    this.logger = options.logger ?? silentLogger;
    this.idempotencyMaxBytes = checkInt(
      options.idempotencyKeyMaxBytes ?? DEFAULT_IDEMPOTENCY_KEY_MAX_BYTES,
      'TaskQ.idempotencyKeyMaxBytes',
      1,
      2048,
    );
    this.payloadMaxBytes = checkInt(
      options.payloadMaxBytes ?? DEFAULT_PAYLOAD_MAX_BYTES,
      'TaskQ.payloadMaxBytes',
      PAYLOAD_MAX_BYTES_RANGE.min,
      PAYLOAD_MAX_BYTES_RANGE.max,
    );
    this.capacity = new ActorCapacityCache(
      backend,
      this.clock,
      options.capacityCacheTtl === undefined
        ? DEFAULT_CAPACITY_CACHE_TTL_MS
        : toMs(options.capacityCacheTtl, 'TaskQ.capacityCacheTtl', 'nonNegative'),
      this.logger,
    );
    this.notifications = new JobNotificationFanout(backend, this.logger);
    this.liveProgress = options.liveProgress ?? null;
    this.ownsBackend = options.ownsBackend ?? false;
    this.reloadables = [...(options.reloadables ?? [])];
    if (options.otelEnabled !== undefined && typeof options.otelEnabled !== 'boolean')
      throw new InvalidArgumentError('TaskQ.otelEnabled', options.otelEnabled, 'must be a boolean');
    this.tracing = options.otelEnabled === false ? null : new EnqueueTracing();
    this.metrics = options.otelEnabled === false ? null : new ClientMetrics();
    this.schedules = new ScheduleApi(backend, this.payloadMaxBytes);
    this.actors = new ActorsClient(backend, () => this.capacity.invalidate());
    this.batches = new BatchEnqueuer({
      backend,
      logger: this.logger,
      capacity: this.capacity,
      payloadMaxBytes: this.payloadMaxBytes,
      idempotencyMaxBytes: this.idempotencyMaxBytes,
      tracing: this.tracing,
      metrics: this.metrics,
      handleOf: (row, existing, schema) => new JobHandle(this, row, existing, schema),
      warnUniqueFor: (ref, args) => this.warnUniqueForWithoutIdentity(ref, args),
    });
    this.sources = {
      backend,
      logger: this.logger,
      redis: this.liveProgress,
      notifications: this.notifications,
      closed: this.closing.signal,
    };
  }

  /**
   * Opens a client on Postgres. Every option is checked before anything connects; connections are
   * made lazily, on the first call that needs one.
   */
  static async open(options: TaskQOptions): Promise<TaskQ> {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('TaskQ.open', options, 'options must be an object');
    checkKnownKeys(options, OPEN_OPTION_KEYS, 'TaskQ.open', 'an option of TaskQ.open()');
    const logger = options.logger ?? silentLogger;
    const capacityCacheTtl =
      options.capacityCacheTtl === undefined
        ? undefined
        : toMs(options.capacityCacheTtl, 'TaskQ.open.capacityCacheTtl', 'nonNegative');
    // Checked again by the constructor; checked here too so that nothing is built for bad options.
    if (options.idempotencyKeyMaxBytes !== undefined)
      checkInt(options.idempotencyKeyMaxBytes, 'TaskQ.open.idempotencyKeyMaxBytes', 1, 2048);
    if (options.payloadMaxBytes !== undefined)
      checkInt(
        options.payloadMaxBytes,
        'TaskQ.open.payloadMaxBytes',
        PAYLOAD_MAX_BYTES_RANGE.min,
        PAYLOAD_MAX_BYTES_RANGE.max,
      );
    if (options.otelEnabled !== undefined && typeof options.otelEnabled !== 'boolean')
      throw new InvalidArgumentError('TaskQ.open.otelEnabled', options.otelEnabled, 'must be a boolean');
    const redis = TaskQ.redisOf(options, logger);
    const source = clientPoolSource(options);
    const { backend, reloadables } = await openReloadableClientBackend({
      ...source,
      field: 'TaskQ.open',
      logger,
    });
    return new TaskQ(backend, {
      reloadables,
      logger,
      ...(capacityCacheTtl === undefined ? {} : { capacityCacheTtl }),
      ...(options.idempotencyKeyMaxBytes === undefined
        ? {}
        : { idempotencyKeyMaxBytes: options.idempotencyKeyMaxBytes }),
      ...(options.payloadMaxBytes === undefined ? {} : { payloadMaxBytes: options.payloadMaxBytes }),
      liveProgress: redis
        ? new RedisLiveProgress(redis.client, options.schema ?? 'taskq', {
            owned: redis.owned,
            logger,
            credentials: redis.credentials,
          })
        : null,
      ownsBackend: true,
      ...(options.otelEnabled === undefined ? {} : { otelEnabled: options.otelEnabled }),
    });
  }

  /**
   * Opens a client from loaded {@link TaskQSettings} (`pgDsn`, `schema`, `redisUrl`,
   * `idempotencyKeyMaxBytes`, `payloadMaxBytes`); `options` adds what settings cannot express (logger, pool size,
   * cache TTL). `pgDsn` must be set.
   */
  static async fromSettings(settings: TaskQSettings, options: TaskQExtraOptions = {}): Promise<TaskQ> {
    if (settings === null || typeof settings !== 'object')
      throw new InvalidArgumentError('TaskQ.fromSettings', settings, 'settings must be an object');
    // A hand-built or edited object (`{ pgDsn, schem }`) would otherwise open on the defaults.
    checkResolvedSettingKeys(settings, 'client settings');
    if (settings.pgDsn === null || settings.pgDsn === undefined)
      throw new InvalidArgumentError(
        'TaskQSettings.pgDsn',
        settings.pgDsn,
        'must be set (TASKQ_PG_DSN) to open a client from settings',
      );
    return TaskQ.open({
      ...options,
      dsn: settings.pgDsn,
      schema: settings.schema,
      idempotencyKeyMaxBytes: settings.idempotencyKeyMaxBytes,
      payloadMaxBytes: settings.payloadMaxBytes,
      ...(settings.redisUrl === null ? {} : { redisUrl: settings.redisUrl }),
      ...(settings.pgCredentialProvider === null || settings.pgCredentialProvider === undefined
        ? {}
        : {
            pgCredentialProvider: await resolveCredentialProvider(
              settings.pgCredentialProvider,
              'pg',
              'pgCredentialProvider',
            ),
          }),
      ...(settings.redisCredentialProvider === null || settings.redisCredentialProvider === undefined
        ? {}
        : {
            redisCredentialProvider: await resolveCredentialProvider(
              settings.redisCredentialProvider,
              'redis',
              'redisCredentialProvider',
            ),
          }),
    });
  }

  /**
   * Opens a client configured by `TASKQ_*` variables of `env` (pass `process.env`; the library never
   * reads it by itself), with `overrides` winning over them. Invalid values throw one
   * `SettingsError` listing every problem, before anything connects. A `TASKQ_*` variable that no
   * part of TaskQ reads (`TASKQ_SCHEMA` for `TASKQ_SCHEMA_NAME`) is logged as `settings-warning`
   * through `logger`, with the closest known name.
   */
  static async fromEnv(
    env: Record<string, string | undefined>,
    options: TaskQExtraOptions & { overrides?: TaskQSettingsInput } = {},
  ): Promise<TaskQ> {
    const { overrides, ...extra } = options;
    const tq = await TaskQ.fromSettings(loadTaskQSettings({ env, overrides }), extra);
    for (const warning of unknownEnvVarWarnings(env)) tq.logger.warn({ warning }, 'settings-warning');
    return tq;
  }

  private static redisOf(
    options: TaskQOptions,
    logger: Logger,
  ): { client: Redis; owned: boolean; credentials: ReloadableRedisCredentials | null } | null {
    const hasUrl = options.redisUrl !== undefined && options.redisUrl !== null;
    const hasClient = options.redis !== undefined && options.redis !== null;
    if (hasUrl && hasClient)
      throw new InvalidArgumentError(
        'TaskQ.open',
        'redisUrl, redis',
        'give at most one of redisUrl or redis',
      );
    if (hasClient) {
      const r = options.redis as Partial<Redis>;
      if (typeof r !== 'object' || typeof r.duplicate !== 'function' || typeof r.publish !== 'function')
        throw new InvalidArgumentError('TaskQ.open.redis', '(object)', 'must be an ioredis client');
      return { client: options.redis!, owned: false, credentials: null };
    }
    const provider = options.redisCredentialProvider;
    if (provider !== undefined && provider !== null && !hasUrl)
      throw new InvalidArgumentError(
        'TaskQ.open.redisCredentialProvider',
        '(a provider)',
        'authenticates the Redis client TaskQ builds from redisUrl: give it with redisUrl, not with redis',
      );
    if (!hasUrl) return null;
    const credentials =
      provider === undefined || provider === null
        ? null
        : new ReloadableRedisCredentials({ name: 'redis:client', provider, logger });
    // Lazy: nothing connects until a stream subscribes (on a duplicate).
    return {
      client: createOwnedRedis(options.redisUrl, 'TaskQ.open.redisUrl', {
        connectionName: 'taskq',
        lazyConnect: true,
        credentials,
      }),
      owned: true,
      credentials,
    };
  }

  private checkOpen(): void {
    if (this.closed) throw new TaskQStateError('this TaskQ is closed; open a new one with TaskQ.open()');
  }

  /** The Redis client live progress uses (yours, or the one built from `redisUrl`), or null. */
  get redis(): Redis | null {
    return this.liveProgress?.redis ?? null;
  }

  /** Drops the cached stored `max_pending` values (tests, tooling that just changed them). */
  invalidateActorCapacityCache(): void {
    this.capacity.invalidate();
  }

  /**
   * Enqueues one job and returns its handle. Gates apply in order: `uniqueFor` (returns the
   * existing job), singleton, `maxPending`, idempotency key (returns the existing job of this
   * actor). `maxPending` and `uniqueFor` hold exactly under any number of concurrent callers.
   * @throws PayloadValidationError (nothing written), InvalidArgumentError, MaxPendingExceededError,
   *   SingletonCollisionError, IdempotencyKeyConflict (the key is another actor's job; nothing
   *   written), SchemaNotMigratedError
   */
  async enqueue<P, R, I>(
    ref: ActorRef<P, R, I>,
    payload: NoInfer<I>,
    options: EnqueueOptions = {},
  ): Promise<JobHandle<R>> {
    this.checkOpen();
    checkActorRef(ref, 'enqueue.actor');
    const r = ref as ActorRef<unknown, unknown>;
    const json = await payloadJson(r, payload, 'payload', this.payloadMaxBytes);
    const maxPending = await this.capacity.effectiveMaxPending(r.name, r.maxPending);
    const args = buildEnqueueArgs(r, json, options, {
      maxPending,
      idempotencyMaxBytes: this.idempotencyMaxBytes,
    });
    this.warnUniqueForWithoutIdentity(r, args);
    const write = (): Promise<JobRow> =>
      this.refusals(
        options.connection
          ? this.backend.enqueueWithConn(options.connection, args)
          : this.backend.enqueue(args),
        'single',
      );
    const row =
      this.tracing === null
        ? await write()
        : await this.tracing.send([args], { [SPAN_ATTRIBUTES.actor]: r.name }, write, (span, written) => {
            span.setAttribute(SPAN_ATTRIBUTES.messageId, written.id);
            if (written.id !== args.id) span.setAttribute(SPAN_ATTRIBUTES.existing, true);
          });
    if (row.id === args.id)
      this.logger.debug({ jobId: row.id, actor: row.actor, queue: row.queue }, 'job-enqueued');
    return new JobHandle<R>(this, row, row.id !== args.id, ref.resultSchema);
  }

  private warnUniqueForWithoutIdentity(ref: ActorRef<unknown, unknown>, args: EnqueueArgs): void {
    if (ref.uniqueForMs !== null && args.identityKey === null && !this.warnedUniqueFor.has(ref.name)) {
      this.warnedUniqueFor.add(ref.name);
      this.logger.warn({ actor: ref.name }, 'unique-for-without-identity-key');
    }
  }

  /**
   * Enqueues up to 1000 jobs. Every payload and option is validated before anything is written.
   * The gates apply per item as for {@link enqueue}: `uniqueFor` returns the existing job (or the
   * job of an earlier item with the same identity key); `maxPending` is checked per actor as
   * `existing + items > limit` and refuses the whole batch; an idempotency key returns the
   * existing job (of an earlier item too), or, when another actor's job holds it, refuses the
   * whole batch with `IdempotencyKeyConflict`. Each job carries `metadata.batch_id`.
   *
   * With `failurePolicy` (e.g. `new AbortBatchAfter(5)`) or `finalizer`, the batch gets a row,
   * written in the same transaction as its children and its finalizer (yours with `connection`):
   * its counters follow every child's status change in that change's transaction, the policy
   * aborts it (cancelling its pending and scheduled children), and it completes when its last child
   * ends. The finalizer runs at once and is not a child; see `waitForBatch` and docs/batches.md.
   */
  async enqueueBatch(items: readonly EnqueueItem[], options: BatchOptions = {}): Promise<BatchHandle> {
    this.checkOpen();
    return this.batches.enqueueBatch(items, options);
  }

  /**
   * One batch from an iterable or async iterable of any length, written `chunkSize` (≤ 1000) items
   * at a time, each chunk validated first; `jobHandles` is empty, `size` counts the items written.
   * See batch-streaming.ts and docs/batches.md. @throws StreamingBatchError once items were written
   */
  async enqueueBatchStreaming(
    items: Iterable<EnqueueItem> | AsyncIterable<EnqueueItem>,
    options: StreamingBatchOptions = {},
  ): Promise<BatchHandle> {
    this.checkOpen();
    return enqueueBatchStreaming(this.batches, items, options);
  }

  /** `write`, with a `maxPending` refusal counted (`taskq.backpressure.errors`) on its way out. */
  private refusals<T>(write: Promise<T>, kind: 'single' | 'batch' | 'batch_fast'): Promise<T> {
    return this.batches.refusals(write, kind);
  }

  /**
   * Bulk import: up to 50,000 jobs through COPY, returning how many were written (all of them).
   * Every payload and option is validated before anything is written. `maxPending` is checked as
   * in {@link enqueueBatch} (the whole batch, or nothing). Unlike {@link enqueueBatch} it returns
   * no handles and has no conflict handling: an idempotency key already stored, or repeated in
   * `items`, refuses the whole batch with `DuplicateIdempotencyKeyError`, and an item with a
   * `uniqueFor` identity key is refused with `InvalidArgumentError`; nothing is written. Each job
   * carries `metadata.batch_id` (`options.batchId`, or a new UUIDv7) to find them again with
   * `list`. With `connection`, the jobs commit or roll back with the caller's transaction.
   */
  async enqueueBatchFast(items: readonly EnqueueItem[], options: FastBatchOptions = {}): Promise<number> {
    this.checkOpen();
    return this.batches.enqueueBatchFast(items, options);
  }

  /** A batch's row (created with a failure policy or a finalizer), or null. */
  async getBatch(batchId: string): Promise<BatchRow | null> {
    this.checkOpen();
    if (!isUuid(batchId)) throw new InvalidArgumentError('batchId', batchId, 'must be a UUID');
    return this.backend.getBatch(batchId.toLowerCase());
  }

  /**
   * One page of batch rows, newest first; pass `nextCursor` back as `cursor` for the next.
   * @throws InvalidArgumentError for an unknown field, a limit outside 0–1,000 or a foreign cursor
   */
  async listBatches(filter: BatchFilter = {}): Promise<BatchPage> {
    this.checkOpen();
    return this.backend.listBatches(normalizeBatchFilter(filter));
  }

  /**
   * A batch's children by status (one round trip), with or without a batch row; a batch id no job
   * carries counts zero children.
   */
  async batchStatus(batchId: string): Promise<BatchCompletionStatus> {
    this.checkOpen();
    if (!isUuid(batchId)) throw new InvalidArgumentError('batchId', batchId, 'must be a UUID');
    return completionOf((await this.backend.batchCounts(batchId.toLowerCase())).counts);
  }

  /**
   * Waits for a batch's children to end — typically in its finalizer, where the default snooze mode
   * throws `Snooze` while children run (the finalizer comes back later without using an attempt).
   * Outside a handler, pass `snoozeViaException: false` to block instead. See
   * {@link waitForBatchOn} for the decision table and docs/batches.md for the pattern.
   * @throws Snooze, BatchAbortedError, EmptyBatchError, InvalidArgumentError
   */
  async waitForBatch(batchId: string, options: WaitForBatchOptions = {}): Promise<BatchCompletionStatus> {
    this.checkOpen();
    return waitForBatchOn(this.backend, this.logger, batchId, options);
  }

  /** A handle for an existing job, or null. Pass the actor to type the handle's result. */
  async get<R = unknown>(jobId: string, ref?: ActorRef<unknown, R>): Promise<JobHandle<R> | null> {
    const row = await this.getRow(jobId);
    return row ? new JobHandle<R>(this, row, false, (ref?.resultSchema ?? null) as Schema<R> | null) : null;
  }

  /** The job's row, or null. */
  async getRow(jobId: string): Promise<JobRow | null> {
    this.checkOpen();
    if (!isUuid(jobId)) throw new InvalidArgumentError('jobId', jobId, 'must be a UUID');
    return this.backend.get(jobId.toLowerCase());
  }

  /**
   * One page of jobs matching the filter; pass `nextCursor` back as `cursor` for the next page.
   * @throws InvalidArgumentError for an unknown filter field (with the nearest known one), a
   *   `limit` above 1,000, or a cursor `list()` did not produce
   */
  async list(filter: JobFilter = {}): Promise<JobPage> {
    this.checkOpen();
    return this.backend.listJobs(normalizeJobFilter(filter, 'list'));
  }

  /** Pending + scheduled + running jobs on the given queues. */
  async countActiveJobs(queues: readonly string[]): Promise<number> {
    this.checkOpen();
    return this.backend.countActiveJobs(queues);
  }

  /**
   * Creates a cron schedule for `actor` (a ref, or an actor's name: then the static payload is
   * validated at fire time only). Its first slot comes from the database clock. See docs/cron.md.
   * @throws InvalidArgumentError (expression, zone, strategy, both payload sources, …; nothing
   *   written), PayloadValidationError, ScheduleExistsError
   */
  createSchedule(
    actor: AnyActor | string,
    expression: string,
    options: CreateScheduleOptions = {},
  ): Promise<ScheduleHandle> {
    this.checkOpen();
    return this.schedules.create(actor, expression, options);
  }

  /** Schedules, by actor and name; filter by `actor` and `enabled`. */
  listSchedules(filter: { actor?: string | AnyActor; enabled?: boolean } = {}): Promise<ScheduleRecord[]> {
    this.checkOpen();
    return this.schedules.list(filter);
  }

  /** A schedule's handle, or null when there is none with this id. */
  getSchedule(id: string): Promise<ScheduleHandle | null> {
    this.checkOpen();
    return this.schedules.get(id);
  }

  /**
   * Changes a schedule: a new expression is re-anchored on the database clock in the stored zone;
   * enabling clears the failure count and the last error.
   * @throws ScheduleNotFoundError, InvalidArgumentError
   */
  updateSchedule(id: string, change: UpdateScheduleOptions): Promise<ScheduleRecord> {
    this.checkOpen();
    return this.schedules.update(id, change);
  }

  /** Deletes a schedule and its fire history. Idempotent: false when there was none. */
  deleteSchedule(id: string): Promise<boolean> {
    this.checkOpen();
    return this.schedules.delete(id);
  }

  /**
   * Cancels a job: pending or scheduled jobs end `cancelled` at once; a running job's handler sees
   * `ctx.signal` abort (and is escalated if it ignores it). Terminal jobs are left alone.
   * @throws JobNotFoundError
   */
  async cancel(jobId: string, reason?: string | null): Promise<CancelResult> {
    this.metrics?.cancelRequested('job');
    const before = await this.getRow(jobId);
    if (!before) throw new JobNotFoundError(jobId);
    if (reason !== undefined && reason !== null && typeof reason !== 'string') {
      throw new InvalidArgumentError('cancel.reason', reason, 'must be a string');
    }
    if (typeof reason === 'string') checkStorableText(reason, 'cancel.reason');
    const initiated = await this.backend.writeCancelRequest(before.id, reason ?? null);
    const after = await this.backend.get(before.id);
    if (!after) throw new TaskQStateError(`job ${jobId} vanished while being cancelled`);
    return {
      jobId: before.id,
      previousStatus: before.status,
      newStatus: after.status,
      cancellationInitiated: initiated,
    };
  }

  /**
   * Cancels every active job matching the filter in one set-based statement: pending and scheduled
   * jobs end `cancelled` at once, running ones get the cooperative cancel (their handler's
   * `ctx.signal` aborts). With `{ dryRun: true }` it changes nothing and returns how many jobs it
   * would change now. The filter's `orderBy` is ignored; `limit` and `cursor` are refused (a bulk
   * cancel is not paginated).
   * @throws EmptyFilterError when the filter has no predicate, unless `allowEmptyFilter` is set;
   *   InvalidArgumentError for an unknown filter field or option (with the nearest known one)
   */
  async cancelWhere(
    filter: JobFilter,
    reason: string | null | undefined,
    options: CancelWhereOptions & { dryRun: true },
  ): Promise<CancelWherePreview>;
  async cancelWhere(
    filter: JobFilter,
    reason?: string | null,
    options?: CancelWhereOptions & { dryRun?: false },
  ): Promise<BulkCancelResult>;
  async cancelWhere(
    filter: JobFilter,
    reason?: string | null,
    options?: CancelWhereOptions,
  ): Promise<BulkCancelResult | CancelWherePreview>;
  async cancelWhere(
    filter: JobFilter,
    reason?: string | null,
    options: CancelWhereOptions = {},
  ): Promise<BulkCancelResult | CancelWherePreview> {
    this.checkOpen();
    const f = normalizeJobFilter(filter, 'cancelWhere');
    checkBulkOptions(options, 'cancelWhere');
    if (!f.hasPredicates && !options.allowEmptyFilter) throw new EmptyFilterError();
    if (reason !== undefined && reason !== null) {
      if (typeof reason !== 'string')
        throw new InvalidArgumentError('cancelWhere.reason', reason, 'must be a string');
      checkStorableText(reason, 'cancelWhere.reason');
    }
    if (options.dryRun) {
      const counts = await this.backend.previewCancelWhere(f);
      return { dryRun: true, ...counts, totalAffected: counts.cancelledDirectly + counts.cancelRequested };
    }
    this.metrics?.cancelRequested('where');
    return this.backend.cancelWhere(f, reason ?? null);
  }

  /**
   * Sends every failed, crashed, cancelled or abandoned job matching the filter back to `pending`
   * with a fresh attempt budget, as {@link retryJob} sends one, in one statement: after an outage,
   * the jobs it failed. Other statuses in the filter are refused (a retry of them would do
   * nothing); with no status in it, every retryable status is meant. With `{ dryRun: true }` it
   * changes nothing and returns how many jobs it would retry now. The filter's `orderBy` is
   * ignored; `limit` and `cursor` are refused (a bulk retry is not paginated).
   * @throws EmptyFilterError when the filter has no predicate, unless `allowEmptyFilter` is set;
   *   InvalidArgumentError for an unknown filter field or option, or a status that cannot be
   *   retried; SingletonCollisionError when a retried singleton job would join another active job
   *   of its actor (nothing is retried)
   */
  async retryWhere(
    filter: JobFilter,
    options: RetryWhereOptions & { dryRun: true },
  ): Promise<RetryWherePreview>;
  async retryWhere(
    filter: JobFilter,
    options?: RetryWhereOptions & { dryRun?: false },
  ): Promise<BulkRetryResult>;
  async retryWhere(
    filter: JobFilter,
    options?: RetryWhereOptions,
  ): Promise<BulkRetryResult | RetryWherePreview>;
  async retryWhere(
    filter: JobFilter,
    options: RetryWhereOptions = {},
  ): Promise<BulkRetryResult | RetryWherePreview> {
    this.checkOpen();
    const f = normalizeJobFilter(filter, 'retryWhere');
    checkBulkOptions(options, 'retryWhere');
    checkRetryableFilter(filter, f);
    if (!f.hasPredicates && !options.allowEmptyFilter) throw new EmptyFilterError('retryWhere');
    if (options.dryRun) return { dryRun: true, retried: await this.backend.previewRetryWhere(f) };
    return this.backend.retryWhere(f);
  }

  /**
   * Why the job is not running, from the database's current state: typed reasons, most decisive
   * first (docs/explain.md). Null when there is no such job, as for {@link get}.
   * @throws InvalidArgumentError for a `jobId` that is not a UUID or a bad option
   */
  async explain(jobId: string, options?: ExplainOptions): Promise<JobExplanation | null> {
    this.checkOpen();
    return explainJob(this.backend, jobId, options);
  }

  /** Sends a failed, crashed, cancelled or abandoned job back to `pending` with a fresh attempt budget. */
  async retryJob(jobId: string): Promise<boolean> {
    this.checkOpen();
    if (!isUuid(jobId)) throw new InvalidArgumentError('jobId', jobId, 'must be a UUID');
    return this.backend.retryJob(jobId.toLowerCase());
  }

  /**
   * Resolves with the job's row once it is terminal. Wakes on the backend's job-done announcement
   * (NOTIFY) and polls as the source of truth (quickly at first, then every second).
   * @throws JobNotFoundError when the job does not exist, WaitTimeoutError after `timeoutMs`.
   */
  async waitForTerminal(jobId: string, timeoutMs: number | null = null): Promise<JobRow> {
    this.checkOpen();
    if (!isUuid(jobId)) throw new InvalidArgumentError('jobId', jobId, 'must be a UUID');
    return waitForTerminal(this.backend, this.notifications, jobId.toLowerCase(), timeoutMs);
  }

  /**
   * Every job reclaimed after its worker died, fleet-wide, in order: `for await (const e of
   * tq.watchReclaims({ afterId: saved })) { ...; saved = e.eventId }`. See `watchReclaims` in
   * `reclaim-watcher.ts` for the delivery guarantees.
   */
  watchReclaims(options: WatchReclaimsOptions = {}): AsyncGenerator<EventRow> {
    this.checkOpen();
    return watchReclaims(this.backend, this.logger, options);
  }

  /**
   * Snapshots of one job, ready to forward over SSE or WebSocket: first its current state (a
   * finished job stops there), then one per status change or progress update, the last with
   * `terminal: true`.
   *
   * ```ts
   * for await (const e of tq.stream(jobId)) sse.send(JSON.stringify(e));
   * ```
   *
   * Updates come from Redis when configured (every progress report), else from LISTEN on the
   * progress and done channels (every flush); the row is re-read at least every `pollTimeout`
   * (30 s). `progressSeq` never decreases. `break` releases the subscriptions.
   * @throws TaskQStateError when closed; JobNotFoundError (on iteration) for an unknown job.
   */
  stream(jobId: string, options?: JobStreamOptions): AsyncIterableIterator<JobEvent> {
    this.checkOpen();
    return jobStream(this.sources, jobId, options);
  }

  /**
   * Progress events of one job until the one with `terminal: true`; see
   * {@link JobHandle.progressStream}.
   */
  progressStream(jobId: string, options?: ProgressStreamOptions): AsyncIterableIterator<ProgressEvent> {
    this.checkOpen();
    return progressStream(this.sources, jobId, options);
  }

  /**
   * Rebuilds the connections this client built from a factory or credential provider, live:
   * - a pool from `poolFactory` / `pgCredentialProvider`: the factory is called again (a fresh
   *   credential; the only way to change a pool's user), the new pool must connect once, it is
   *   swapped in for every call that starts afterwards, and the old pool closes once its running
   *   statements finish (waited for at most 10 s, then left to close on its own);
   * - the Redis connections built with `redisCredentialProvider`: re-authenticated with a fresh
   *   credential (`AUTH` on the live ones; the pub/sub subscriber takes it at its next reconnect).
   *
   * Not needed for ordinary token expiry: new connections fetch a credential anyway. Each resource
   * is tried; a failure leaves that resource's current connections serving and is thrown after the
   * others were tried (an `AggregateError` when several failed).
   * @throws TaskQStateError when the client is closed, or has nothing to reload (a `dsn` without a
   *   provider, your own `pool` or `redis`, which TaskQ never replaces); the factory's, the
   *   connect's or the provider's error (`RedisCredentialRejected` for Redis)
   */
  async reloadCredentials(): Promise<void> {
    this.checkOpen();
    const redis = this.liveProgress?.credentials;
    const resources = [...this.reloadables, ...(redis ? [redis] : [])];
    if (resources.length === 0)
      throw new TaskQStateError(
        'reloadCredentials() rebuilds the connections TaskQ builds from a pool factory or credential provider: ' +
          'open the client with TaskQ.open({ poolFactory }), TaskQ.open({ dsn, pgCredentialProvider }) or ' +
          'TaskQ.open({ redisUrl, redisCredentialProvider }); a `pool` or `redis` you pass in is yours, rotate it yourself',
      );
    const errors: unknown[] = [];
    // A client reload has no time bound of its own: the signal only ends it when the client closes.
    for (const r of resources) await r.reload(this.closing.signal).catch((err) => errors.push(err));
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, 'several resources failed to reload');
  }

  /**
   * Ends open streams (they fail with `TaskQStateError`), releases the client's subscriptions and
   * closes what TaskQ owns: the backend it built (or was given with `ownsBackend`) and the Redis
   * client it built — never your pool or Redis client. Safe to call twice.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    await this.notifications.close();
    await this.liveProgress?.close();
    if (this.ownsBackend) await this.backend.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
