import type { ActorRef, AnyActor } from '../actor.js';
import type { Backend, JobPage } from '../backend/backend.js';
import { normalizeJobFilter, type JobFilter } from '../backend/job-filter.js';
import type { BulkCancelResult, CancelResult, EnqueueArgs, JobRow } from '../backend/types.js';
import type { Clock } from '../clock.js';
import { SystemClock } from '../clock.js';
import { MaxPendingExceededError } from '../errors/backpressure-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { EmptyFilterError, TaskQStateError } from '../errors/client-errors.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import { isUuid, newJobId } from '../ids.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import { toJsonText, validateSchema, type Schema } from '../schema-validation.js';
import { ActorCapacityCache, DEFAULT_CAPACITY_CACHE_TTL_MS } from './capacity-cache.js';
import { buildEnqueueArgs, type EnqueueOptions } from './enqueue-options.js';
import { JobHandle } from './job-handle.js';
import { DoneWatcher } from './done-watcher.js';
import { watchReclaims, type WatchReclaimsOptions } from './reclaim-watcher.js';
import type { EventRow } from '../backend/types.js';
import { isTerminal } from '../backend/state-machine.js';
import { WaitTimeoutError } from '../errors/job-errors.js';

/** Largest `enqueueBatch` call. */
export const MAX_BATCH_SIZE = 1000;

/** Largest `enqueueBatchFast` call. */
export const MAX_FAST_BATCH_SIZE = 50_000;

/** Default byte bound of idempotency keys and scopes. */
export const DEFAULT_IDEMPOTENCY_KEY_MAX_BYTES = 1024;

/** Options of {@link JobsClient}. */
export interface JobsClientOptions {
  /** Clock for client-side timing (cache TTLs, advisory hints). Default: system clock. */
  clock?: Clock;
  /** Staleness bound of the stored `max_pending` snapshot. Default 5000 ms. */
  capacityCacheTtlMs?: number;
  /** Byte bound of idempotency keys and scopes. Default 1024. */
  idempotencyKeyMaxBytes?: number;
  /** Logger. */
  logger?: Logger;
}

/** One item of `enqueueBatch`. Build typed items with {@link batchItem}. */
export interface EnqueueItem {
  /** The actor to run. */
  actor: AnyActor;
  /** Its payload. */
  payload: unknown;
  /** Per-item options (no `connection`: the batch has one). */
  options?: Omit<EnqueueOptions, 'connection'>;
}

/** A type-checked `enqueueBatch` item: the payload must match the actor's payload type. */
export function batchItem<P, I>(
  actor: ActorRef<P, unknown, I>,
  payload: NoInfer<I>,
  options?: Omit<EnqueueOptions, 'connection'>,
): EnqueueItem {
  return options === undefined
    ? { actor: actor as AnyActor, payload }
    : { actor: actor as AnyActor, payload, options };
}

/** Result of `enqueueBatch`: one handle per item, in order. */
export interface BatchHandle {
  /** Shared batch id stamped into each job's `metadata.batch_id`. */
  batchId: string;
  /** One handle per item (an idempotency collision yields the existing job's handle). */
  jobHandles: JobHandle<unknown>[];
  /** Number of items. */
  size: number;
}

/**
 * The backend-agnostic client: validates payloads and options at the boundary, applies capacity
 * settings, and wraps rows in typed handles. `TaskQ` wraps one over Postgres; tests can build one
 * over `InMemoryBackend`.
 */
export class JobsClient {
  readonly backend: Backend;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly capacity: ActorCapacityCache;
  private readonly idempotencyMaxBytes: number;
  private readonly warnedUniqueFor = new Set<string>();
  private readonly doneWatcher: DoneWatcher;

  constructor(backend: Backend, options: JobsClientOptions = {}) {
    this.backend = backend;
    this.clock = options.clock ?? new SystemClock();
    this.logger = options.logger ?? silentLogger;
    this.idempotencyMaxBytes = options.idempotencyKeyMaxBytes ?? DEFAULT_IDEMPOTENCY_KEY_MAX_BYTES;
    this.doneWatcher = new DoneWatcher(backend, this.logger);
    this.capacity = new ActorCapacityCache(
      backend,
      this.clock,
      options.capacityCacheTtlMs ?? DEFAULT_CAPACITY_CACHE_TTL_MS,
      this.logger,
    );
  }

