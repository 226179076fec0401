import type { Redis } from 'ioredis';
import type pg from 'pg';

import type { ActorRef } from '../actor.js';
import type { JobPage } from '../backend/backend.js';
import type { JobFilter } from '../backend/job-filter.js';
import { PostgresBackend } from '../backend/postgres/postgres-backend.js';
import type { BulkCancelResult, CancelResult, EventRow, JobRow } from '../backend/types.js';
import type { WatchReclaimsOptions } from './reclaim-watcher.js';
import type { Driver } from '../db/driver.js';
import { TASKQ_SESSION_SETTINGS } from '../db/session-settings.js';
import { PgDriver } from '../db/pg-driver.js';
import { validateConnectionString } from '../db/connection-string.js';
import { toMs, type Duration } from '../duration.js';
import { TaskQStateError } from '../errors/client-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import { validateSchemaName } from '../schema-name.js';
import {
  loadTaskQSettings,
  type TaskQSettings,
  type TaskQSettingsInput,
} from '../settings/taskq-settings.js';
import type { EnqueueOptions } from './enqueue-options.js';
import type { JobHandle } from './job-handle.js';
import { JobsClient, type BatchHandle, type EnqueueItem } from './jobs-client.js';
import type { JobEvent } from '../progress/progress-event.js';
import { RedisProgressSubscriber } from '../progress/redis-progress-subscriber.js';
import { closeOwnedRedis, createOwnedRedis } from '../progress/redis-progress-publisher.js';
import { jobStream, type JobStreamOptions } from './job-stream.js';
import { attachStreamTransport } from './progress-stream.js';

/** Where `TaskQ.open()` gets its database connections. Give exactly one of `dsn`, `pool`, `poolFactory`, `driver`. */
export interface TaskQOptions {
  /** Connection string; TaskQ builds and owns a pool (closed by `close()`). */
  dsn?: string;
  /** Your own `pg.Pool`; TaskQ never closes it. */
  pool?: pg.Pool;
  /** Builds a pool (e.g. with rotating credentials); the pool is TaskQ-owned. */
  poolFactory?: () => Promise<pg.Pool>;
  /** A ready driver (advanced: the embedded PGlite driver). Owned by TaskQ. */
  driver?: Driver;
  /** Schema holding TaskQ's tables. Default `taskq`. */
  schema?: string;
  /** Size of the pool TaskQ builds from `dsn`. Default 5. */
  maxPoolSize?: number;
  /** Byte bound of idempotency keys and scopes. Default 1024. */
  idempotencyKeyMaxBytes?: number;
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
}

/** What {@link TaskQ.fromSettings} and {@link TaskQ.fromEnv} take besides the settings. */
export type TaskQExtraOptions = Pick<TaskQOptions, 'maxPoolSize' | 'capacityCacheTtl' | 'logger'>;

/**
 * The Postgres-backed entry point: enqueue, read, cancel. Open one per process and share it.
 *
 * ```ts
 * await using tq = await TaskQ.open({ dsn: process.env.TASKQ_PG_DSN });
 * const h = await tq.enqueue(sendEmail, { to: 'a@example.com' });
 * ```
 */
export class TaskQ implements AsyncDisposable {
  /** The client doing the work (also usable directly). */
  readonly client: JobsClient;
  /** The Postgres backend. */
  readonly backend: PostgresBackend;
  private closed = false;
  private readonly redisClient: Redis | null;
  private readonly ownsRedis: boolean;
  private readonly subscriber: RedisProgressSubscriber | null;
  private readonly closing = new AbortController();

  private constructor(
    backend: PostgresBackend,
    client: JobsClient,
    redis: { client: Redis; owned: boolean } | null,
    logger: Logger,
  ) {
    this.backend = backend;
    this.client = client;
    this.redisClient = redis?.client ?? null;
    this.ownsRedis = redis?.owned ?? false;
    this.subscriber = redis ? new RedisProgressSubscriber(redis.client, logger) : null;
    attachStreamTransport(client, {
      redis: this.subscriber ? { subscriber: this.subscriber, schema: backend.schema } : null,
      closed: this.closing.signal,
      logger,
    });
  }

  /** Opens a client. Connections are made lazily, on the first call that needs one. */
  static async open(options: TaskQOptions): Promise<TaskQ> {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('TaskQ.open', options, 'options must be an object');
    const sources = (['dsn', 'pool', 'poolFactory', 'driver'] as const).filter(
      (k) => options[k] !== undefined && options[k] !== null,
    );
    if (sources.length !== 1) {
      throw new InvalidArgumentError(
        'TaskQ.open',
        sources.join(', ') || 'none',
        'give exactly one of dsn, pool, poolFactory or driver',
      );
    }
    if (options.dsn !== undefined) validateConnectionString(options.dsn, 'TaskQ.open.dsn');
    const schema = validateSchemaName(options.schema ?? 'taskq', 'TaskQ.open.schema');
    const logger = options.logger ?? silentLogger;
    const redis = TaskQ.redisOf(options);
    let driver: Driver;
    if (options.driver) driver = options.driver;
    else if (options.pool) driver = new PgDriver({ pool: options.pool });
    else if (options.poolFactory) {
      if (typeof options.poolFactory !== 'function')
        throw new InvalidArgumentError(
          'TaskQ.open.poolFactory',
          options.poolFactory,
          'must be a function returning a pg.Pool',
        );
      const pool = await options.poolFactory();
      driver = new PgDriver({ pool, ownPool: true });
    } else
      driver = new PgDriver({
        connection: options.dsn as string,
        maxPoolSize: options.maxPoolSize ?? 5,
        applicationName: 'taskq',
        sessionSettings: TASKQ_SESSION_SETTINGS,
      });
    const backend = new PostgresBackend(driver, { schema, logger });
    const client = new JobsClient(backend, {
      logger,
      idempotencyKeyMaxBytes: options.idempotencyKeyMaxBytes,
      capacityCacheTtlMs:
        options.capacityCacheTtl === undefined
          ? undefined
          : toMs(options.capacityCacheTtl, 'TaskQ.open.capacityCacheTtl', 'nonNegative'),
    });
    return new TaskQ(backend, client, redis, logger);
  }

