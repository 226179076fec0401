import type { Backend } from '../backend/backend.js';
import type {
  ScheduleFilter,
  ScheduleFireRecord,
  ScheduleRecord,
  ScheduleSkipResult,
  ScheduleUpdateArgs,
} from '../backend/schedule-types.js';
import type { ActorRef } from '../core/actor.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { isUuid, newJobId } from '../core/ids.js';
import { checkCronSpec } from '../cron/cron-spec.js';
import type { DstStrategy } from '../cron/dst-strategy.js';
import { fireTimesAfter } from '../cron/next-fires.js';
import { checkFactoryName, checkIdentityKey, checkScheduleName } from '../cron/schedule-fields.js';
import { nextScheduleSlot } from '../cron/schedule-slot.js';
import { CRON_FIRE_HISTORY } from '../backend/schedule-types.js';
import { toJsonText } from '../core/schema-validation.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ScheduleNotFoundError } from '../errors/schedule-errors.js';
import { checkPayloadSize, payloadJson } from './payload-json.js';

/** Options of `createSchedule`. */
export interface CreateScheduleOptions {
  /** Unique per actor. Default `''`. */
  name?: string;
  /** IANA zone the expression is read in. Default `UTC`. */
  timezone?: string;
  /** DST gaps and overlaps: `skip` (default), `firstof`, `allof`. */
  dstStrategy?: DstStrategy;
  /** The payload of every fired job; validated against the actor's schema when the actor is given as a ref. */
  payload?: unknown;
  /** The name of a payload factory registered on the workers (`payloadFactories`); exclusive with `payload`. */
  payloadFactory?: string;
  /** Carried to every fired job. */
  identityKey?: string;
  /** Default true. */
  enabled?: boolean;
}

/** What `updateSchedule` changes; absent fields stay. */
export interface UpdateScheduleOptions {
  /** A new expression: the next slot is recomputed from the database clock, in the stored zone. */
  expression?: string;
  /** Enabling clears the failure count and the last error. */
  enabled?: boolean;
  /** A new static payload (clears a payload factory), or null to remove it. */
  payload?: unknown;
  /** A payload factory's name (clears the static payload), or null to remove it. */
  payloadFactory?: string | null;
}

const CREATE_KEYS = [
  'name',
  'timezone',
  'dstStrategy',
  'payload',
  'payloadFactory',
  'identityKey',
  'enabled',
] as const;
const UPDATE_KEYS = ['expression', 'enabled', 'payload', 'payloadFactory'] as const;
const FILTER_KEYS = ['actor', 'enabled'] as const;

function checkId(id: unknown, field: string): string {
  if (typeof id !== 'string' || !isUuid(id))
    throw new InvalidArgumentError(field, id, 'must be a schedule id (a UUID)');
  return id.toLowerCase();
}

function actorName(actor: unknown, field: string): { name: string; ref: ActorRef<unknown, unknown> | null } {
  if (typeof actor === 'string') {
    if (actor.length === 0 || actor.length > 200 || actor.includes('\u0000'))
      throw new InvalidArgumentError(
        field,
        actor,
        'must be an actor or an actor name (1 to 200 characters, no NUL)',
      );
    return { name: actor, ref: null };
  }
  if (actor !== null && typeof actor === 'object' && typeof (actor as ActorRef).name === 'string')
    return { name: (actor as ActorRef).name, ref: actor as ActorRef<unknown, unknown> };
  throw new InvalidArgumentError(field, actor, 'must be an actor or an actor name');
}

/**
 * A static payload as JSON text: validated against the actor's schema when the ref is known, and
 * within `payloadMaxBytes` either way (a payload too large would fail every fire instead).
 */
async function staticPayloadJson(
  ref: ActorRef<unknown, unknown> | null,
  actor: string,
  payload: unknown,
  field: string,
  maxBytes: number,
): Promise<string> {
  if (ref) return payloadJson(ref, payload, field, maxBytes);
  return checkPayloadSize(toJsonText(payload, { actor, what: field }), field, maxBytes);
}

/**
 * The schedule operations of `TaskQ` (`createSchedule`, `listSchedules`, …), kept in a module of
 * their own. Every argument is validated before anything is written.
 */
export class ScheduleApi {
  constructor(
    private readonly backend: Backend,
    private readonly payloadMaxBytes: number,
  ) {}