  /** Drops the cached stored `max_pending` values (tests, tooling that just changed them). */
  invalidateActorCapacityCache(): void {
    this.capacity.invalidate();
  }

  /** The payload as JSON text, validated first when the actor has a schema (then asynchronously). */
  private payloadJson(
    ref: ActorRef<unknown, unknown>,
    payload: unknown,
    what: string,
  ): string | Promise<string> {
    if (!ref.payloadSchema) return toJsonText(payload, { actor: ref.name, what });
    return validateSchema(ref.payloadSchema, payload, {
      actor: ref.name,
      what,
      payloadSchemaVer: ref.payloadSchemaVersion,
    }).then((value) => toJsonText(value, { actor: ref.name, what }));
  }

  /**
   * Every item's payload JSON. Actors without a schema serialise synchronously: a batch of 1,000
   * such items makes no promises. A synchronous failure still waits on nothing, but the promises
   * already made are observed so that their own rejections are not reported as unhandled.
   */
  private async payloadJsons(refs: readonly ActorRef<unknown, unknown>[], items: readonly EnqueueItem[]) {
    const out: (string | Promise<string>)[] = [];
    let async = false;
    try {
      for (let i = 0; i < items.length; i++) {
        const json = this.payloadJson(refs[i]!, items[i]!.payload, `items[${i}].payload`);
        if (typeof json !== 'string') async = true;
        out.push(json);
      }
    } catch (err) {
      for (const json of out) if (typeof json !== 'string') json.catch(() => undefined);
      throw err;
    }
    return async ? Promise.all(out) : (out as string[]);
  }

  private checkRef(ref: unknown, field: string): asserts ref is ActorRef<unknown, unknown> {
    if (
      ref === null ||
      typeof ref !== 'object' ||
      typeof (ref as ActorRef).name !== 'string' ||
      typeof (ref as ActorRef).handler !== 'function'
    ) {
      throw new InvalidArgumentError(field, ref, 'must be an actor declared with actor()');
    }
  }

