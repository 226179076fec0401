import type { Executor } from '../../db/driver.js';
import { MaxPendingExceededError, SingletonCollisionError } from '../../errors/backpressure-errors.js';
import type { EnqueueArgs, JobRow } from '../types.js';
import type { PgOps } from './pg-ops.js';
import { toJobRow, toStoredRetryKind } from './row-mapper.js';
import { newJobRow } from '../new-job-row.js';
import {
  assertBatchKeysOneActor,
  gateLockNames,
  hasUniqueGate,
  idempotencyKeyOf,
  keyConflict,
  needsGateLock,
  resolveBatchGates,
  rowsOfOutcomes,
  uniqueKey,
  type BatchGateState,
} from '../enqueue-gates.js';
import { actorLockKey } from '../actor-deregistration.js';
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
 * - `byCaller`: no NOTIFY and no announce: the caller, whose transaction this is, sends the wake-up
 *   once it has committed (the success written with its sub-jobs).
 * The backend chooses `inline` when no other enqueue of its own is in flight and `afterCommit`
 * otherwise. An enqueue on the caller's connection always notifies inline: the NOTIFY belongs to
 * the caller's transaction and is delivered only if it commits.
 */
export type EnqueueWake = 'inline' | 'afterCommit' | 'byCaller';

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
 * Where an enqueue runs: on the backend's own pool (`ownPool`: a batch that needs several
 * statements opens a transaction of its own there) or on the caller's connection, inside the
 * caller's transaction.
 */
export interface EnqueueTarget {
  ex: Executor;
  ownPool: boolean;
}

/**
 * One enqueue. Without a gate, the plain insert. With gates, the gate statement (uniqueFor,
 * singleton, maxPending, idempotency) and, when ON CONFLICT met a row committed after the
 * statement's snapshot, a fresh read of that row. The statement checks `maxPending` and
 * `uniqueFor` after taking their gate locks (see migration 0002), which its transaction holds
 * until it ends: the statement's own on the pool, the caller's with a connection.
 */
export async function enqueueOne(
  ops: PgOps,
  target: EnqueueTarget,
  a: EnqueueArgs,
  wake: EnqueueWake,
): Promise<JobRow> {
  if (hasNoGate(a)) return enqueuePlain(ops, target.ex, a, wake);
  const out = await gateStatement(ops, target.ex, a, statementChannel(ops, wake));
  if (wake === 'afterCommit' && out.inserted) await announceWake(ops);
  return out.row;
}

/**
 * The keys of the gate locks `list` takes (`lock_enqueue_gates`, migration 0002): each gate's name
 * behind the schema's, so that tenants in different schemas never wait on each other.
 */
function gateLockKeys(ops: PgOps, list: readonly EnqueueArgs[]): string[] {
  return gateLockNames(list).map((name) => `${ops.schema}:${name}`);
}

/**
 * The enqueue-lock keys of the actors of `list`, each once: every insert into `jobs` takes them
 * shared (in its statement), so that an actor's deregistration, which takes its key exclusively,
 * is ordered with every enqueue of that actor (see `pg-actor-deregistration.ts`).
 */
export function actorLockKeys(ops: PgOps, list: readonly EnqueueArgs[]): string[] {
  return [...new Set(list.map((a) => a.actor))].map((actor) => actorLockKey(ops.schema, actor));
}

/** Takes the gate locks of `list` (none when no item has a `maxPending` or `uniqueFor` gate). */
export async function lockGates(ops: PgOps, ex: Executor, list: readonly EnqueueArgs[]): Promise<void> {
  const keys = gateLockKeys(ops, list);
  if (keys.length > 0) await ops.run('lockGates', [keys], ex);
}

