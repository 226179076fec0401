import type { StandardSchemaV1 } from '@standard-schema/spec';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';

import { checkKnownKeys, unknownKeyRule } from './closest-name.js';
import type { JobContext } from './context.js';
import { MAX_TIMER_MS, toMsOrNull, type Duration } from './duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { RetryPolicy, type RetryPolicyOptions } from '../retry/retry-policy.js';
import { isStandardSchema, type Schema } from './schema-validation.js';
import { checkActorName, checkInt, checkQueueName, isPlainObject } from './text-checks.js';
import { JOB_STATUSES, type JobRow, type JobStatus, type RetryKind } from '../backend/types.js';
import { checkInjectMap } from '../di/providers.js';
import type { DepsOf, InjectMap } from '../di/token.js';
import { DIError } from '../errors/di-errors.js';

/** A handler: gets the validated payload and the job context, returns the result (or nothing). */
export type ActorHandler<P, R> = (payload: P, ctx: JobContext<P>) => R | Promise<R>;

/** A handler of an actor that injects dependencies: its third argument holds them, typed by `inject`. */
export type InjectedActorHandler<P, R, D> = (payload: P, ctx: JobContext<P>, deps: D) => R | Promise<R>;

/** The injected values of an actor that injects nothing. */
export type NoDependencies = Record<never, never>;

/** Per-occurrence override returned by a `retryClassifier` hook; `undefined` fields keep the policy's. */
export interface RetryOverride {
  /** Retry kind for this failure. */
  kind?: RetryKind;
  /** Delay before the retry (still capped by the worker's `maxRetryBackoff`). */
  delay?: Duration;
}

/** Hook deciding retry behaviour from the error instance (e.g. 429 → indefinite, 404 → nonRetryable). */
export type RetryClassifierHook = (error: unknown, attempt: number) => RetryOverride | null | undefined;

/** Hook run after a job succeeds, with its row and (type-erased) result. Bounded by `onSuccessTimeout`. */
export type OnSuccessHook = (row: JobRow, result: unknown) => void | Promise<void>;

/** Hook run once a job has failed for good (retries exhausted or non-retryable). Bounded by its timeout. */
export type OnRetryExhaustedHook = (row: JobRow, error: unknown) => void | Promise<void>;

/** A rate limit or reservation entry on an actor: a registered name or a primitive/keyed ref object. */
export type LimitEntry = string | { readonly name?: string; readonly baseName?: string };

/** Error classes (constructors) that fail a job at once, whatever the retry policy says. */
export type ErrorClass = abstract new (...args: never[]) => unknown;

/**
 * Everything `actor()` accepts. Only `name` is required. `P` is the payload the handler sees (the
 * schema's output), `I` what `enqueue()` accepts (the schema's input: fields with defaults optional).
 */
