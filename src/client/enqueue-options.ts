import type { ActorRef } from '../core/actor.js';
import type { JobStatus } from '../backend/types.js';
import type { ClientLike } from '../db/driver.js';
import { unknownKeyRule } from '../core/closest-name.js';
import { checkDate, MAX_TIMER_MS, toMsOrNull, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { newJobId } from '../core/ids.js';
import { jsonCopy } from '../core/json-text.js';
import { checkInt, checkQueueName, checkText, isPlainObject } from '../core/text-checks.js';
import type { EnqueueArgs } from '../backend/types.js';

/** Per-job options of `enqueue()`. Every field is optional. */
export interface EnqueueOptions {
  /** Queue override (default: the actor's home queue). */
  queue?: string;
  /** Run at this time; a future time makes the job `scheduled` (decided by the database clock). */
  scheduledAt?: Date;
  /** Run after this delay, measured on the database clock. Exclusive with `scheduledAt`. */
  delay?: Duration;
  /** Priority override (higher runs first). */
  priority?: number;
  /**
   * Absolute overall deadline. Deprecated: it compares this process's clock with the database's;
   * prefer the actor's `retry.timeBudget`, which the database anchors itself.
   */
  scheduleToClose?: Date;
  /** Per-attempt timeout (overrides the actor's and the worker's default). */
  startToClose?: Duration;
  /** The handler must heartbeat at least this often (overrides the actor's). */
  heartbeatTimeout?: Duration;
  /** Business key: at most one running job per `(actor, identityKey)`; the key of `uniqueFor`. */
  identityKey?: string;
  /** Cohort for round-robin queues. */
  fairnessKey?: string;
  /** Deduplicates within `idempotencyScope` until the job is pruned; a repeat returns the existing job. */
  idempotencyKey?: string;
  /** Namespace of `idempotencyKey`; `''` (default) is the global scope. */
  idempotencyScope?: string;
  /** W3C trace id to link the job to (default: the active span's). */
  traceId?: string;
  /** Span id to link the job to (default: the active span's). */
  spanId?: string;
  /** Free-form JSON object; `singleton` and `batch_id` are reserved for the library. */
  metadata?: Record<string, unknown>;
  /** Tags for filtering (`list({ tags })` matches jobs carrying all given tags). */
  tags?: readonly string[];
  /**
   * Your own `pg` connection, already inside a transaction you manage: the job is inserted on it
   * and commits or rolls back with your transaction (transactional outbox).
   */
  connection?: ClientLike;
}

/** Bounds decided for fields the reference leaves open (see docs/configuration.md). */
export const KEY_MAX_BYTES = 1024;
export const MAX_TAGS = 64;
export const TAG_MAX_BYTES = 256;
const RESERVED_METADATA_KEYS = ['singleton', 'batch_id'] as const;
const ENQUEUE_OPTION_KEYS = new Set<string>([
  'queue',
  'scheduledAt',
  'delay',
  'priority',
  'scheduleToClose',
  'startToClose',
  'heartbeatTimeout',
  'identityKey',
  'fairnessKey',
  'idempotencyKey',
  'idempotencyScope',
  'traceId',
  'spanId',
  'metadata',
  'tags',
  'connection',
]);

function optionalDate(value: unknown, field: string): Date | null {
  if (value === undefined || value === null) return null;
  return checkDate(value, field);
}

/**
 * Checks the `connection` of an enqueue: a client with a `query` method (a `pg.Client` or
 * `pg.PoolClient` inside your transaction, or the in-memory backend's `MemoryTransaction`).
 */
export function checkConnection(value: unknown, field: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'object' || typeof (value as { query?: unknown }).query !== 'function')
    throw new InvalidArgumentError(
      field,
      value,
      'must be a connection inside your transaction: a pg.Client or pg.PoolClient (or, with the in-memory backend, a MemoryTransaction)',
    );
}

function optionalText(value: unknown, field: string, maxBytes: number, notBlank = false): string | null {
  if (value === undefined || value === null) return null;
  return checkText(value, field, { maxBytes, notBlank });
}

