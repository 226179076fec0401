import type { Executor } from '../../db/driver.js';
import { MaxPendingExceededError, SingletonCollisionError } from '../../errors/backpressure-errors.js';
import type { EnqueueArgs, JobRow } from '../types.js';
import type { PgOps } from './pg-ops.js';
import { toJobRow } from './row-mapper.js';
import { newJobRow } from '../new-job-row.js';
import { paramColumn } from './param-column.js';

type Raw = Record<string, unknown>;

/**
 * One enqueue: the gate statement (uniqueFor, singleton, maxPending, idempotency) and, when ON
 * CONFLICT met a row committed after the statement's snapshot, a fresh read of that row.
 */
export async function enqueueOne(ops: PgOps, ex: Executor, a: EnqueueArgs): Promise<JobRow> {
  if (hasNoGate(a)) return enqueuePlain(ops, ex, a);
  let rows: Raw[];
  try {
    rows = await ops.run(
      'enqueue',
      [
        ...jobParams(a),
        a.idempotencyKey,
        a.idempotencyScope,
        a.traceId,
        a.spanId,
        JSON.stringify(a.metadata),
        a.tags,
        a.maxPending,
        a.singleton,
        a.uniqueForMs,
        a.uniqueStates,
        ops.channels.wake,
        a.scheduledDelayMs,
      ],
      ex,
    );
  } catch (err) {
    throw translateUnique(err, a.actor);
  }
  const r = rows[0] as Raw;
  switch (r.verdict) {
    case 'singleton': {
      const deadline = r.singleton_deadline_ms === null ? null : Number(r.singleton_deadline_ms);
      throw new SingletonCollisionError(
        a.actor,
        r.singleton_job_id as string,
        deadline === null ? null : Math.max(0, deadline - Date.now()),
      );
    }
    case 'max_pending':
      throw new MaxPendingExceededError(a.actor, Number(r.pending_count), a.maxPending as number);
    default:
      break;
  }
  if (r.id !== null && r.id !== undefined) return toJobRow(r);
  // ON CONFLICT met a row committed after this statement's snapshot: read it with a fresh one.
  const existing = await ops.run('getByIdempotencyKey', [a.idempotencyScope, a.idempotencyKey], ex);
  if (existing[0]) return toJobRow(existing[0]);
  throw new Error(`enqueue of ${a.id} neither inserted nor found an existing row; retry the enqueue`);
}

/** The first 15 parameters of `enqueue` and `enqueuePlain`: the job's own columns, in order. */
function jobParams(a: EnqueueArgs): unknown[] {
  return [
    a.id,
    a.actor,
    a.queue,
    a.identityKey,
    a.fairnessKey,
    a.payloadJson,
    a.payloadSchemaVer,
    a.priority,
    a.maxAttempts,
    a.retryKind,
    a.scheduledAt,
    a.scheduleToClose,
    a.scheduleToCloseIntervalMs,
    a.startToCloseMs,
    a.heartbeatTimeoutMs,
  ];
}

/** True when the enqueue has nothing to check before inserting (no uniqueness, limit or key). */
function hasNoGate(a: EnqueueArgs): boolean {
  return a.uniqueForMs === null && !a.singleton && a.maxPending === null && a.idempotencyKey === null;
}

/** An enqueue with no gate: the insert and its wake-up (`enqueuePlain`), the row built locally. */
async function enqueuePlain(ops: PgOps, ex: Executor, a: EnqueueArgs): Promise<JobRow> {
  const rows = await ops.run(
    'enqueuePlain',
    [
      ...jobParams(a),
      a.traceId,
      a.spanId,
      JSON.stringify(a.metadata),
      a.tags,
      ops.channels.wake,
      a.scheduledDelayMs,
      a.idempotencyScope,
    ],
    ex,
  );
  return insertedRow(a, rows[0] as Raw);
}

/** Maps the singleton unique index's violation to the error enqueue callers expect. */
export function translateUnique(err: unknown, actor: string): unknown {
  const e = err as { code?: string; constraint?: string };
  if (e.code === '23505' && e.constraint === 'jobs_singleton_active_uniq')
    return new SingletonCollisionError(actor);
  return err;
}

/**
 * The row of a job this statement inserted: the caller's arguments plus what the database decided
 * (status, creation and run times, the anchored deadline). Same values as reading the row back.
 */
function insertedRow(a: EnqueueArgs, r: Raw): JobRow {
  const stc = r.schedule_to_close_ms;
  return newJobRow(a, {
    status: r.status as JobRow['status'],
    createdAt: new Date(Number(r.created_ms)),
    scheduledAt: new Date(Number(r.scheduled_ms)),
    scheduleToClose: stc === null || stc === undefined ? null : new Date(Number(stc)),
  });
}

/** Up to 1000 jobs in one statement; idempotency collisions map to the existing rows, in order. */
export async function enqueueMany(ops: PgOps, list: readonly EnqueueArgs[], ex: Executor): Promise<JobRow[]> {
  if (list.length === 0) return [];
  const col = <T>(f: (a: EnqueueArgs) => T): T[] | null => paramColumn(list, f);
  let rows: Raw[];
  try {
    rows = await ops.run(
      'enqueueBatch',
      [
        col((a) => a.id),
        col((a) => a.actor),
        col((a) => a.queue),
        col((a) => a.identityKey),
        col((a) => a.fairnessKey),
        col((a) => a.payloadJson),
        col((a) => a.payloadSchemaVer),
        col((a) => a.priority),
        col((a) => a.maxAttempts),
        col((a) => a.retryKind),
        col((a) => a.scheduledAt),
        col((a) => a.scheduleToClose),
        col((a) => a.scheduleToCloseIntervalMs),
        col((a) => a.startToCloseMs),
        col((a) => a.heartbeatTimeoutMs),
        col((a) => a.idempotencyKey),
        col((a) => a.idempotencyScope),
        col((a) => a.traceId),
        col((a) => a.spanId),
        col((a) => JSON.stringify(a.metadata)),
        col((a) => JSON.stringify(a.tags)),
        ops.channels.wake,
        col((a) => a.scheduledDelayMs),
      ],
      ex,
    );
  } catch (err) {
    throw translateUnique(err, list[0]?.actor ?? '');
  }
  const byId = new Map<string, JobRow>();
  const argsById = new Map(list.map((a) => [a.id, a]));
  for (const r of rows) byId.set(r.id as string, insertedRow(argsById.get(r.id as string)!, r));
  const missing = list.filter((a) => !byId.has(a.id));
  const byKey = new Map<string, JobRow>();
  if (missing.length > 0) {
    const existing = await ops.run(
      'getByIdempotencyKeys',
      [missing.map((a) => a.idempotencyScope), missing.map((a) => a.idempotencyKey)],
      ex,
    );
    for (const r of existing) {
      const row = toJobRow(r);
      byKey.set(`${row.idempotencyScope}\u0000${row.idempotencyKey}`, row);
    }
  }
  return list.map((a) => {
    const row = byId.get(a.id) ?? byKey.get(`${a.idempotencyScope}\u0000${a.idempotencyKey}`);
    if (!row) throw new Error(`enqueueBatch: item ${a.id} was neither inserted nor matched an existing row`);
    return row;
  });
}