export interface ActorOptions<P = unknown, R = unknown, I = P> {
  /** Actor name, stored on each job and in `actor_config`. Letters, digits, `_ - . :`; 1–128 chars. */
  name: string;
  /** Home queue. Default `'default'`. `enqueue(..., { queue })` overrides per job. */
  queue?: string;
  /** Payload schema (any Standard Schema: Zod, Valibot, ArkType). Validated at enqueue and at dispatch. */
  payload?: StandardSchemaV1<I, P>;
  /** Result schema: the worker validates the handler's return value; `wait()` returns it. */
  result?: Schema<R>;
  /** Version of the payload shape, stored on each job. Default 1. */
  payloadSchemaVersion?: number;
  /** Retry policy (options or a `RetryPolicy`). Default: transient, 3 attempts, exponential from 5 s. */
  retry?: RetryPolicy | RetryPolicyOptions;
  /** How long a stored result is kept after success. Default: until the job is pruned. */
  resultTtl?: Duration;
  /** At most one job of this actor pending, scheduled or running. Default false. */
  singleton?: boolean;
  /**
   * Fleet-wide cap on running jobs of this actor (best effort; may overshoot by
   * `(producers − 1) × maxConcurrent`). `0` stops dispatch (emergency drain). Default: none.
   * Operator-owned once stored in `actor_config`.
   */
  maxConcurrent?: number | null;
  /** Refuse enqueues when this many jobs are pending + scheduled. Default: none. Operator-owned once stored. */
  maxPending?: number | null;
  /** Free-form JSON object stored in `actor_config.metadata` (drift-checked at worker start). */
  metadata?: Record<string, unknown>;
  /** Enqueue-time dedup window over `(actor, identityKey)`: a match returns the existing job. */
  uniqueFor?: Duration;
  /** Statuses `uniqueFor` considers. Default pending, scheduled, running. */
  uniqueStates?: readonly JobStatus[];
  /** Default per-attempt timeout (enqueue option > this > worker default). */
  startToClose?: Duration;
  /** Default heartbeat timeout: the handler must call `ctx.heartbeat()` at least this often. */
  heartbeatTimeout?: Duration;
  /** Rate limits (names, primitives or keyed refs), acquired after reservations, in order. */
  rateLimits?: readonly LimitEntry[];
  /** Concurrency reservations (names, primitives or keyed refs), acquired first, in order. */
  reservations?: readonly LimitEntry[];
  /** Error classes that fail the job without retry. */
  nonRetryableErrors?: readonly ErrorClass[];
  /** Per-error retry override hook; if it throws, the static policy applies. */
  retryClassifier?: RetryClassifierHook;
  /** Hook run when the job fails for good. */
  onRetryExhausted?: OnRetryExhaustedHook;
  /** Time limit of `onRetryExhausted`. Default 3 s. */
  onRetryExhaustedTimeout?: Duration;
  /** Hook run when the job succeeds. */
  onSuccess?: OnSuccessHook;
  /** Time limit of `onSuccess`. Default 3 s. */
  onSuccessTimeout?: Duration;
  /** Default priority (higher runs first). Default 0. */
  priority?: number;
  /**
   * Run the handler in a worker thread instead of the worker's event loop: `module` (a file URL
   * or absolute path) exports the handler (`exportName`, default `'default'`). Use it for CPU-bound
   * or blocking code: phase 2 of a cancel terminates the thread, a real forced stop. Inside the
   * thread, `ctx.shouldAbort()` reads a shared flag, so a busy loop can poll it. Declare these with
   * {@link threadActor}.
   */
  thread?: { module: string | URL; exportName?: string };
  /**
   * Dependencies the handler receives as its third argument, by name: `{ db: Db }` (tokens made
   * with `token()`), provided by the worker's `providers` (see docs/dependencies.md). The handler's
   * third argument is typed from it. Default: none.
   */
  inject?: InjectMap;
}

/** The validated, normalised declaration of an actor (durations in ms). */
export interface ActorDefinition {
  readonly name: string;
  readonly queue: string;
  readonly payloadSchemaVersion: number;
  readonly retry: RetryPolicy;
  readonly resultTtlMs: number | null;
  readonly singleton: boolean;
  readonly maxConcurrent: number | null;
  readonly maxPending: number | null;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly uniqueForMs: number | null;
  readonly uniqueStates: readonly JobStatus[];
  readonly startToCloseMs: number | null;
  readonly heartbeatTimeoutMs: number | null;
  readonly rateLimits: readonly LimitEntry[];
  readonly reservations: readonly LimitEntry[];
  readonly nonRetryableErrors: readonly ErrorClass[];
  readonly retryClassifier: RetryClassifierHook | null;
  readonly onRetryExhausted: OnRetryExhaustedHook | null;
  readonly onRetryExhaustedTimeoutMs: number;
  readonly onSuccess: OnSuccessHook | null;
  readonly onSuccessTimeoutMs: number;
  readonly priority: number;
  /** Thread isolation: the handler module and export, or null for in-process handlers. */
  readonly thread: { readonly module: string; readonly exportName: string } | null;
  /** What the handler injects (name → token), or null when it injects nothing. */
  readonly inject: InjectMap | null;
}

/**
 * A declared actor: pass it to `enqueue()` and to the worker. `P` is the payload type the handler
 * sees, `R` its result type, `I` the payload type `enqueue()` accepts (the schema's input).
 */
export interface ActorRef<P = unknown, R = unknown, I = P, D = NoDependencies> extends ActorDefinition {
  /** Payload schema, or null when the actor accepts any JSON value. */
  readonly payloadSchema: StandardSchemaV1<I, P> | null;
  /** Result schema, or null when results are passed through as stored. */
  readonly resultSchema: Schema<R> | null;
  /** The handler. An actor with `inject` takes the injected values as a third argument. */
  readonly handler: ActorHandler<P, R>;
  /**
   * Runs the handler in-process with a context (tests, simulators); no queue involved. An actor
   * with `inject` needs `deps`, the values its handler injects.
   */
  run(payload: P, ctx: JobContext<P>, deps?: D): Promise<R>;
  /** Phantom marker for type inference; never set at run time. */
  readonly __types?: { payload: P; result: R; input: I; deps: D };
}

