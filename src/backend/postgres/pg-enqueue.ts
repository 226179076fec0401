import type { Executor } from '../../db/driver.js';
import { MaxPendingExceededError, SingletonCollisionError } from '../../errors/backpressure-errors.js';
import type { EnqueueArgs, JobRow } from '../types.js';
import type { PgOps } from './pg-ops.js';
import { toJobRow, toStoredRetryKind } from './row-mapper.js';
import { newJobRow } from '../new-job-row.js';
import {
  dateColumn,
  jsonColumn,
  numberColumn,
  textColumn,
  uuidArrayLiteral,
  type BatchColumn,
} from './batch-column.js';

type Raw = Record<string, unknown>;

/**
 * How an enqueue on the backend's own pool wakes the workers:
 * - `inline`: the insert statement NOTIFYs, so the wake-up leaves when the insert commits, the
 *   earliest it can. But Postgres holds one server-wide lock from a notifying transaction's
 *   pre-commit until its commit record is flushed: concurrent notifying commits are flushed one by
 *   one instead of together, which cuts the commit rate of concurrent enqueues several times over.
 * - `afterCommit`: the insert statement does not NOTIFY; once it has committed, a separate
 *   `announce` (a transaction that writes nothing, so its commit waits for no flush) sends the
 *   wake-up. One more round trip, so the wake-up leaves slightly later. The enqueue resolves after
 *   it, as an inline one resolves after its NOTIFY: once an enqueue has returned, its wake-up has
 *   left (a caller that then sends a NOTIFY of its own, or reads the channel, sees them in that
 *   order).
 * The backend chooses `inline` when no other enqueue of its own is in flight and `afterCommit`
 * otherwise. An enqueue on the caller's connection always notifies inline: the NOTIFY belongs to
 * the caller's transaction and is delivered only if it commits.
 */
export type EnqueueWake = 'inline' | 'afterCommit';

/** The channel the insert statement NOTIFYs: the wake channel inline, none (NULL) after commit. */
function statementChannel(ops: PgOps, wake: EnqueueWake): string | null {
  return wake === 'inline' ? ops.channels.wake : null;
}

/**
 * The wake-up of an insert that committed without a NOTIFY. Never rejects: the job is committed
 * whatever happens here, and a lost wake-up only delays it to the workers' next poll.
 */
async function announceWake(ops: PgOps): Promise<void> {
  try {
    await ops.run('announce', [[ops.channels.wake], ['']]);
  } catch (err) {
    ops.logger.warn({ err }, 'enqueue-announce-failed');
  }
}

/**
 * One enqueue: the gate statement (uniqueFor, singleton, maxPending, idempotency) and, when ON
 * CONFLICT met a row committed after the statement's snapshot, a fresh read of that row.
 */