/** The `enqueue` statement and its outcome: the row to return, and whether it is a new one. */
async function gateStatement(
  ops: PgOps,
  ex: Executor,
  a: EnqueueArgs,
  channel: string | null,
): Promise<{ row: JobRow; inserted: boolean }> {
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
        channel,
        a.scheduledDelayMs,
        needsGateLock(a) ? gateLockKeys(ops, [a]) : [],
        actorLockKey(ops.schema, a.actor),
      ],
      ex,
    );
  } catch (err) {
    throw translateUnique(err, a.actor);
  }
  const r = rows[0] as Raw;
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
  let row: JobRow;
  if (r.id !== null && r.id !== undefined) row = toJobRow(r);
  else {
    // ON CONFLICT met a row committed after this statement's snapshot: read it with a fresh one.
    const existing = await ops.run('getByIdempotencyKey', [a.idempotencyScope, a.idempotencyKey], ex);
    if (!existing[0])
      throw new Error(`enqueue of ${a.id} neither inserted nor found an existing row; retry the enqueue`);
    row = toJobRow(existing[0]);
  }
  // The key is another actor's (a uniqueFor hit is always this actor's): nothing was inserted.
  if (row.id !== a.id && row.actor !== a.actor) throw keyConflict(a, row.actor, row.id);
  return { row, inserted: row.id === a.id };
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
      actorLockKey(ops.schema, a.actor),
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

/**
 * Up to 1000 jobs; idempotency collisions map to the existing rows, in order. A batch with no
 * gate lock to take and no idempotency key is one statement. Otherwise, in one transaction (the
 * batch's own on the pool, the caller's with a connection): the gate locks, one read of what the
 * gates look at, the decision (`resolveBatchGates`: it throws before anything is written), and the
 * insert of the items that remain. `countedIn`: the batches row the new jobs count toward (their
 * `batch_id` column), or null.
 */
export async function enqueueMany(
  ops: PgOps,
  list: readonly EnqueueArgs[],
  target: EnqueueTarget,
  wake: EnqueueWake,
  countedIn: string | null = null,
): Promise<JobRow[]> {
  if (list.length === 0) return [];
  const channel = statementChannel(ops, wake);
  if (!list.some((a) => needsGateLock(a) || a.idempotencyKey !== null)) {
    const rows = await insertBatch(ops, list, target.ex, channel, countedIn);
    const inserted = insertedRows(list, rows);
    if (wake === 'afterCommit') await announceWake(ops);
    return inserted.map((row, i) => {
      if (!row) throw new Error(`enqueueBatch: item ${list[i]!.id} was not inserted`);
      return row;
    });
  }
  assertBatchKeysOneActor(list);
  const run = (ex: Executor): Promise<{ rows: JobRow[]; inserted: number }> =>
    gatedBatch(ops, list, ex, channel, countedIn);
  const out = target.ownPool ? await ops.driver.transaction(run) : await run(target.ex);
  if (wake === 'afterCommit' && out.inserted > 0) await announceWake(ops);
  return out.rows;
}

/** The gated batch inside its transaction: locks, gate read, decision, insert, mapping. */
async function gatedBatch(
  ops: PgOps,
  list: readonly EnqueueArgs[],
  ex: Executor,
  channel: string | null,
  countedIn: string | null,
): Promise<{ rows: JobRow[]; inserted: number }> {
  await lockGates(ops, ex, list);
  const outcomes = resolveBatchGates(list, await readBatchGates(ops, list, ex));
  const positions = outcomes.flatMap((o, i) => (o.kind === 'insert' ? [i] : []));
  const insert = positions.map((i) => list[i]!);
  const byPosition = new Map<number, JobRow>();
  let inserted = 0;
  if (insert.length > 0) {
    const rows = insertedRows(insert, await insertBatch(ops, insert, ex, channel, countedIn));
    const missing: number[] = [];
    rows.forEach((row, k) => {
      if (row) {
        byPosition.set(positions[k]!, row);
        inserted++;
      } else missing.push(k);
    });
    if (missing.length > 0) {
      // ON CONFLICT skipped them: their key was committed after the gate read (by a caller with
      // no gate lock in common). Read those rows with a fresh snapshot.
      const keyed = missing.map((k) => insert[k]!);
      const found = new Map<string, JobRow>();
      for (const r of await ops.run(
        'getByIdempotencyKeys',
        [keyed.map((a) => a.idempotencyScope), keyed.map((a) => a.idempotencyKey)],
        ex,
      )) {
        const row = toJobRow(r);
        found.set(`${row.idempotencyScope}\u0000${row.idempotencyKey}`, row);
      }
      for (const k of missing) {
        const a = insert[k]!;
        const row = found.get(idempotencyKeyOf(a));
        if (!row)
          throw new Error(`enqueueBatch: item ${a.id} was neither inserted nor matched an existing row`);
        // Throwing rolls the batch's own transaction back; with a connection, roll yours back.
        if (row.actor !== a.actor) throw keyConflict(a, row.actor, row.id);
        byPosition.set(positions[k]!, row);
      }
    }
  }
  return { rows: rowsOfOutcomes(outcomes, byPosition), inserted };
}