/** Any actor, whatever its payload and result types (for collections of actors). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- handler parameters are contravariant; `any` is the only top type here.
export type AnyActor = ActorRef<any, any, any, any>;

/** Payload type of an actor ref. */
export type PayloadOf<A> = A extends { readonly __types?: { payload: infer P } } ? P : never;
/** Payload type `enqueue()` accepts for an actor ref (its schema's input). */
export type InputOf<A> = A extends { readonly __types?: { input: infer I } } ? I : never;
/** Result type of an actor ref. */
export type ResultOf<A> = A extends { readonly __types?: { result: infer R } } ? R : never;
/** The injected values of an actor ref (its handler's third argument). */
export type DependenciesOf<A> = A extends { readonly __types?: { deps: infer D } } ? D : never;

const OPTION_KEYS = new Set<string>([
  'name',
  'queue',
  'payload',
  'result',
  'payloadSchemaVersion',
  'retry',
  'resultTtl',
  'singleton',
  'maxConcurrent',
  'maxPending',
  'metadata',
  'uniqueFor',
  'uniqueStates',
  'startToClose',
  'heartbeatTimeout',
  'rateLimits',
  'reservations',
  'nonRetryableErrors',
  'retryClassifier',
  'onRetryExhausted',
  'onRetryExhaustedTimeout',
  'onSuccess',
  'onSuccessTimeout',
  'priority',
  'thread',
  'inject',
]);

function nullableInt(value: number | null | undefined, field: string, min: number): number | null {
  return value === undefined || value === null ? null : checkInt(value, field, min, 2_147_483_647);
}

function optionalFn<T>(value: T | undefined, field: string): T | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'function') throw new InvalidArgumentError(field, value, 'must be a function');
  return value;
}

function limitEntries(value: readonly LimitEntry[] | undefined, field: string): readonly LimitEntry[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidArgumentError(field, value, 'must be an array');
  return value.map((entry: unknown, i) => {
    if (typeof entry === 'string') {
      if (entry.trim().length === 0)
        throw new InvalidArgumentError(`${field}[${i}]`, entry, 'must not be empty');
      return entry;
    }
    // An object must name its limit: a primitive carries `name`, a keyed ref `baseName`.
    const named = entry as { name?: unknown; baseName?: unknown } | null;
    if (
      named === null ||
      typeof named !== 'object' ||
      (typeof named.name !== 'string' && typeof named.baseName !== 'string')
    ) {
      throw new InvalidArgumentError(
        `${field}[${i}]`,
        entry,
        'must be a name, a rate-limit primitive or a keyed ref',
      );
    }
    return entry as LimitEntry;
  });
}

/**
 * Declares an actor. Every option is validated here, at declaration (import) time, so a bad queue
 * name or capacity fails before any job is enqueued.
 *
 * ```ts
 * export const sendEmail = actor(
 *   { name: 'send_email', queue: 'emails', payload: z.object({ to: z.string().email() }) },
 *   async (payload, ctx) => { await mailer.send(payload.to, { signal: ctx.signal }); },
 * );
 * ```
 */
export function actor<P = unknown, R = unknown, I = P>(
  options: ActorOptions<P, R, I> & { inject?: undefined },
  handler: ActorHandler<P, R>,
): ActorRef<P, R, I>;
/**
 * Declares an actor that injects dependencies: the handler's third argument holds the values of
 * `inject`'s tokens, typed from them (a name or type that does not match is a compile error).
 *
 * ```ts
 * export const charge = actor(
 *   { name: 'charge', inject: { db: Db, http: Http } },
 *   async (payload, ctx, { db, http }) => { ... },
 * );
 * ```
 */
export function actor<P = unknown, R = unknown, I = P, J extends InjectMap = InjectMap>(
  options: ActorOptions<P, R, I> & { inject: J },
  handler: InjectedActorHandler<P, R, NoInfer<DepsOf<J>>>,
): ActorRef<P, R, I, DepsOf<J>>;
export function actor(
  options: ActorOptions<unknown, unknown, unknown>,
  handler: InjectedActorHandler<unknown, unknown, never>,
): AnyActor {
  return declareActor(options, handler);
}