  async create(
    actor: unknown,
    expression: unknown,
    options: CreateScheduleOptions = {},
  ): Promise<ScheduleHandle> {
    const { name: actorNm, ref } = actorName(actor, 'createSchedule.actor');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('createSchedule.options', options, 'must be an object');
    checkKnownKeys(options, CREATE_KEYS, 'createSchedule.options', 'an option of createSchedule');
    const spec = checkCronSpec(
      { expression, timezone: options.timezone, dstStrategy: options.dstStrategy },
      'createSchedule',
    );
    if (options.payload !== undefined && options.payloadFactory !== undefined)
      throw new InvalidArgumentError(
        'createSchedule.options.payloadFactory',
        options.payloadFactory,
        'payload and payloadFactory are mutually exclusive: give one',
      );
    if (options.enabled !== undefined && typeof options.enabled !== 'boolean')
      throw new InvalidArgumentError('createSchedule.options.enabled', options.enabled, 'must be a boolean');
    const record = await this.backend.createSchedule(
      {
        id: newJobId(),
        actor: actorNm,
        name: checkScheduleName(options.name ?? '', 'createSchedule.options.name'),
        cronExpr: spec.expression,
        timezone: spec.timezone,
        dstStrategy: spec.dstStrategy,
        payloadFactory:
          options.payloadFactory === undefined
            ? null
            : checkFactoryName(options.payloadFactory, 'createSchedule.options.payloadFactory'),
        staticPayloadJson:
          options.payload === undefined
            ? null
            : await staticPayloadJson(
                ref,
                actorNm,
                options.payload,
                'createSchedule.options.payload',
                this.payloadMaxBytes,
              ),
        identityKey:
          options.identityKey === undefined
            ? null
            : checkIdentityKey(options.identityKey, 'createSchedule.options.identityKey'),
        enabled: options.enabled ?? true,
      },
      nextScheduleSlot,
    );
    return new ScheduleHandle(this, record);
  }

  async list(
    filter: { actor?: string | ActorRef<unknown, unknown>; enabled?: boolean } = {},
  ): Promise<ScheduleRecord[]> {
    if (filter === null || typeof filter !== 'object')
      throw new InvalidArgumentError('listSchedules.filter', filter, 'must be an object');
    checkKnownKeys(filter, FILTER_KEYS, 'listSchedules.filter', 'a filter of listSchedules');
    const f: ScheduleFilter = {};
    if (filter.actor !== undefined) f.actor = actorName(filter.actor, 'listSchedules.filter.actor').name;
    if (filter.enabled !== undefined) {
      if (typeof filter.enabled !== 'boolean')
        throw new InvalidArgumentError('listSchedules.filter.enabled', filter.enabled, 'must be a boolean');
      f.enabled = filter.enabled;
    }
    return this.backend.listSchedules(f);
  }

  async get(id: unknown): Promise<ScheduleHandle | null> {
    const record = await this.backend.getSchedule(checkId(id, 'getSchedule.id'));
    return record ? new ScheduleHandle(this, record) : null;
  }

  /** @throws ScheduleNotFoundError */
  async update(
    id: unknown,
    change: UpdateScheduleOptions,
    field = 'updateSchedule',
  ): Promise<ScheduleRecord> {
    const sid = checkId(id, `${field}.id`);
    if (change === null || typeof change !== 'object')
      throw new InvalidArgumentError(`${field}.change`, change, 'must be an object');
    checkKnownKeys(change, UPDATE_KEYS, `${field}.change`, 'a field of updateSchedule');
    const args: ScheduleUpdateArgs = {};
    const current = await this.backend.getSchedule(sid);
    if (!current) throw new ScheduleNotFoundError(sid);
    if (change.expression !== undefined)
      args.cronExpr = checkCronSpec(
        { expression: change.expression, timezone: current.timezone, dstStrategy: current.dstStrategy },
        field,
      ).expression;
    if (change.enabled !== undefined) {
      if (typeof change.enabled !== 'boolean')
        throw new InvalidArgumentError(`${field}.change.enabled`, change.enabled, 'must be a boolean');
      args.enabled = change.enabled;
    }
    if (change.payload !== undefined && change.payloadFactory !== undefined && change.payloadFactory !== null)
      throw new InvalidArgumentError(
        `${field}.change.payloadFactory`,
        change.payloadFactory,
        'payload and payloadFactory are mutually exclusive: give one',
      );
    if (change.payload !== undefined) {
      args.staticPayloadJson =
        change.payload === null
          ? null
          : await staticPayloadJson(
              null,
              current.actor,
              change.payload,
              `${field}.change.payload`,
              this.payloadMaxBytes,
            );
      if (change.payload !== null) args.payloadFactory = null;
    }
    if (change.payloadFactory !== undefined) {
      args.payloadFactory =
        change.payloadFactory === null
          ? null
          : checkFactoryName(change.payloadFactory, `${field}.change.payloadFactory`);
      if (change.payloadFactory !== null) args.staticPayloadJson = null;
    }
    const record = await this.backend.updateSchedule(sid, args, nextScheduleSlot);
    if (!record) throw new ScheduleNotFoundError(sid);
    return record;
  }