/** Context the client resolves before building args. */
export interface BuildContext {
  /** Effective max pending (stored override, else the actor literal). */
  maxPending: number | null;
  /** Byte bound of idempotency keys and scopes. */
  idempotencyMaxBytes: number;
  /** Ambient trace ids, used when the options carry none. */
  traceId?: string | null;
  spanId?: string | null;
  /**
   * The item's position in a batch: error fields are then `items[i].options.<name>` instead of
   * `enqueue.<name>`. A number, not a prefix string, so that a batch of 1,000 valid items builds
   * no field names at all.
   */
  itemIndex?: number;
  /** Stamped into metadata.batch_id by batch enqueues. */
  batchId?: string | null;
  /** What error fields of a single enqueue start with. Default `enqueue` (`ctx.jobs.enqueue` for sub-jobs). */
  field?: string;
}

/**
 * The name of option `name` in an error message: `enqueue.<name>` (or `<ctx.field>.<name>`), or
 * `items[i].options.<name>`.
 */
function fieldName(ctx: BuildContext, name: string): string {
  return ctx.itemIndex === undefined
    ? `${ctx.field ?? 'enqueue'}.${name}`
    : `items[${ctx.itemIndex}].options.${name}`;
}

/**
 * Validates enqueue options against an actor and builds the backend arguments. Throws
 * `InvalidArgumentError` naming the field; nothing has been written when it does.
 */
export function buildEnqueueArgs(
  ref: ActorRef<unknown, unknown>,
  payloadJson: string,
  opts: EnqueueOptions,
  ctx: BuildContext,
): EnqueueArgs {
  // Field names are built by `fieldName` only for options that are present.
  if (opts === null || typeof opts !== 'object')
    throw new InvalidArgumentError(fieldName(ctx, 'options'), opts, 'must be an object');
  for (const key of Object.keys(opts)) {
    if (key === 'connection' && ctx.itemIndex !== undefined)
      throw new InvalidArgumentError(
        fieldName(ctx, key),
        (opts as Record<string, unknown>)[key],
        "is an option of the whole batch: pass it in enqueueBatch's options",
      );
    if (!ENQUEUE_OPTION_KEYS.has(key))
      throw new InvalidArgumentError(
        fieldName(ctx, key),
        (opts as Record<string, unknown>)[key],
        unknownKeyRule(key, ENQUEUE_OPTION_KEYS, 'an enqueue option'),
      );
  }
  if (opts.connection !== undefined) checkConnection(opts.connection, fieldName(ctx, 'connection'));
  const queue = opts.queue === undefined ? ref.queue : checkQueueName(opts.queue, fieldName(ctx, 'queue'));
  const scheduledAt =
    opts.scheduledAt === undefined ? null : optionalDate(opts.scheduledAt, fieldName(ctx, 'scheduledAt'));
  const delayMs =
    opts.delay === undefined ? null : toMsOrNull(opts.delay, fieldName(ctx, 'delay'), 'nonNegative');
  if (scheduledAt !== null && delayMs !== null) {
    throw new InvalidArgumentError(
      fieldName(ctx, 'delay'),
      opts.delay,
      'scheduledAt and delay are mutually exclusive',
    );
  }
  const priority =
    opts.priority === undefined
      ? ref.priority
      : checkInt(opts.priority, fieldName(ctx, 'priority'), -2_147_483_648, 2_147_483_647);
  const metadata =
    opts.metadata === undefined || opts.metadata === null ? {} : checkedMetadata(opts.metadata, ctx);
  if (ref.singleton) metadata.singleton = true;
  if (ctx.batchId) metadata.batch_id = ctx.batchId;
  const tags = opts.tags === undefined || opts.tags === null ? [] : checkedTags(opts.tags, ctx);
  const idempotencyKey =
    opts.idempotencyKey === undefined
      ? null
      : optionalText(opts.idempotencyKey, fieldName(ctx, 'idempotencyKey'), ctx.idempotencyMaxBytes, true);
  let idempotencyScope = '';
  if (opts.idempotencyScope !== undefined && opts.idempotencyScope !== null) {
    idempotencyScope = checkText(opts.idempotencyScope, fieldName(ctx, 'idempotencyScope'), {
      allowEmpty: true,
      maxBytes: ctx.idempotencyMaxBytes,
    });
  }
  const scheduleToClose =
    opts.scheduleToClose === undefined
      ? null
      : optionalDate(opts.scheduleToClose, fieldName(ctx, 'scheduleToClose'));
  return {
    id: newJobId(),
    actor: ref.name,
    queue,
    identityKey:
      opts.identityKey === undefined
        ? null
        : optionalText(opts.identityKey, fieldName(ctx, 'identityKey'), KEY_MAX_BYTES),
    fairnessKey:
      opts.fairnessKey === undefined
        ? null
        : optionalText(opts.fairnessKey, fieldName(ctx, 'fairnessKey'), KEY_MAX_BYTES),
    payloadJson,
    payloadSchemaVer: ref.payloadSchemaVersion,
    priority,
    maxAttempts: ref.retry.maxAttempts,
    retryKind: ref.retry.kind,
    scheduledAt,
    scheduledDelayMs: delayMs,
    scheduleToClose,
    scheduleToCloseIntervalMs: ref.retry.timeBudgetMs,
    startToCloseMs:
      (opts.startToClose === undefined
        ? null
        : toMsOrNull(opts.startToClose, fieldName(ctx, 'startToClose'), 'positive', MAX_TIMER_MS)) ??
      ref.startToCloseMs,
    heartbeatTimeoutMs:
      (opts.heartbeatTimeout === undefined
        ? null
        : toMsOrNull(opts.heartbeatTimeout, fieldName(ctx, 'heartbeatTimeout'), 'positive', MAX_TIMER_MS)) ??
      ref.heartbeatTimeoutMs,
    idempotencyKey,
    idempotencyScope,
    traceId:
      (opts.traceId === undefined ? null : optionalText(opts.traceId, fieldName(ctx, 'traceId'), 128)) ??
      ctx.traceId ??
      null,
    spanId:
      (opts.spanId === undefined ? null : optionalText(opts.spanId, fieldName(ctx, 'spanId'), 128)) ??
      ctx.spanId ??
      null,
    metadata,
    tags,
    maxPending: ctx.maxPending,
    singleton: ref.singleton,
    uniqueForMs: ref.uniqueForMs,
    uniqueStates: ref.uniqueStates as readonly JobStatus[],
  };
}

