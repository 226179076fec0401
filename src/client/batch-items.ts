import type { ActorRef, AnyActor } from '../core/actor.js';
import { unknownKeyRule } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid, newJobId } from '../core/ids.js';
import { checkConnection, type EnqueueOptions } from './enqueue-options.js';
import { BatchFailurePolicy } from './batch-policy.js';

/** Largest `enqueueBatch` call. */
export const MAX_BATCH_SIZE = 1000;

/** Largest `enqueueBatchFast` call. */
export const MAX_FAST_BATCH_SIZE = 50_000;

/** One item of `enqueueBatch`. Build typed items with {@link batchItem}. */
export interface EnqueueItem {
  /** The actor to run. */
  actor: AnyActor;
  /** Its payload. */
  payload: unknown;
  /** Per-item options (no `connection`: the batch has one). */
  options?: Omit<EnqueueOptions, 'connection'>;
}

/** The options `enqueueBatchFast` takes (no batch row: no policy, no finalizer). */
export const FAST_BATCH_OPTION_KEYS: readonly string[] = ['batchId', 'connection'];
/** The options `enqueueBatch` takes. */
export const BATCH_OPTION_KEYS: readonly string[] = ['batchId', 'connection', 'failurePolicy', 'finalizer'];
const ITEM_KEYS: readonly string[] = ['actor', 'payload', 'options'];

/** Options of `enqueueBatchFast`. */
export interface FastBatchOptions {
  /** The batch id stamped into each job's `metadata.batch_id` (a UUID). Default: a new UUIDv7. */
  batchId?: string;
  /** Your connection, inside your transaction: the jobs commit or roll back with it. */
  connection?: EnqueueOptions['connection'];
}

/** Options of `enqueueBatch`. */
export interface BatchOptions extends FastBatchOptions {
  /**
   * When the batch gives up, e.g. `new AbortBatchAfter(5)`. With a policy or a finalizer the batch
   * gets a row (`getBatch`, `listBatches`) whose counters follow its children.
   */
  failurePolicy?: BatchFailurePolicy;
  /**
   * A job enqueued with the batch, in the same transaction, that is not one of its children: it
   * runs at once and should call `waitForBatch` (docs/batches.md) to act once every child is done.
   */
  finalizer?: EnqueueItem;
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

/** Checks that `ref` is an actor declared with `actor()`. */
export function checkActorRef(ref: unknown, field: string): asserts ref is ActorRef<unknown, unknown> {
  if (!looksLikeActor(ref))
    throw new InvalidArgumentError(field, ref, 'must be an actor declared with actor()');
}

/**
 * The checks every batch enqueue makes before any I/O: the item count, the batch id, the actors.
 * Returns the batch id to use and each item's actor. `indexBase` is the global index of `items[0]`
 * (a streaming enqueue's later chunk), so that errors name the item as the caller counts it.
 */
export function checkBatchItems(
  what: string,
  items: readonly EnqueueItem[],
  max: number,
  options: BatchOptions,
  optionKeys: readonly string[] = BATCH_OPTION_KEYS,
  indexBase = 0,
): { batchId: string; refs: ActorRef<unknown, unknown>[] } {
  if (!Array.isArray(items) || items.length === 0)
    throw new InvalidArgumentError(`${what}.items`, items, nonArrayRule(items));
  if (items.length > max) {
    throw new InvalidArgumentError(
      `${what}.items`,
      items,
      `must hold at most ${max} items (got ${items.length})`,
    );
  }
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`${what}.options`, options, 'must be an object');
  for (const key of Object.keys(options))
    if (!optionKeys.includes(key))
      throw new InvalidArgumentError(
        `${what}.options.${key}`,
        (options as Record<string, unknown>)[key],
        unknownKeyRule(key, optionKeys, `an option of ${what}`),
      );
  checkConnection(options.connection, `${what}.connection`);
  checkBatchExtras(what, options);
  let batchId = newJobId();
  if (options.batchId !== undefined) {
    if (!isUuid(options.batchId))
      throw new InvalidArgumentError(`${what}.batchId`, options.batchId, 'must be a UUID');
    batchId = options.batchId.toLowerCase();
  }
  const refs = items.map((item, at) => {
    const i = indexBase + at;
    if (item === null || typeof item !== 'object')
      throw new InvalidArgumentError(`items[${i}]`, item, 'must be { actor, payload, options? }');
    for (const key of Object.keys(item))
      if (!ITEM_KEYS.includes(key))
        throw new InvalidArgumentError(
          `items[${i}].${key}`,
          (item as unknown as Record<string, unknown>)[key],
          unknownKeyRule(key, ITEM_KEYS, 'a field of a batch item ({ actor, payload, options? })'),
        );
    checkActorRef(item.actor, `items[${i}].actor`);
    return item.actor as ActorRef<unknown, unknown>;
  });
  return { batchId, refs };
}

/**
 * The rule an empty or non-array `items` breaks. An actor passed first, as `enqueue` takes one
 * (`enqueueBatch(actor, items)`), is the likely slip from JavaScript: say what the call takes.
 */
function nonArrayRule(items: unknown): string {
  if (Array.isArray(items) || !looksLikeActor(items)) return 'must be a non-empty array';
  return (
    `must be a non-empty array of { actor, payload, options? } items, not the actor ` +
    `'${items.name}': each item names its actor, e.g. [{ actor, payload }] or [batchItem(actor, payload)]`
  );
}

function looksLikeActor(v: unknown): v is ActorRef<unknown, unknown> {
  return (
    v !== null &&
    typeof v === 'object' &&
    typeof (v as ActorRef).name === 'string' &&
    typeof (v as ActorRef).handler === 'function'
  );
}

/** Checks `failurePolicy` and the finalizer item's shape (its payload is checked with the items'). */
export function checkBatchExtras(what: string, options: BatchOptions): void {
  if (options.failurePolicy !== undefined && !(options.failurePolicy instanceof BatchFailurePolicy))
    throw new InvalidArgumentError(
      `${what}.failurePolicy`,
      options.failurePolicy,
      'must be a BatchFailurePolicy, e.g. new AbortBatchAfter(5)',
    );
  const f = options.finalizer;
  if (f === undefined) return;
  if (f === null || typeof f !== 'object')
    throw new InvalidArgumentError(`${what}.finalizer`, f, 'must be { actor, payload, options? }');
  for (const key of Object.keys(f))
    if (!ITEM_KEYS.includes(key))
      throw new InvalidArgumentError(
        `${what}.finalizer.${key}`,
        (f as unknown as Record<string, unknown>)[key],
        unknownKeyRule(key, ITEM_KEYS, 'a field of the finalizer ({ actor, payload, options? })'),
      );
  checkActorRef(f.actor, `${what}.finalizer.actor`);
}

/** True when the batch needs a row: a failure policy or a finalizer. */
export function hasBatchExtras(options: BatchOptions): boolean {
  return options.failurePolicy !== undefined || options.finalizer !== undefined;
}