  /** Idempotent: false when there was no such schedule. */
  async delete(id: unknown): Promise<boolean> {
    return this.backend.deleteSchedule(checkId(id, 'deleteSchedule.id'));
  }

  /** @throws ScheduleNotFoundError */
  async runNow(id: string): Promise<ScheduleRecord> {
    const record = await this.backend.updateSchedule(id, { fireNow: true }, nextScheduleSlot);
    if (!record) throw new ScheduleNotFoundError(id);
    return record;
  }

  /**
   * Passes over the next slot without firing it (see {@link ScheduleHandle.skipNext}).
   * @throws ScheduleNotFoundError, InvalidArgumentError for an `expected` that is not a valid Date
   */
  async skipNext(id: string, expected?: Date): Promise<ScheduleSkipResult> {
    if (expected !== undefined && (!(expected instanceof Date) || Number.isNaN(expected.getTime())))
      throw new InvalidArgumentError('skipNext.expected', expected, 'must be a valid Date');
    const result = await this.backend.skipScheduleFire(id, nextScheduleSlot, expected);
    if (!result) throw new ScheduleNotFoundError(id);
    return result;
  }

  async history(id: string, limit: number): Promise<ScheduleFireRecord[]> {
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > CRON_FIRE_HISTORY)
      throw new InvalidArgumentError(
        'history.limit',
        limit,
        `must be an integer from 1 to ${CRON_FIRE_HISTORY}`,
      );
    return this.backend.listScheduleFires(id, limit);
  }
}

/**
 * One schedule: `record` as last read, and what can be done with it. `nextFireTimes(n)` previews
 * the coming slots from the stored next slot, as the leader will fire them (no clock is read).
 */
export class ScheduleHandle {
  constructor(
    private readonly api: ScheduleApi,
    private current: ScheduleRecord,
  ) {}

  get id(): string {
    return this.current.id;
  }

  /** The schedule as last read or written through this handle. */
  get record(): ScheduleRecord {
    return this.current;
  }

  /** Reads the stored schedule again. @throws ScheduleNotFoundError */
  async refresh(): Promise<ScheduleRecord> {
    const again = await this.api.get(this.id);
    if (!again) throw new ScheduleNotFoundError(this.id);
    this.current = again.record;
    return this.current;
  }

  /** Enables it, clearing its failure count and last error. */
  async enable(): Promise<ScheduleRecord> {
    this.current = await this.api.update(this.id, { enabled: true }, 'enable');
    return this.current;
  }

  async disable(): Promise<ScheduleRecord> {
    this.current = await this.api.update(this.id, { enabled: false }, 'disable');
    return this.current;
  }

  /** Deletes it (idempotent). */
  async delete(): Promise<boolean> {
    return this.api.delete(this.id);
  }

  /**
   * Makes it due now: the leader fires it at its next tick (within about a second), as a slot of
   * its own; the chain then goes on from the expression's next slot. A disabled schedule is not
   * fired.
   */
  async runNow(): Promise<ScheduleRecord> {
    this.current = await this.api.runNow(this.id);
    return this.current;
  }

  /**
   * Skips the next slot: the schedule moves to the slot after it (from its expression, zone and
   * DST strategy) without enqueuing a job or recording a fire; its failures stay. With
   * `expected`, only if the stored next slot is still that instant, so that repeating a skip
   * someone already made skips nothing more. `skipped` is the slot passed over, or null when
   * nothing was skipped (no next slot, or not at `expected`). A disabled schedule moves too.
   * @throws ScheduleNotFoundError, InvalidArgumentError
   */
  async skipNext(expected?: Date): Promise<ScheduleSkipResult> {
    const result = await this.api.skipNext(this.id, expected);
    this.current = result.record;
    return result;
  }

  /** The next `n` (1–1000) slots from the stored next slot, the stored one first. */
  nextFireTimes(n: number): Date[] {
    if (!Number.isSafeInteger(n) || n < 1 || n > 1000)
      throw new InvalidArgumentError('nextFireTimes.n', n, 'must be an integer from 1 to 1000');
    const s = this.current;
    if (s.nextFireAt === null) return [];
    const spec = { expression: s.cronExpr, timezone: s.timezone, dstStrategy: s.dstStrategy };
    return n === 1 ? [s.nextFireAt] : [s.nextFireAt, ...fireTimesAfter(spec, s.nextFireAt, n - 1)];
  }

  /** Its most recent fires (slot, job id), newest first; at most `CRON_FIRE_HISTORY` are kept. */
  history(limit = 20): Promise<ScheduleFireRecord[]> {
    return this.api.history(this.id, limit);
  }
}