  /**
   * Opens a client from loaded {@link TaskQSettings} (`pgDsn`, `schema`, `redisUrl`,
   * `idempotencyKeyMaxBytes`); `options` adds what settings cannot express (logger, pool size,
   * cache TTL). `pgDsn` must be set.
   */
  static async fromSettings(settings: TaskQSettings, options: TaskQExtraOptions = {}): Promise<TaskQ> {
    if (settings === null || typeof settings !== 'object')
      throw new InvalidArgumentError('TaskQ.fromSettings', settings, 'settings must be an object');
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
      ...(settings.redisUrl === null ? {} : { redisUrl: settings.redisUrl }),
    });
  }

  /**
   * Opens a client configured by `TASKQ_*` variables of `env` (pass `process.env`; the library never
   * reads it by itself), with `overrides` winning over them. Invalid values throw one
   * `SettingsError` listing every problem, before anything connects.
   *
   * ```ts
   * await using tq = await TaskQ.fromEnv(process.env);
   * ```
   */
  static async fromEnv(
    env: Record<string, string | undefined>,
    options: TaskQExtraOptions & { overrides?: TaskQSettingsInput } = {},
  ): Promise<TaskQ> {
    const { overrides, ...extra } = options;
    return TaskQ.fromSettings(loadTaskQSettings({ env, overrides }), extra);
  }

  private static redisOf(options: TaskQOptions): { client: Redis; owned: boolean } | null {
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
      return { client: options.redis!, owned: false };
    }
    if (!hasUrl) return null;
    // Lazy: nothing connects until a stream subscribes (on a duplicate).
    return {
      client: createOwnedRedis(options.redisUrl, 'TaskQ.open.redisUrl', {
        connectionName: 'taskq',
        lazyConnect: true,
      }),
      owned: true,
    };
  }

  private live(): JobsClient {
    if (this.closed) throw new TaskQStateError('this TaskQ is closed; open a new one with TaskQ.open()');
    return this.client;
  }

  /** The Redis client live progress uses (yours, or the one built from `redisUrl`), or null. */
  get redis(): Redis | null {
    return this.redisClient;
  }

  /** Schema this client works in. */
  get schema(): string {
    return this.backend.schema;
  }

  /** See {@link JobsClient.enqueue}. */
  async enqueue<P, R, I>(
    ref: ActorRef<P, R, I>,
    payload: NoInfer<I>,
    options?: EnqueueOptions,
  ): Promise<JobHandle<R>> {
    return this.live().enqueue(ref, payload, options);
  }

  /** See {@link JobsClient.enqueueBatch}. */
  async enqueueBatch(
    items: readonly EnqueueItem[],
    options?: { batchId?: string; connection?: EnqueueOptions['connection'] },
  ): Promise<BatchHandle> {
    return this.live().enqueueBatch(items, options);
  }

  /** See {@link JobsClient.enqueueBatchFast}. */
  async enqueueBatchFast(
    items: readonly EnqueueItem[],
    options?: { batchId?: string; connection?: EnqueueOptions['connection'] },
  ): Promise<number> {
    return this.live().enqueueBatchFast(items, options);
  }

  /** See {@link JobsClient.get}. */
  async get<R = unknown>(jobId: string, ref?: ActorRef<unknown, R>): Promise<JobHandle<R> | null> {
    return this.live().get(jobId, ref);
  }

  /** See {@link JobsClient.getRow}. */
  async getRow(jobId: string): Promise<JobRow | null> {
    return this.live().getRow(jobId);
  }

  /** See {@link JobsClient.list}. */
  async list(filter?: JobFilter): Promise<JobPage> {
    return this.live().list(filter);
  }

  /** See {@link JobsClient.cancel}. */
  async cancel(jobId: string, reason?: string | null): Promise<CancelResult> {
    return this.live().cancel(jobId, reason);
  }

  /** See {@link JobsClient.cancelWhere}. */
  async cancelWhere(
    filter: JobFilter,
    reason?: string | null,
    options?: { allowEmptyFilter?: boolean },
  ): Promise<BulkCancelResult> {
    return this.live().cancelWhere(filter, reason, options);
  }

  /** See {@link JobsClient.retryJob}. */
  async retryJob(jobId: string): Promise<boolean> {
    return this.live().retryJob(jobId);
  }

  /**
   * Every job reclaimed after its worker died, fleet-wide, in order: `for await (const e of
   * tq.watchReclaims({ afterId: saved })) { ...; saved = e.eventId }`. See `watchReclaims` in
   * `reclaim-watcher.ts` for the delivery guarantees.
   */
  watchReclaims(options?: WatchReclaimsOptions): AsyncGenerator<EventRow> {
    return this.live().watchReclaims(options);
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
    return jobStream(this.live(), jobId, options);
  }

  /** See {@link JobsClient.countActiveJobs}. */
  async countActiveJobs(queues: readonly string[]): Promise<number> {
    return this.live().countActiveJobs(queues);
  }

  /**
   * Closes TaskQ-owned connections (never a caller's pool or Redis client). Open streams end with
   * `TaskQStateError`. Safe to call twice.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    await this.subscriber?.close();
    if (this.redisClient && this.ownsRedis) await closeOwnedRedis(this.redisClient);
    await this.client.close();
    await this.backend.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