/** `actor()`'s implementation, shared with `threadActor()`. */
function declareActor<P, R, I, D>(
  options: ActorOptions<P, R, I>,
  handler: InjectedActorHandler<P, R, D>,
): ActorRef<P, R, I, D> {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('actor', options, 'options must be an object');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key))
      throw new InvalidArgumentError(
        `actor.${key}`,
        (options as unknown as Record<string, unknown>)[key],
        unknownKeyRule(key, OPTION_KEYS, 'an actor option'),
      );
  }
  const name = checkActorName(options.name);
  const f = (k: string): string => `actor(${name}).${k}`;
  if (typeof handler !== 'function')
    throw new InvalidArgumentError(f('handler'), handler, 'must be a function');
  const queue = checkQueueName(options.queue ?? 'default', f('queue'));
  if (options.payload !== undefined && !isStandardSchema(options.payload)) {
    throw new InvalidArgumentError(
      f('payload'),
      options.payload,
      'must be a Standard Schema validator (Zod, Valibot, ArkType, ...)',
    );
  }
  if (options.result !== undefined && !isStandardSchema(options.result)) {
    throw new InvalidArgumentError(
      f('result'),
      options.result,
      'must be a Standard Schema validator (Zod, Valibot, ArkType, ...)',
    );
  }
  const metadata = options.metadata ?? {};
  if (!isPlainObject(metadata))
    throw new InvalidArgumentError(f('metadata'), metadata, 'must be a plain object');
  try {
    JSON.stringify(metadata);
  } catch {
    throw new InvalidArgumentError(f('metadata'), metadata, 'must be JSON-serialisable');
  }
  const uniqueStates = options.uniqueStates ?? ['pending', 'scheduled', 'running'];
  if (!Array.isArray(uniqueStates) || uniqueStates.length === 0) {
    throw new InvalidArgumentError(f('uniqueStates'), uniqueStates, 'must be a non-empty array of statuses');
  }
  for (const s of uniqueStates) {
    if (!(JOB_STATUSES as readonly string[]).includes(s))
      throw new InvalidArgumentError(f('uniqueStates'), s, `must be one of ${JOB_STATUSES.join(', ')}`);
  }
  const nonRetryableErrors = options.nonRetryableErrors ?? [];
  if (!Array.isArray(nonRetryableErrors) || nonRetryableErrors.some((c) => typeof c !== 'function')) {
    throw new InvalidArgumentError(
      f('nonRetryableErrors'),
      nonRetryableErrors,
      'must be an array of error classes',
    );
  }
  const priority = options.priority ?? 0;
  checkInt(priority, f('priority'), -2_147_483_648, 2_147_483_647);
  if (options.singleton !== undefined && typeof options.singleton !== 'boolean') {
    throw new InvalidArgumentError(f('singleton'), options.singleton, 'must be a boolean');
  }

  const inject =
    options.inject === undefined
      ? null
      : Object.freeze(Object.fromEntries(checkInjectMap(options.inject, f('inject'))));

  const def: ActorRef<P, R, I, D> = {
    name,
    queue,
    payloadSchema: options.payload ?? null,
    resultSchema: options.result ?? null,
    payloadSchemaVersion: checkInt(
      options.payloadSchemaVersion ?? 1,
      f('payloadSchemaVersion'),
      1,
      2_147_483_647,
    ),
    retry: RetryPolicy.from(options.retry, f('retry')),
    resultTtlMs: toMsOrNull(options.resultTtl, f('resultTtl'), 'nonNegative'),
    singleton: options.singleton ?? false,
    maxConcurrent: nullableInt(options.maxConcurrent, f('maxConcurrent'), 0),
    maxPending: nullableInt(options.maxPending, f('maxPending'), 0),
    metadata: Object.freeze({ ...metadata }),
    uniqueForMs: toMsOrNull(options.uniqueFor, f('uniqueFor')),
    uniqueStates: Object.freeze([...uniqueStates]),
    startToCloseMs: toMsOrNull(options.startToClose, f('startToClose'), 'positive', MAX_TIMER_MS),
    heartbeatTimeoutMs: toMsOrNull(options.heartbeatTimeout, f('heartbeatTimeout'), 'positive', MAX_TIMER_MS),
    rateLimits: Object.freeze(limitEntries(options.rateLimits, f('rateLimits'))),
    reservations: Object.freeze(limitEntries(options.reservations, f('reservations'))),
    nonRetryableErrors: Object.freeze([...nonRetryableErrors]),
    retryClassifier: optionalFn(options.retryClassifier, f('retryClassifier')),
    onRetryExhausted: optionalFn(options.onRetryExhausted, f('onRetryExhausted')),
    onRetryExhaustedTimeoutMs: toMsOrNull(
      options.onRetryExhaustedTimeout ?? 3000,
      f('onRetryExhaustedTimeout'),
      'positive',
      MAX_TIMER_MS,
    ) as number,
    onSuccess: optionalFn(options.onSuccess, f('onSuccess')),
    onSuccessTimeoutMs: toMsOrNull(
      options.onSuccessTimeout ?? 3000,
      f('onSuccessTimeout'),
      'positive',
      MAX_TIMER_MS,
    ) as number,
    priority,
    thread: normalizeThread(options.thread, f('thread')),
    inject,
    handler: handler as unknown as ActorHandler<P, R>,
    async run(payload: P, ctx: JobContext<P>, deps?: D): Promise<R> {
      if (inject !== null && deps === undefined)
        throw new DIError(
          `actor ${JSON.stringify(name)} injects ${Object.keys(inject).join(', ')}: pass them to run(payload, ctx, deps)`,
        );
      return handler(payload, ctx, deps as D);
    },
  };
  return Object.freeze(def);
}