/**
 * The caller's metadata as a JSON copy: a plain object, no reserved key, serialisable, and nothing
 * jsonb would refuse or JSON would change (NUL, lone surrogates, NaN, Infinity).
 */
function checkedMetadata(metadata: unknown, ctx: BuildContext): Record<string, unknown> {
  if (!isPlainObject(metadata))
    throw new InvalidArgumentError(fieldName(ctx, 'metadata'), metadata, 'must be a plain object');
  for (const key of RESERVED_METADATA_KEYS) {
    if (key in metadata) {
      throw new InvalidArgumentError(
        fieldName(ctx, `metadata.${key}`),
        metadata[key],
        `is reserved for TaskQ (${key === 'singleton' ? 'set singleton on the actor' : 'use enqueueBatch'})`,
      );
    }
  }
  return jsonCopy(metadata, fieldName(ctx, 'metadata'));
}

/** The caller's tags, each checked: non-blank, storable text, at most {@link TAG_MAX_BYTES}. */
function checkedTags(tags: unknown, ctx: BuildContext): string[] {
  if (!Array.isArray(tags))
    throw new InvalidArgumentError(fieldName(ctx, 'tags'), tags, 'must be an array of strings');
  if (tags.length > MAX_TAGS)
    throw new InvalidArgumentError(fieldName(ctx, 'tags'), tags, `must hold at most ${MAX_TAGS} tags`);
  return tags.map((t, i) =>
    checkText(t, fieldName(ctx, `tags[${i}]`), { maxBytes: TAG_MAX_BYTES, notBlank: true }),
  );
}
