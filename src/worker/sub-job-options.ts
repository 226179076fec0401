import { JOB_STATUSES, type JobStatus } from '../backend/types.js';
import type { EnqueueItem } from '../client/batch-items.js';
import { checkConnection, type EnqueueOptions } from '../client/enqueue-options.js';
import { unknownKeyRule } from '../core/closest-name.js';
import { toMs, type Duration } from '../core/duration.js';
import { checkInt } from '../core/text-checks.js';
import type { ClientLike } from '../db/driver.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * Options of `ctx.jobs.enqueue()`: those of `TaskQ.enqueue` but `queue` (a sub-job runs on its
 * actor's home queue) and `traceId` / `spanId` (a sub-job is always traced under the handler's
 * span), plus the per-call gate overrides, tag inheritance and the write mode.
 */
export interface SubJobEnqueueOptions extends Omit<EnqueueOptions, 'queue' | 'traceId' | 'spanId'> {
  /**
   * This child's `uniqueFor` window, instead of the actor's: a job of the actor with the same
   * `identityKey` created within it (in `uniqueStates`) is returned instead of a new one.
   */
  uniqueFor?: Duration;
  /** Statuses this child's `uniqueFor` considers, instead of the actor's (a non-empty list). */
  uniqueStates?: readonly JobStatus[];
  /**
   * This child's `maxPending` limit: with an operator-stored `actor_config.max_pending`, the lower of
   * the two applies (a handler can tighten the fleet's cap, never loosen it); without one, this
   * value replaces the actor's declared `maxPending`. An integer >= 0.
   */
  maxPending?: number;
  /** Merge the parent job's tags with `tags` (parent's first, duplicates dropped). Default true. */
  inheritTags?: boolean;
  /**
   * Write the child at once on the worker's pool, whatever becomes of the parent (default false:
   * the child is written with the parent's success, see docs/sub-jobs.md). Exclusive with `connection`.
   */
  autonomous?: boolean;
  /**
   * Your connection, inside a transaction you manage: the child is written at once on it and commits
   * or rolls back with your transaction, whatever becomes of the parent. Exclusive with `autonomous`.
   */
  connection?: ClientLike;
}

/**
 * Options of `ctx.jobs.enqueueBatch()`. Items are `TaskQ.enqueueBatch` items whose options leave out
 * `queue`, `traceId` and `spanId`; there is no failure policy or finalizer for sub-job batches.
 */
export interface SubJobBatchOptions {
  /** The batch id stamped into each child's `metadata.batch_id` (a UUID). Default: a new UUIDv7. */
  batchId?: string;
  /** Merge the parent job's tags into every item's tags. Default true. */
  inheritTags?: boolean;
  /**
   * Write the items at once on the worker's pool, one by one: those refused are reported together
   * in a `PartialBatchError` once every item was tried. Default false (written with the parent's
   * success). Exclusive with `connection`.
   */
  autonomous?: boolean;
  /** Your connection, inside your transaction: the items are written at once, all or none, on it. */
  connection?: ClientLike;
}

/** How a sub-job call writes: with the parent's success, at once on the pool, or at once on a connection. */
export type SubJobMode =
  { kind: 'buffered' } | { kind: 'autonomous' } | { kind: 'connection'; connection: ClientLike };

/** The sub-job options of one `ctx.jobs.enqueue` call, validated, and the options left for `buildEnqueueArgs`. */
export interface SplitEnqueueOptions {
  mode: SubJobMode;
  inheritTags: boolean;
  uniqueForMs: number | undefined;
  uniqueStates: readonly JobStatus[] | undefined;
  maxPending: number | undefined;
  /** The options `TaskQ.enqueue` also takes. */
  rest: Omit<EnqueueOptions, 'connection'>;
}

const NOT_FOR_SUB_JOBS: Readonly<Record<string, string>> = {
  queue: "is not an option of ctx.jobs: a sub-job runs on its actor's home queue",
  traceId: "is not an option of ctx.jobs: a sub-job is traced under the handler's span",
  spanId: "is not an option of ctx.jobs: a sub-job is traced under the handler's span",
};

const SUB_JOB_ENQUEUE_KEYS = new Set<string>([
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
  'metadata',
  'tags',
  'connection',
  'uniqueFor',
  'uniqueStates',
  'maxPending',
  'inheritTags',
  'autonomous',
]);

const SUB_JOB_BATCH_KEYS: readonly string[] = ['batchId', 'inheritTags', 'autonomous', 'connection'];
const ITEM_NOT_ALLOWED: readonly string[] = [
  'uniqueFor',
  'uniqueStates',
  'maxPending',
  'inheritTags',
  'autonomous',
];