const THREAD_KEYS: readonly string[] = ['module', 'exportName'];

function normalizeThread(
  value: ActorOptions['thread'],
  field: string,
): { module: string; exportName: string } | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object')
    throw new InvalidArgumentError(field, value, 'must be { module, exportName? }');
  checkKnownKeys(value, THREAD_KEYS, field, 'a field of thread ({ module, exportName? })');
  const raw = value.module;
  let module: string;
  if (raw instanceof URL) module = raw.href;
  else if (typeof raw === 'string' && raw.startsWith('file:')) module = raw;
  else if (typeof raw === 'string' && isAbsolute(raw)) module = pathToFileURL(raw).href;
  else
    throw new InvalidArgumentError(
      `${field}.module`,
      raw,
      "must be a file URL (new URL('./handler.js', import.meta.url)) or an absolute path",
    );
  const exportName = value.exportName ?? 'default';
  if (typeof exportName !== 'string' || exportName === '')
    throw new InvalidArgumentError(`${field}.exportName`, exportName, 'must be a non-empty string');
  return { module, exportName };
}

/**
 * Declares an actor whose handler runs in a worker thread (see `ActorOptions.thread`). The module's
 * export receives `(payload, ctx)` with `ctx.signal`, `ctx.shouldAbort()`, `ctx.heartbeat()` and
 * `ctx.progress()`; its return value is the result. With `inject`, it receives the injected values
 * as a third argument, copied to the thread by structured clone (see docs/dependencies.md). Called
 * in-process (`ref.run()`), it imports the module on the calling thread.
 *
 * ```ts
 * export const crunch = threadActor({ name: 'crunch', payload: Numbers, module: new URL('./crunch.js', import.meta.url) });
 * ```
 */
export function threadActor<P = unknown, R = unknown, I = P, J extends InjectMap = NoDependencies>(
  options: Omit<ActorOptions<P, R, I>, 'thread' | 'inject'> & {
    module: string | URL;
    exportName?: string;
    inject?: J;
  },
): ActorRef<P, R, I, DepsOf<J>> {
  const { module, exportName, ...rest } = options;
  const thread = normalizeThread({ module, exportName }, `threadActor(${String(rest.name)})`);
  return declareActor<P, R, I, DepsOf<J>>(
    { ...rest, thread: { module, exportName } },
    async (payload, ctx, deps) => {
      const mod = (await import(thread!.module)) as Record<string, unknown>;
      const fn = mod[thread!.exportName];
      if (typeof fn !== 'function')
        throw new TypeError(`${thread!.module} has no function export ${thread!.exportName}`);
      return (fn as InjectedActorHandler<P, R, DepsOf<J>>)(payload, ctx, deps);
    },
  );
}