export async function enqueueOne(
  ops: PgOps,
  ex: Executor,
  a: EnqueueArgs,
  wake: EnqueueWake,
): Promise<JobRow> {
  if (hasNoGate(a)) return enqueuePlain(ops, ex, a, wake);
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
        statementChannel(ops, wake),
        a.scheduledDelayMs,
      ],
      ex,
    );
  } catch (err) {
    throw translateUnique(err, a.actor);
  }
  const r = rows[0] as Raw;
  if (wake === 'afterCommit' && r.verdict === 'insert' && r.id === a.id) await announceWake(ops);
  switch (r.verdict) {
    case 'singleton': {
      const retryAfter = r.singleton_retry_after_ms;
      throw new SingletonCollisionError(
        a.actor,
        r.singleton_job_id as string,
        retryAfter === null || retryAfter === undefined ? null : Number(retryAfter),
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
    toStoredRetryKind(a.retryKind),
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
async function enqueuePlain(ops: PgOps, ex: Executor, a: EnqueueArgs, wake: EnqueueWake): Promise<JobRow> {
  const rows = await ops.run(
    'enqueuePlain',
    [
      ...jobParams(a),
      a.traceId,
      a.spanId,
      JSON.stringify(a.metadata),
      a.tags,
      statementChannel(ops, wake),
      a.scheduledDelayMs,
      a.idempotencyScope,
    ],
    ex,
  );
  if (wake === 'afterCommit') await announceWake(ops);
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
    // enqueueBatch leaves it NULL when the job runs at its creation time.
    scheduledAt: new Date(Number(r.scheduled_ms ?? r.created_ms)),
    scheduleToClose: stc === null || stc === undefined ? null : new Date(Number(stc)),
  });
}

/** Up to 1000 jobs in one statement; idempotency collisions map to the existing rows, in order. */
export async function enqueueMany(
  ops: PgOps,
  list: readonly EnqueueArgs[],
  ex: Executor,
  wake: EnqueueWake,
): Promise<JobRow[]> {
  if (list.length === 0) return [];
  // Column order of the statement: $2–$21 and $23 are arrays, $24–$44 the same columns' values.
  const columns: BatchColumn[] = [
    textColumn(list, (a) => a.actor),
    textColumn(list, (a) => a.queue),
    textColumn(list, (a) => a.identityKey),
    textColumn(list, (a) => a.fairnessKey),
    textColumn(list, (a) => a.payloadJson),
    numberColumn(list, (a) => a.payloadSchemaVer),
    numberColumn(list, (a) => a.priority),
    numberColumn(list, (a) => a.maxAttempts),
    textColumn(list, (a) => toStoredRetryKind(a.retryKind)),
    dateColumn(list, (a) => a.scheduledAt),
    dateColumn(list, (a) => a.scheduleToClose),
    numberColumn(list, (a) => a.scheduleToCloseIntervalMs),
    numberColumn(list, (a) => a.startToCloseMs),
    numberColumn(list, (a) => a.heartbeatTimeoutMs),
    textColumn(list, (a) => a.idempotencyKey),
    textColumn(list, (a) => a.idempotencyScope),
    textColumn(list, (a) => a.traceId),
    textColumn(list, (a) => a.spanId),
    jsonColumn(list, (a) => a.metadata),
    jsonColumn(list, (a) => a.tags),
  ];
  const delay = numberColumn(list, (a) => a.scheduledDelayMs);
  let rows: Raw[];
  try {
    rows = await ops.run(
      list.some((a) => a.idempotencyKey !== null) ? 'enqueueBatch' : 'enqueueBatchUnkeyed',
      [
        uuidArrayLiteral(list.map((a) => a.id)),
        ...columns.map((c) => c[0]),
        statementChannel(ops, wake),
        delay[0],
        ...columns.map((c) => c[1]),
        delay[1],
      ],
      ex,
    );
  } catch (err) {
    throw translateUnique(err, list[0]?.actor ?? '');
  }
  const inserted = insertedRows(list, rows);
  if (wake === 'afterCommit' && inserted.some((r) => r !== undefined)) await announceWake(ops);
  const missing = list.filter((a, i) => inserted[i] === undefined);
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
  return list.map((a, i) => {
    const row = inserted[i] ?? byKey.get(`${a.idempotencyScope}\u0000${a.idempotencyKey}`);
    if (!row) throw new Error(`enqueueBatch: item ${a.id} was neither inserted nor matched an existing row`);
    return row;
  });
}

/**
 * The inserted rows, by item position (`undefined` where ON CONFLICT skipped the item), from what
 * `enqueueBatch` returns: a row for each job whose outcome the caller cannot tell (an idempotency
 * key, scheduled, a deadline), then one row with the insert time and the number inserted. Every
 * other item was inserted pending, to run at the insert time. The statement inserts in item order
 * and returns rows in it, so one walk pairs them; should the order ever differ, the rows are paired
 * by id instead.
 */
export function insertedRows(list: readonly EnqueueArgs[], rows: readonly Raw[]): (JobRow | undefined)[] {
  const summary = rows.find((r) => r.id === null);
  if (!summary) throw new Error('enqueueBatch: the statement returned no summary row');
  const returned = rows.filter((r) => r !== summary);
  const out = new Array<JobRow | undefined>(list.length);
  let k = 0;
  for (let i = 0; i < list.length && k < returned.length; i++) {
    if (list[i]!.id === returned[k]!.id) out[i] = insertedRow(list[i]!, returned[k++]!);
  }
  if (k < returned.length) {
    const index = new Map(list.map((a, i) => [a.id, i]));
    out.fill(undefined);
    for (const r of returned) {
      const i = index.get(r.id as string)!;
      out[i] = insertedRow(list[i]!, r);
    }
  }
  let inserted = returned.length;
  for (let i = 0; i < list.length; i++) {
    const a = list[i]!;
    if (out[i] !== undefined || a.idempotencyKey !== null) continue;
    out[i] = insertedRow(a, { status: 'pending', created_ms: summary.created_ms, scheduled_ms: null });
    inserted++;
  }
  if (inserted !== Number(summary.inserted)) {
    throw new Error(`enqueueBatch: ${String(summary.inserted)} jobs inserted, ${inserted} accounted for`);
  }
  return out;
}
