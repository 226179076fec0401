/**
 * The rules of an actor's deregistration, shared by both backends: the argument checks, and the
 * decision taken once the backend has read (and locked) what the actor still has. Each backend
 * writes nothing until {@link decideDeregistration} has passed, so a refusal writes nothing.
 */
import {
  ActorHasActiveJobsError,
  ActorHasEnabledSchedulesError,
} from '../errors/actor-deregistration-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkActorName } from '../core/text-checks.js';
import type { DeregisterOptions } from './types.js';

/** The checked arguments of a deregistration. */
export interface DeregisterRequest {
  actor: string;
  force: boolean;
  purgeQueue: boolean;
}

const optionalBoolean = (value: unknown, field: string): boolean => {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, value, 'must be true or false');
  return value;
};

/** Checks the arguments of `deregister`; throws {@link InvalidArgumentError} naming the field. */
export function checkDeregister(actor: unknown, options: DeregisterOptions | undefined): DeregisterRequest {
  checkActorName(actor, 'actor');
  if (options !== undefined && (options === null || typeof options !== 'object'))
    throw new InvalidArgumentError('options', options, 'must be an object');
  const o = (options ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (key !== 'force' && key !== 'purgeQueue')
      throw new InvalidArgumentError(
        `options.${key}`,
        o[key],
        'is not an option of deregister (force, purgeQueue)',
      );
  }
  return {
    actor: actor as string,
    force: optionalBoolean(o.force, 'force'),
    purgeQueue: optionalBoolean(o.purgeQueue, 'purgeQueue'),
  };
}

/** What the actor still has, read by the backend inside the deregistration's transaction. */
export interface DeregistrationState {
  /** Its non-terminal jobs by status (statuses with no job may be absent). */
  statusCounts: Readonly<Record<string, number>>;
  /** Its enabled cron schedules, by id. */
  enabledScheduleIds: readonly string[];
}

/**
 * Throws the refusal the state calls for, in the reference's order: active jobs first (with
 * `force`, running ones only), then enabled schedules (never with `force`: they get disabled).
 */
export function decideDeregistration(req: DeregisterRequest, state: DeregistrationState): void {
  const counts: Record<string, number> = {};
  for (const [status, n] of Object.entries(state.statusCounts)) if (n > 0) counts[status] = n;
  const blocking = req.force ? (counts.running ?? 0) : Object.values(counts).reduce((sum, n) => sum + n, 0);
  if (blocking > 0) throw new ActorHasActiveJobsError(req.actor, blocking, counts, req.force);
  if (!req.force && state.enabledScheduleIds.length > 0)
    throw new ActorHasEnabledSchedulesError(req.actor, [...state.enabledScheduleIds]);
}

/**
 * The advisory-lock key that serialises an actor's deregistration against its enqueues on
 * Postgres: every insert into `jobs` takes it shared (enqueues never wait on each other), a
 * deregistration takes it exclusively. Behind the schema's name, so tenants never wait on each other.
 */
export function actorLockKey(schema: string, actor: string): string {
  return `${schema}:actor:${actor}`;
}