/** Reads what the gates of `list` look at (`enqueueBatchGates`), under the batch's gate locks. */
async function readBatchGates(
  ops: PgOps,
  list: readonly EnqueueArgs[],
  ex: Executor,
): Promise<BatchGateState> {
  const limited = [...new Set(list.filter((a) => a.maxPending !== null).map((a) => a.actor))];
  const uniqueProbes = [...new Map(list.filter(hasUniqueGate).map((a) => [uniqueKey(a), a])).values()];
  const keyProbes = [
    ...new Map(list.filter((a) => a.idempotencyKey !== null).map((a) => [idempotencyKeyOf(a), a])).values(),
  ];
  const state = {
    pending: new Map<string, number>(),
    uniqueHits: new Map<string, JobRow>(),
    keyed: new Map<string, JobRow>(),
  };
  const rows = await ops.run(
    'enqueueBatchGates',
    [
      limited,
      uniqueProbes.map((a) => a.actor),
      uniqueProbes.map((a) => a.identityKey),
      uniqueProbes.map((a) => a.uniqueForMs),
      uniqueProbes.map((a) => a.uniqueStates.join(',')),
      keyProbes.map((a) => a.idempotencyScope),
      keyProbes.map((a) => a.idempotencyKey),
    ],
    ex,
  );
  for (const r of rows) {
    if (r.kind === 'pending') state.pending.set(r.gate_actor as string, Number(r.n));
    else if (r.id === null || r.id === undefined) continue;
    else if (r.kind === 'unique')
      state.uniqueHits.set(uniqueKey(uniqueProbes[Number(r.probe) - 1]!), toJobRow(r));
    else state.keyed.set(idempotencyKeyOf(keyProbes[Number(r.probe) - 1]!), toJobRow(r));
  }
  return state;
}

/**
 * The `enqueueBatch` statement (`enqueueBatchUnkeyed` when no item has an idempotency key) for
 * `list`; returns its rows for {@link insertedRows}.
 */
async function insertBatch(
  ops: PgOps,
  list: readonly EnqueueArgs[],
  ex: Executor,
  channel: string | null,
  countedIn: string | null,
): Promise<Raw[]> {
  // Column order of the statement: $2–$21 and $23 are arrays, $24–$44 the same columns' values,
  // $45 the counted batch, $46 the actors' enqueue-lock keys.
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
  try {
    return await ops.run(
      list.some((a) => a.idempotencyKey !== null) ? 'enqueueBatch' : 'enqueueBatchUnkeyed',
      [
        uuidArrayLiteral(list.map((a) => a.id)),
        ...columns.map((c) => c[0]),
        channel,
        delay[0],
        ...columns.map((c) => c[1]),
        delay[1],
        countedIn,
        actorLockKeys(ops, list),
      ],
      ex,
    );
  } catch (err) {
    throw translateUnique(err, list[0]?.actor ?? '');
  }
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
