import type { AnyActor, ActorRef, InputOf } from '../core/actor.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkCronSpec } from './cron-spec.js';
import type { DstStrategy } from './dst-strategy.js';
import { checkScheduleName, checkIdentityKey } from './schedule-fields.js';

/** What a payload factory is told when it is called, once per fired slot. */
export interface PayloadFactoryContext {
  scheduleId: string;
  scheduleName: string;
  actor: string;
  /** The slot being fired (database clock). */
  fireAt: Date;
}

/** Makes a fired job's payload at fire time; its result is validated against the actor's schema. */
export type PayloadFactory = (ctx: PayloadFactoryContext) => unknown;

/** Options of {@link cron}. */
export interface CronOptions<P = unknown> {
  /** Unique per actor; `(actor, name)` identifies the schedule. Default `''`. */
  name?: string;
  /** The payload of every fired job (validated against the actor's schema when the worker creates the schedule). */
  payload?: P;
  /**
   * Makes the payload at fire time instead (exclusive with `payload`). It is registered on the
   * worker that declares the schedule, under `cron:<actor>:<name>`; the leader calls it.
   */
  payloadFactory?: PayloadFactory;
  /** Carried to every fired job (`identityKey`: one at a time per key, `uniqueFor` dedup). */
  identityKey?: string;
  /** IANA zone the expression is read in. Default `UTC`. */
  timezone?: string;
  /** DST gaps and overlaps: `skip` (default), `firstof`, `allof` (docs/cron.md). */
  dstStrategy?: DstStrategy;
  /** Default true. */
  enabled?: boolean;
}

/** A schedule declared in code; a worker given it creates it at start when `(actor, name)` has none. */
export interface CronDeclaration {
  readonly kind: 'taskq.cron';
  readonly actor: AnyActor;
  readonly expression: string;
  readonly timezone: string;
  readonly dstStrategy: DstStrategy;
  readonly name: string;
  readonly payload: unknown;
  readonly hasPayload: boolean;
  readonly payloadFactory: PayloadFactory | null;
  /** The factory's registered name (`cron:<actor>:<name>`), or null. */
  readonly payloadFactoryName: string | null;
  readonly identityKey: string | null;
  readonly enabled: boolean;
}

const CRON_OPTION_KEYS = [
  'name',
  'payload',
  'payloadFactory',
  'identityKey',
  'timezone',
  'dstStrategy',
  'enabled',
] as const;

/**
 * Declares a recurring schedule for `actor`, to pass to a worker (`schedules`) or to export from a
 * `taskq worker --module` file:
 *
 * ```ts
 * export const nightly = cron('30 2 * * *', sendReport, { name: 'nightly', timezone: 'Europe/Berlin', payload: { kind: 'daily' } });
 * ```
 *
 * Validated here (expression, zone, strategy, the two payload sources); the payload itself is
 * validated against the actor's schema when a worker creates the schedule. A worker creates a
 * declared schedule once and never overwrites it: a changed declaration is reported at start
 * (`cron-declaration-drift`) and applied with `updateSchedule` or `taskq schedules` (docs/cron.md).
 * @throws InvalidArgumentError naming the field
 */
export function cron<A extends AnyActor>(
  expression: string,
  actor: A,
  options: CronOptions<InputOf<A>> = {},
): CronDeclaration {
  if (
    !actor ||
    typeof (actor as ActorRef).name !== 'string' ||
    typeof (actor as ActorRef).handler !== 'function'
  )
    throw new InvalidArgumentError('cron.actor', actor, 'must be an actor declared with actor()');
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('cron.options', options, 'must be an object');
  checkKnownKeys(options, CRON_OPTION_KEYS, 'cron.options', 'an option of cron()');
  const spec = checkCronSpec(
    { expression, timezone: options.timezone, dstStrategy: options.dstStrategy },
    'cron',
  );
  const name = checkScheduleName(options.name ?? '', 'cron.options.name');
  const hasPayload = options.payload !== undefined;
  if (hasPayload && options.payloadFactory !== undefined)
    throw new InvalidArgumentError(
      'cron.options.payloadFactory',
      '[function]',
      'payload and payloadFactory are mutually exclusive: give one',
    );
  if (options.payloadFactory !== undefined && typeof options.payloadFactory !== 'function')
    throw new InvalidArgumentError(
      'cron.options.payloadFactory',
      options.payloadFactory,
      'must be a function',
    );
  if (options.enabled !== undefined && typeof options.enabled !== 'boolean')
    throw new InvalidArgumentError('cron.options.enabled', options.enabled, 'must be a boolean');
  return Object.freeze({
    kind: 'taskq.cron' as const,
    actor,
    expression: spec.expression,
    timezone: spec.timezone,
    dstStrategy: spec.dstStrategy,
    name,
    payload: options.payload,
    hasPayload,
    payloadFactory: options.payloadFactory ?? null,
    payloadFactoryName: options.payloadFactory ? `cron:${actor.name}:${name}` : null,
    identityKey:
      options.identityKey === undefined
        ? null
        : checkIdentityKey(options.identityKey, 'cron.options.identityKey'),
    enabled: options.enabled ?? true,
  });
}

/** True for what {@link cron} returns (checked structurally: a module may bundle its own copy of taskq). */
export function isCronDeclaration(value: unknown): value is CronDeclaration {
  return value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'taskq.cron';
}
