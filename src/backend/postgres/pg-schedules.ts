/**
 * Cron schedules on Postgres (`sql/schedules.sql`): create, read, update, delete, the leader's
 * due read, and the fire write that inserts a batch's jobs, records their slots and moves each
 * schedule on, in one transaction behind the leader's fence.
 */
import { ScheduleExistsError } from '../../errors/schedule-errors.js';
import type { Executor } from '../../db/driver.js';
import {
  CRON_FIRE_HISTORY,
  type DueSchedules,
  type NextSlot,
  type ScheduleCreateArgs,
  type ScheduleDstStrategy,
  type ScheduleFilter,
  type ScheduleFireDecision,
  type ScheduleFireRecord,
  type ScheduleFireResult,
  type ScheduleRecord,
  type ScheduleSkipResult,
  type ScheduleUpdateArgs,
} from '../schedule-types.js';
import type { EnqueueArgs } from '../types.js';
import type { LeaderFence } from '../worker-types.js';
import { enqueueMany, enqueueOne } from './pg-enqueue.js';
import { fencedTransaction } from './pg-leader-lease.js';
import type { PgOps } from './pg-ops.js';

interface Raw {
  id: string;
  actor: string;
  name: string;
  cron_expr: string;
  timezone: string;
  dst_strategy: string;
  payload_factory: string | null;
  identity_key: string | null;
  enabled: boolean;
  next_fire_at: Date | null;
  last_fired_at: Date | null;
  last_fire_error: string | null;
  consecutive_failures: number;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

function toRecord(r: Raw): ScheduleRecord {
  return {
    id: r.id,
    actor: r.actor,
    name: r.name,
    cronExpr: r.cron_expr,
    timezone: r.timezone,
    dstStrategy: r.dst_strategy as ScheduleDstStrategy,
    payloadFactory: r.payload_factory,
    staticPayload: r.metadata.static_payload,
    identityKey: r.identity_key,
    enabled: r.enabled,
    nextFireAt: r.next_fire_at,
    lastFiredAt: r.last_fired_at,
    lastFireError: r.last_fire_error,
    consecutiveFailures: Number(r.consecutive_failures),
    metadata: r.metadata,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

async function databaseNow(ops: PgOps, ex?: Executor): Promise<Date> {
  const rows = await ops.run<{ now: Date }>('databaseNow', [], ex);
  return rows[0]!.now;
}

function insertValues(a: ScheduleCreateArgs, next: Date | null): unknown[] {
  return [
    a.id,
    a.actor,
    a.name,
    a.cronExpr,
    a.timezone,
    a.dstStrategy,
    a.payloadFactory,
    a.staticPayloadJson,
    a.identityKey,
    a.enabled,
    next,
  ];
}

/**
 * Creates a schedule, its first slot computed from the database clock.
 * @throws ScheduleExistsError when `(actor, name)` has one
 */
export async function createSchedule(
  ops: PgOps,
  args: ScheduleCreateArgs,
  nextSlot: NextSlot,
): Promise<ScheduleRecord> {
  const next = nextSlot(await databaseNow(ops), args);
  try {
    const rows = await ops.run<Raw>('insertSchedule', insertValues(args, next));
    return toRecord(rows[0]!);
  } catch (err) {
    const e = err as { code?: string; constraint?: string };
    if (e.code === '23505' && e.constraint === 'cron_schedules_actor_name_key')
      throw new ScheduleExistsError(args.actor, args.name);
    throw err;
  }
}

/** Creates each schedule whose `(actor, name)` has none; returns, per argument, the stored row and whether it was created. */
export async function ensureSchedules(
  ops: PgOps,
  list: readonly ScheduleCreateArgs[],
  nextSlot: NextSlot,
): Promise<{ record: ScheduleRecord; created: boolean }[]> {
  if (list.length === 0) return [];
  const now = await databaseNow(ops);
  const out: { record: ScheduleRecord; created: boolean }[] = [];
  for (const a of list) {
    const rows = await ops.run<Raw>('insertScheduleIfAbsent', insertValues(a, nextSlot(now, a)));
    if (rows[0]) {
      out.push({ record: toRecord(rows[0]), created: true });
      continue;
    }
    const existing = await ops.run<Raw>('getScheduleByName', [a.actor, a.name]);
    // Deleted between the two statements: created by nobody, reported as absent next start.
    if (existing[0]) out.push({ record: toRecord(existing[0]), created: false });
  }
  return out;
}

export async function getSchedule(ops: PgOps, id: string): Promise<ScheduleRecord | null> {
  const rows = await ops.run<Raw>('getSchedule', [id]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function listSchedules(ops: PgOps, filter: ScheduleFilter): Promise<ScheduleRecord[]> {
  const rows = await ops.run<Raw>('listSchedules', [filter.actor ?? null, filter.enabled ?? null]);
  return rows.map(toRecord);
}

/**
 * Changes a schedule; a new expression gets its next slot from the database clock, in the stored
 * zone and strategy (read under the row's lock). Null when there is no such schedule.
 */
export async function updateSchedule(
  ops: PgOps,
  id: string,
  change: ScheduleUpdateArgs,
  nextSlot: NextSlot,
): Promise<ScheduleRecord | null> {
  return ops.driver.transaction(async (tx) => {
    const locked = await ops.run<Raw>('lockSchedule', [id], tx);
    const current = locked[0];
    if (!current) return null;
    let next: Date | null = null;
    // Re-enabling a schedule whose slot passed while it was off re-anchors it on the database
    // clock: disabled means that those slots do not fire, not that they wait.
    const now = await databaseNow(ops, tx);
    const reenabled =
      change.enabled === true &&
      !current.enabled &&
      current.next_fire_at !== null &&
      current.next_fire_at.getTime() <= now.getTime();
    const reseed = change.cronExpr !== undefined || change.fireNow === true || reenabled;
    if (change.fireNow) next = now;
    else if (reseed)
      next = nextSlot(now, {
        cronExpr: change.cronExpr ?? current.cron_expr,
        timezone: current.timezone,
        dstStrategy: current.dst_strategy as ScheduleDstStrategy,
      });
    const rows = await ops.run<Raw>(
      'updateSchedule',
      [
        id,
        change.cronExpr ?? null,
        change.enabled ?? null,
        change.payloadFactory ?? null,
        change.staticPayloadJson ?? null,
        next,
        change.cronExpr !== undefined,
        change.enabled !== undefined,
        change.payloadFactory !== undefined,
        change.staticPayloadJson !== undefined,
        reseed,
      ],
      tx,
    );
    return rows[0] ? toRecord(rows[0]) : null;
  });
}

/**
 * Skips a schedule's next slot under the row's lock: the slot after it comes from the stored
 * expression, zone and strategy, so the chain keeps its phase. Nothing is fired or recorded.
 */
export async function skipScheduleFire(
  ops: PgOps,
  id: string,
  slotAfter: NextSlot,
  expected: Date | undefined,
): Promise<ScheduleSkipResult | null> {
  return ops.driver.transaction(async (tx) => {
    const locked = await ops.run<Raw>('lockSchedule', [id], tx);
    const current = locked[0];
    if (!current) return null;
    const slot = current.next_fire_at;
    if (slot === null || (expected !== undefined && slot.getTime() !== expected.getTime()))
      return { record: toRecord(current), skipped: null };
    const next = slotAfter(slot, {
      cronExpr: current.cron_expr,
      timezone: current.timezone,
      dstStrategy: current.dst_strategy as ScheduleDstStrategy,
    });
    const rows = await ops.run<Raw>('skipScheduleFire', [id, next], tx);
    return { record: toRecord(rows[0]!), skipped: slot };
  });
}

export async function deleteSchedule(ops: PgOps, id: string): Promise<boolean> {
  const rows = await ops.run<{ deleted: number }>('deleteSchedule', [id]);
  return Number(rows[0]?.deleted ?? 0) > 0;
}

export async function dueSchedules(ops: PgOps, limit: number): Promise<DueSchedules> {
  const rows = await ops.run<Raw & { db_now: Date }>('dueSchedules', [limit]);
  return {
    now: rows[0]!.db_now,
    rows: rows.filter((r) => r.id !== null).map(toRecord),
  };
}

export async function listFires(ops: PgOps, id: string, limit: number): Promise<ScheduleFireRecord[]> {
  const rows = await ops.run<{ schedule_id: string; fire_at: Date; job_id: string; fired_at: Date }>(
    'listFires',
    [id, limit],
  );
  return rows.map((r) => ({
    scheduleId: r.schedule_id,
    fireAt: r.fire_at,
    jobId: r.job_id,
    firedAt: r.fired_at,
  }));
}

/** True when the job has a gate (its insert may be refused, or return another job). */
function gated(a: EnqueueArgs): boolean {
  return a.maxPending !== null || a.singleton || a.uniqueForMs !== null || a.idempotencyKey !== null;
}

/**
 * Writes a batch of fire decisions in one transaction (behind the fence when given): locks the
 * schedules, drops the decisions whose schedule is no longer at the slot they were made for
 * (`stale`), inserts the jobs (the ungated ones in one statement; a gated one alone, behind a
 * savepoint, so that a refusal fails its schedule's slot and nothing else), records the slots,
 * and moves every schedule to its next slot, counting failures and disabling at the threshold.
 * The jobs' wake-up goes out when the transaction commits.
 */
export async function fireSchedules(
  ops: PgOps,
  decisions: readonly ScheduleFireDecision[],
  autoDisableThreshold: number,
  fence: LeaderFence | undefined,
): Promise<ScheduleFireResult[]> {
  if (decisions.length === 0) return [];
  return fencedTransaction(ops, fence, async (txOps, tx) => {
    const locked = await txOps.run<{ id: string; next_fire_at: Date | null; enabled: boolean }>(
      'lockDueForFire',
      [decisions.map((d) => d.scheduleId)],
    );
    const at = new Map(locked.map((r) => [r.id, r]));
    const results: ScheduleFireResult[] = [];
    const live: { d: ScheduleFireDecision; result: ScheduleFireResult }[] = [];
    for (const d of decisions) {
      const row = at.get(d.scheduleId);
      const current = row?.enabled && row.next_fire_at?.getTime() === d.expectedNextFireAt.getTime();
      const result: ScheduleFireResult = {
        scheduleId: d.scheduleId,
        status: current ? (d.failure === null ? 'fired' : 'failed') : 'stale',
        jobIds: [],
        failure: current ? d.failure : null,
        disabled: false,
      };
      results.push(result);
      if (current) live.push({ d, result });
    }
    const plain = live.filter((x) => x.result.failure === null && x.d.fires.every((f) => !gated(f.job)));
    const jobs = plain.flatMap((x) => x.d.fires.map((f) => f.job));
    if (jobs.length > 0) {
      // In chunks of the batch insert's size; every row is this transaction's.
      for (let i = 0; i < jobs.length; i += 1000)
        await enqueueMany(txOps, jobs.slice(i, i + 1000), { ex: tx, ownPool: false }, 'inline');
      for (const x of plain) x.result.jobIds = x.d.fires.map((f) => f.job.id);
    }
    // A gated schedule's slots go in behind one savepoint: a refusal undoes them all and fails it.
    for (const x of live) {
      if (x.result.failure !== null || plain.includes(x)) continue;
      await tx.query('SAVEPOINT cron_fire');
      try {
        for (const f of x.d.fires)
          x.result.jobIds.push((await enqueueOne(txOps, { ex: tx, ownPool: false }, f.job, 'inline')).id);
        await tx.query('RELEASE SAVEPOINT cron_fire');
      } catch (err) {
        await tx.query('ROLLBACK TO SAVEPOINT cron_fire');
        x.result.status = 'failed';
        x.result.failure = `${(err as Error).name}: ${(err as Error).message}`;
        x.result.jobIds = [];
      }
    }
    const fired = live.filter((x) => x.result.failure === null);
    const slots = fired.flatMap((x) =>
      x.d.fires.map((f, i) => ({ id: x.d.scheduleId, at: f.fireAt, job: x.result.jobIds[i]! })),
    );
    if (slots.length > 0) {
      await txOps.run('insertFires', [
        slots.map((s) => s.id),
        slots.map((s) => s.at),
        slots.map((s) => s.job),
      ]);
      await txOps.run('trimFires', [[...new Set(slots.map((s) => s.id))], CRON_FIRE_HISTORY]);
    }
    if (live.length > 0) {
      const after = await txOps.run<{ id: string; enabled: boolean }>('advanceSchedules', [
        live.map((x) => x.d.scheduleId),
        live.map((x) => x.d.nextFireAt),
        live.map((x) => x.result.failure === null && x.d.fires.length > 0),
        live.map((x) => x.result.failure),
        autoDisableThreshold,
      ]);
      const enabled = new Map(after.map((r) => [r.id, r.enabled]));
      for (const x of live)
        x.result.disabled = x.result.failure !== null && enabled.get(x.d.scheduleId) === false;
    }
    return results;
  });
}
