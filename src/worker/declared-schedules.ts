import type { Backend } from '../backend/backend.js';
import { nextScheduleSlot } from '../cron/schedule-slot.js';
import type { Logger } from '../obs/logger.js';
import type { ScheduleCreateArgs, ScheduleRecord } from '../backend/schedule-types.js';
import { payloadJson } from '../client/payload-json.js';
import type { AnyActor } from '../core/actor.js';
import { newJobId } from '../core/ids.js';
import { isCronDeclaration, type CronDeclaration } from '../cron/cron-declaration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * A worker's `schedules` option, checked: declarations made with `cron()`, of actors the worker
 * runs, with distinct `(actor, name)`.
 * @throws InvalidArgumentError naming the entry
 */
export function checkDeclaredSchedules(
  list: readonly CronDeclaration[] | undefined,
  actors: ReadonlyMap<string, AnyActor>,
): readonly CronDeclaration[] {
  if (list === undefined) return [];
  if (!Array.isArray(list))
    throw new InvalidArgumentError('worker.schedules', list, 'must be an array of cron() declarations');
  const seen = new Set<string>();
  list.forEach((d, i) => {
    if (!isCronDeclaration(d))
      throw new InvalidArgumentError(`worker.schedules[${i}]`, d, 'must be a schedule declared with cron()');
    if (actors.get(d.actor.name) !== d.actor)
      throw new InvalidArgumentError(
        `worker.schedules[${i}].actor`,
        d.actor.name,
        "must be one of the worker's actors (the leader fires a schedule with the actor's definition)",
      );
    const key = `${d.actor.name}\u0000${d.name}`;
    if (seen.has(key))
      throw new InvalidArgumentError(
        `worker.schedules[${i}].name`,
        d.name,
        `another declaration of actor ${JSON.stringify(d.actor.name)} has this name: (actor, name) identifies a schedule`,
      );
    seen.add(key);
  });
  return list;
}

/** The stored form of a declaration; its static payload validated against the actor's schema. */
export async function declaredScheduleArgs(
  d: CronDeclaration,
  index: number,
  payloadMaxBytes: number,
): Promise<ScheduleCreateArgs> {
  const staticPayloadJson = d.hasPayload
    ? await payloadJson(d.actor, d.payload, `worker.schedules[${index}].payload`, payloadMaxBytes)
    : null;
  return {
    id: newJobId(),
    actor: d.actor.name,
    name: d.name,
    cronExpr: d.expression,
    timezone: d.timezone,
    dstStrategy: d.dstStrategy,
    payloadFactory: d.payloadFactoryName,
    staticPayloadJson,
    identityKey: d.identityKey,
    enabled: d.enabled,
  };
}

/**
 * Where a stored schedule differs from its declaration (which a worker never overwrites):
 * `field: stored → declared`, for the `cron-declaration-drift` warning. `enabled` is not compared:
 * disabling a declared schedule at run time is an operator's decision, not drift.
 */
export function scheduleDrift(declared: ScheduleCreateArgs, stored: ScheduleRecord): string[] {
  const out: string[] = [];
  const cmp = (field: string, a: unknown, b: unknown): void => {
    if (canonical(a) !== canonical(b)) out.push(`${field}: ${JSON.stringify(a)} → ${JSON.stringify(b)}`);
  };
  cmp('expression', stored.cronExpr, declared.cronExpr);
  cmp('timezone', stored.timezone, declared.timezone);
  cmp('dstStrategy', stored.dstStrategy, declared.dstStrategy);
  cmp('payloadFactory', stored.payloadFactory, declared.payloadFactory);
  cmp('identityKey', stored.identityKey, declared.identityKey);
  cmp(
    'payload',
    stored.staticPayload ?? null,
    declared.staticPayloadJson === null ? null : (JSON.parse(declared.staticPayloadJson) as unknown),
  );
  return out;
}

/** JSON with object keys sorted: the stored payload comes back from jsonb in its own key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * Creates the declared schedules that do not exist yet (their static payloads validated against
 * the actor's schema first, at most `payloadMaxBytes`), and names every difference between a
 * declaration and the stored schedule it did not overwrite (`cron-declaration-drift`).
 */
export async function createDeclaredSchedules(
  backend: Backend,
  declared: readonly CronDeclaration[],
  payloadMaxBytes: number,
  logger: Logger,
): Promise<void> {
  if (declared.length === 0) return;
  const args = await Promise.all(declared.map((d, i) => declaredScheduleArgs(d, i, payloadMaxBytes)));
  const stored = await backend.ensureSchedules(args, nextScheduleSlot);
  for (const [i, { record, created }] of stored.entries()) {
    const fields = { scheduleId: record.id, actor: record.actor, schedule: record.name };
    if (created) {
      logger.info(fields, 'cron-schedule-created');
      continue;
    }
    const drift = scheduleDrift(args[i]!, record);
    if (drift.length > 0) logger.warn({ ...fields, drift }, 'cron-declaration-drift');
  }
}