/** Validates the options of `ctx.jobs.enqueue` (everything but what `buildEnqueueArgs` checks). */
export function splitEnqueueOptions(options: unknown, field: string): SplitEnqueueOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new InvalidArgumentError(`${field}.options`, options, 'must be an object');
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const refused = NOT_FOR_SUB_JOBS[key];
    if (refused !== undefined) throw new InvalidArgumentError(`${field}.${key}`, o[key], refused);
    if (!SUB_JOB_ENQUEUE_KEYS.has(key))
      throw new InvalidArgumentError(
        `${field}.${key}`,
        o[key],
        unknownKeyRule(key, SUB_JOB_ENQUEUE_KEYS, 'an option of ctx.jobs.enqueue'),
      );
  }
  const { connection, uniqueFor, uniqueStates, maxPending, inheritTags, autonomous, ...rest } =
    o as SubJobEnqueueOptions;
  return {
    mode: checkMode(connection, autonomous, field),
    inheritTags: checkBoolean(inheritTags, `${field}.inheritTags`, true),
    uniqueForMs: uniqueFor === undefined ? undefined : toMs(uniqueFor, `${field}.uniqueFor`),
    uniqueStates:
      uniqueStates === undefined ? undefined : checkStatuses(uniqueStates, `${field}.uniqueStates`),
    maxPending: maxPending === undefined ? undefined : checkInt(maxPending, `${field}.maxPending`, 0),
    rest,
  };
}

/** Validates the options of `ctx.jobs.enqueueBatch`; returns the write mode and tag inheritance. */
export function checkBatchOptions(
  options: unknown,
  field: string,
): { mode: SubJobMode; inheritTags: boolean; batchOptions: { batchId?: string } } {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new InvalidArgumentError(`${field}.options`, options, 'must be an object');
  const o = options as SubJobBatchOptions & Record<string, unknown>;
  for (const key of Object.keys(o))
    if (!SUB_JOB_BATCH_KEYS.includes(key))
      throw new InvalidArgumentError(
        `${field}.options.${key}`,
        o[key],
        unknownKeyRule(key, SUB_JOB_BATCH_KEYS, 'an option of ctx.jobs.enqueueBatch'),
      );
  return {
    mode: checkMode(o.connection, o.autonomous, field),
    inheritTags: checkBoolean(o.inheritTags, `${field}.inheritTags`, true),
    batchOptions: o.batchId === undefined ? {} : { batchId: o.batchId },
  };
}

/**
 * Refuses, in the items of `ctx.jobs.enqueueBatch`, the options a sub-job never takes (`queue`,
 * trace ids) and those only `ctx.jobs.enqueue` takes. `checkBatchItems` checks the rest.
 */
export function checkSubJobItems(items: readonly EnqueueItem[]): void {
  if (!Array.isArray(items)) return;
  items.forEach((item, i) => {
    const options = (item as { options?: unknown } | null)?.options;
    if (options === null || typeof options !== 'object') return;
    for (const [key, value] of Object.entries(options)) {
      const refused = NOT_FOR_SUB_JOBS[key];
      if (refused !== undefined) throw new InvalidArgumentError(`items[${i}].options.${key}`, value, refused);
      if (ITEM_NOT_ALLOWED.includes(key))
        throw new InvalidArgumentError(
          `items[${i}].options.${key}`,
          value,
          key === 'inheritTags' || key === 'autonomous'
            ? "is an option of the whole batch: pass it in ctx.jobs.enqueueBatch's options"
            : 'is an option of ctx.jobs.enqueue only (a batch applies each actor’s own gates)',
        );
    }
  });
}

function checkMode(connection: unknown, autonomous: unknown, field: string): SubJobMode {
  const isAutonomous = checkBoolean(autonomous, `${field}.autonomous`, false);
  if (connection === undefined || connection === null)
    return isAutonomous ? { kind: 'autonomous' } : { kind: 'buffered' };
  checkConnection(connection, `${field}.connection`);
  if (isAutonomous)
    throw new InvalidArgumentError(
      `${field}.autonomous`,
      autonomous,
      'cannot be combined with connection: give connection to write in your transaction, or autonomous: true to write on the worker’s pool',
    );
  return { kind: 'connection', connection: connection as ClientLike };
}

function checkBoolean(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, value, 'must be a boolean');
  return value;
}

function checkStatuses(value: unknown, field: string): readonly JobStatus[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new InvalidArgumentError(field, value, 'must be a non-empty array of statuses');
  for (const s of value)
    if (!(JOB_STATUSES as readonly unknown[]).includes(s))
      throw new InvalidArgumentError(field, s, `must be one of ${JOB_STATUSES.join(', ')}`);
  return Object.freeze([...(value as JobStatus[])]);
}