  /**
   * Enqueues one job and returns its handle. Gates apply in order: `uniqueFor` (returns the
   * existing job), singleton, `maxPending`, idempotency key (returns the existing job).
   * @throws PayloadValidationError (nothing written), InvalidArgumentError, MaxPendingExceededError,
   *   SingletonCollisionError, SchemaNotMigratedError
   */
  async enqueue<P, R, I>(
    ref: ActorRef<P, R, I>,
    payload: NoInfer<I>,
    options: EnqueueOptions = {},
  ): Promise<JobHandle<R>> {
    this.checkRef(ref, 'enqueue.actor');
    const r = ref as ActorRef<unknown, unknown>;
    const json = await this.payloadJson(r, payload, 'payload');
    const maxPending = await this.capacity.effectiveMaxPending(r.name, r.maxPending);
    const args = buildEnqueueArgs(r, json, options, {
      maxPending,
      idempotencyMaxBytes: this.idempotencyMaxBytes,
    });
    this.warnUniqueForWithoutIdentity(r, args);
    const row = options.connection
      ? await this.backend.enqueueWithConn(options.connection, args)
      : await this.backend.enqueue(args);
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
   * Enqueues up to 1000 jobs in one statement. Every payload and option is validated before
   * anything is written; `maxPending` is checked per actor as `existing + items > limit`.
   * `uniqueFor` does not apply to batches. Each job carries `metadata.batch_id`.
   */
  async enqueueBatch(
    items: readonly EnqueueItem[],
    options: { batchId?: string; connection?: EnqueueOptions['connection'] } = {},
  ): Promise<BatchHandle> {
    const { batchId, refs, jsons } = await this.checkBatch('enqueueBatch', items, MAX_BATCH_SIZE, options);
    const limits = new Map<string, number | null>();
    for (const ref of refs)
      if (!limits.has(ref.name))
        limits.set(ref.name, await this.capacity.effectiveMaxPending(ref.name, ref.maxPending));
    const args = this.batchArgs(items, refs, jsons, batchId, limits);
    const limited = [...limits].filter(([, limit]) => limit !== null) as [string, number][];
    if (limited.length > 0) {
      const counts = await this.backend.countPendingJobs(limited.map(([a]) => a));
      for (const [actor, limit] of limited) {
        const existing = counts.get(actor) ?? 0;
        const adding = refs.filter((r) => r.name === actor).length;
        if (existing + adding > limit) throw new MaxPendingExceededError(actor, existing, limit);
      }
    }
    const rows = await this.backend.enqueueBatch(
      args,
      options.connection ? { connection: options.connection } : {},
    );
    return {
      batchId,
      size: items.length,
      jobHandles: rows.map(
        (row, i) => new JobHandle(this, row, row.id !== args[i]!.id, refs[i]!.resultSchema),
      ),
    };
  }

  /**
   * Bulk import: up to 50,000 jobs through COPY, returning how many were written (all of them).
   * Every payload and option is validated before anything is written. Unlike {@link enqueueBatch}
   * it does not check `maxPending`, returns no handles, and has no conflict handling: an
   * idempotency key already stored, or repeated in `items`, refuses the whole batch with
   * `DuplicateIdempotencyKeyError` and nothing is written. Each job carries
   * `metadata.batch_id` (`options.batchId`, or a new UUIDv7) to find them again with `list`.
   * With `connection`, the jobs commit or roll back with the caller's transaction.
   */
  async enqueueBatchFast(
    items: readonly EnqueueItem[],
    options: { batchId?: string; connection?: EnqueueOptions['connection'] } = {},
  ): Promise<number> {
    const { batchId, refs, jsons } = await this.checkBatch(
      'enqueueBatchFast',
      items,
      MAX_FAST_BATCH_SIZE,
      options,
    );
    const args = this.batchArgs(items, refs, jsons, batchId, null);
    const count = await this.backend.enqueueBatchFast(
      args,
      options.connection ? { connection: options.connection } : {},
    );
    this.logger.debug({ batchId, count }, 'batch-fast-enqueued');
    return count;
  }

  /** The checks every batch enqueue makes before any I/O: size, batch id, actors, payloads. */
  private async checkBatch(
    what: string,
    items: readonly EnqueueItem[],
    max: number,
    options: { batchId?: string },
  ): Promise<{ batchId: string; refs: ActorRef<unknown, unknown>[]; jsons: string[] }> {
    if (!Array.isArray(items) || items.length === 0)
      throw new InvalidArgumentError(`${what}.items`, items, 'must be a non-empty array');
    if (items.length > max) {
      throw new InvalidArgumentError(
        `${what}.items`,
        items,
        `must hold at most ${max} items (got ${items.length})`,
      );
    }
    let batchId = newJobId();
    if (options.batchId !== undefined) {
      if (!isUuid(options.batchId))
        throw new InvalidArgumentError(`${what}.batchId`, options.batchId, 'must be a UUID');
      batchId = options.batchId.toLowerCase();
    }
    const refs = items.map((item, i) => {
      if (item === null || typeof item !== 'object')
        throw new InvalidArgumentError(`items[${i}]`, item, 'must be { actor, payload, options? }');
      this.checkRef(item.actor, `items[${i}].actor`);
      return item.actor as ActorRef<unknown, unknown>;
    });
    return { batchId, refs, jsons: await this.payloadJsons(refs, items) };
  }

  /** Each item's validated arguments; `limits` are the per-actor `maxPending` (null: not checked). */
  private batchArgs(
    items: readonly EnqueueItem[],
    refs: readonly ActorRef<unknown, unknown>[],
    jsons: readonly string[],
    batchId: string,
    limits: Map<string, number | null> | null,
  ): EnqueueArgs[] {
    return items.map((item, i) =>
      buildEnqueueArgs(refs[i]!, jsons[i]!, item.options ?? {}, {
        maxPending: limits?.get(refs[i]!.name) ?? null,
        idempotencyMaxBytes: this.idempotencyMaxBytes,
        itemIndex: i,
        batchId,
      }),
    );
  }

  /** A handle for an existing job, or null. Pass the actor to type the handle's result. */
  async get<R = unknown>(jobId: string, ref?: ActorRef<unknown, R>): Promise<JobHandle<R> | null> {
    const row = await this.getRow(jobId);
    return row ? new JobHandle<R>(this, row, false, (ref?.resultSchema ?? null) as Schema<R> | null) : null;
  }

  /** The job's row, or null. */
  async getRow(jobId: string): Promise<JobRow | null> {
    if (!isUuid(jobId)) throw new InvalidArgumentError('jobId', jobId, 'must be a UUID');
    return this.backend.get(jobId.toLowerCase());
  }

  /** One page of jobs matching the filter; pass `nextCursor` back as `cursor` for the next page. */
  async list(filter: JobFilter = {}): Promise<JobPage> {
    return this.backend.listJobs(normalizeJobFilter(filter));
  }

  /**
   * Cancels a job: pending or scheduled jobs end `cancelled` at once; a running job's handler sees
   * `ctx.signal` abort (and is escalated if it ignores it). Terminal jobs are left alone.
   * @throws JobNotFoundError
   */
  async cancel(jobId: string, reason?: string | null): Promise<CancelResult> {
    const before = await this.getRow(jobId);
    if (!before) throw new JobNotFoundError(jobId);
    if (reason !== undefined && reason !== null && typeof reason !== 'string') {
      throw new InvalidArgumentError('cancel.reason', reason, 'must be a string');
    }
    if (typeof reason === 'string' && reason.includes('\u0000'))
      throw new InvalidArgumentError('cancel.reason', reason, 'must not contain NUL characters');
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
   * `ctx.signal` aborts). The filter's `limit`, `cursor` and `orderBy` are ignored.
   * @throws EmptyFilterError when the filter has no predicate, unless `allowEmptyFilter` is set.
   */
  async cancelWhere(
    filter: JobFilter,
    reason?: string | null,
    options: { allowEmptyFilter?: boolean } = {},
  ): Promise<BulkCancelResult> {
    const f = normalizeJobFilter(filter);
    if (!f.hasPredicates && !options.allowEmptyFilter) throw new EmptyFilterError();
    if (
      reason !== undefined &&
      reason !== null &&
      (typeof reason !== 'string' || reason.includes('\u0000'))
    ) {
      throw new InvalidArgumentError('cancelWhere.reason', reason, 'must be a string without NUL characters');
    }
    return this.backend.cancelWhere(f, reason ?? null);
  }

  /** Sends a failed, crashed, cancelled or abandoned job back to `pending` with a fresh attempt budget. */
  async retryJob(jobId: string): Promise<boolean> {
    if (!isUuid(jobId)) throw new InvalidArgumentError('jobId', jobId, 'must be a UUID');
    return this.backend.retryJob(jobId.toLowerCase());
  }

  /**
   * Resolves with the job's row once it is terminal. Wakes on the backend's job-done announcement
   * (NOTIFY) and polls as the source of truth (quickly at first, then every second).
   * @throws JobNotFoundError when the job does not exist, WaitTimeoutError after `timeoutMs`.
   */
  async waitForTerminal(jobId: string, timeoutMs: number | null = null): Promise<JobRow> {
    const deadline = timeoutMs === null ? Infinity : performance.now() + timeoutMs;
    const notified = await this.doneWatcher.ensure();
    let wake: () => void = () => undefined;
    // A NOTIFY that lands while the row is being read (that read may predate the commit) must
    // still cut the next sleep short: remember it.
    let notifiedMeanwhile = false;
    const unwatch = this.doneWatcher.watch(jobId, () => {
      notifiedMeanwhile = true;
      wake();
    });
    try {
      let pollMs = 20;
      for (;;) {
        notifiedMeanwhile = false;
        const row = await this.backend.get(jobId);
        if (!row) throw new JobNotFoundError(jobId);
        if (isTerminal(row.status)) return row;
        const left = deadline - performance.now();
        if (left <= 0)
          throw new WaitTimeoutError(`job ${jobId} to finish (it is ${row.status})`, timeoutMs ?? 0);
        if (notifiedMeanwhile) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(pollMs, left));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
        pollMs = Math.min(pollMs * 2, notified ? 1000 : 250);
      }
    } finally {
      unwatch();
    }
  }

  /** The fleet-wide crash-reclaim feed; see {@link watchReclaims}. */
  watchReclaims(options: WatchReclaimsOptions = {}): AsyncGenerator<EventRow> {
    return watchReclaims(this.backend, this.logger, options);
  }

  /** Releases the client's notification subscription (the backend is not closed). */
  async close(): Promise<void> {
    await this.doneWatcher.close();
  }

  /** Pending + scheduled + running jobs on the given queues. */
  async countActiveJobs(queues: readonly string[]): Promise<number> {
    return this.backend.countActiveJobs(queues);
  }
}
