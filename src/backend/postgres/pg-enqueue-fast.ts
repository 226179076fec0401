import type { Executor } from '../../db/driver.js';
import { DuplicateIdempotencyKeyError } from '../../errors/job-errors.js';
import { quoteSchema } from '../../core/schema-name.js';
import type { EnqueueArgs } from '../types.js';
import { textArrayLiteral } from './batch-column.js';
import { assertWithinMaxPending } from '../enqueue-gates.js';
import { actorLockKeys, lockGates, translateUnique } from './pg-enqueue.js';
import type { PgOps } from './pg-ops.js';
import { toStoredRetryKind } from './row-mapper.js';

/** The columns each COPY line fills, in order. */
const COPY_COLUMNS = [
  'id',
  'actor',
  'queue',
  'identity_key',
  'fairness_key',
  'payload',
  'payload_schema_ver',
  'status',
  'priority',
  'max_attempts',
  'retry_kind',
  'schedule_to_close',
  'start_to_close',
  'heartbeat_timeout',
  'created_at',
  'scheduled_at',
  'idempotency_key',
  'idempotency_scope',
  'trace_id',
  'span_id',
  'metadata',
  'tags',
] as const;

/** The database clock as `enqueueFast` (the statement) returns it. */
export interface DbClock {
  /** `clock_timestamp()` as text, written back verbatim. */
  text: string;
  /** The same instant in epoch milliseconds (fractional). */
  ms: number;
}

/** COPY's NULL. */
const NULL = '\\N';

/** One field of a COPY text-format line: `\N` for NULL; backslash, tab, newline and CR escaped. */
function field(value: string | null): string {
  if (value === null) return NULL;
  // Most values (ids, names, JSON without control characters) need no escaping: test first.
  if (!/[\\\t\n\r]/.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}

const iso = (ms: number): string => new Date(ms).toISOString();
const interval = (ms: number | null): string | null => (ms === null ? null : `${ms} milliseconds`);

/** Rows per chunk of COPY data: the server parses one chunk while the next is being written. */
const ROWS_PER_CHUNK = 500;

/**
 * The batch as COPY text, one line per item in {@link COPY_COLUMNS} order, {@link ROWS_PER_CHUNK}
 * lines per chunk, made as the stream asks for them; with the times decided
 * from the database clock `now` as `enqueue-batch.sql` decides them: the run time is the requested
 * time (or now plus the delay), never before now; a job runs now (`pending`) or later
 * (`scheduled`); a schedule-to-close interval is anchored at now, and the earlier of it and an
 * absolute deadline wins.
 */
export function* copyChunks(list: readonly EnqueueArgs[], now: DbClock): Generator<string> {
  // Plain concatenation: cheaper than an array of fields per line joined afterwards.
  let out = '';
  for (let i = 0; i < list.length; i++) {
    const a = list[i]!;
    const wanted = a.scheduledAt !== null ? a.scheduledAt.getTime() : now.ms + (a.scheduledDelayMs ?? 0);
    const later = wanted > now.ms;
    let deadline = a.scheduleToClose === null ? null : a.scheduleToClose.getTime();
    if (a.scheduleToCloseIntervalMs !== null) {
      const anchored = now.ms + a.scheduleToCloseIntervalMs;
      deadline = deadline === null ? anchored : Math.min(deadline, anchored);
    }
    out +=
      `${a.id}\t${field(a.actor)}\t${field(a.queue)}\t${field(a.identityKey)}\t${field(a.fairnessKey)}` +
      `\t${field(a.payloadJson)}\t${a.payloadSchemaVer}\t${later ? 'scheduled' : 'pending'}\t${a.priority}` +
      `\t${a.maxAttempts}\t${field(toStoredRetryKind(a.retryKind))}\t${deadline === null ? NULL : iso(deadline)}` +
      `\t${field(interval(a.startToCloseMs))}\t${field(interval(a.heartbeatTimeoutMs))}\t${now.text}` +
      `\t${later ? iso(wanted) : now.text}\t${field(a.idempotencyKey)}\t${field(a.idempotencyScope)}` +
      `\t${field(a.traceId)}\t${field(a.spanId)}\t${field(JSON.stringify(a.metadata))}` +
      `\t${a.tags.length === 0 ? '{}' : field(textArrayLiteral(a.tags))}\n`;
    if ((i + 1) % ROWS_PER_CHUNK === 0 || i === list.length - 1) {
      yield out;
      out = '';
    }
  }
}

/**
 * `enqueueBatchFast` on Postgres, inside the transaction `tx` (the backend's own, or the caller's):
 * check `maxPending` under the actors' gate locks, read the database clock, COPY the jobs straight into `jobs` (one row version each; COPY writes
 * them a page at a time), and NOTIFY the workers (sent when the transaction commits). Returns the
 * number of jobs written: all of them, or it throws and the transaction rolls back.
 */
export async function enqueueFast(ops: PgOps, list: readonly EnqueueArgs[], tx: Executor): Promise<number> {
  if (!tx.copyFrom) throw new TypeError('enqueueBatchFast needs a connection that supports COPY');
  await checkMaxPending(ops, list, tx);
  try {
    const [clock] = await ops.run<{ now_text: string; now_ms: number }>(
      'enqueueFast',
      [actorLockKeys(ops, list)],
      tx,
    );
    if (!clock) throw new Error('enqueueBatchFast: the clock statement returned no row');
    const now = { text: clock.now_text, ms: Number(clock.now_ms) };
    await tx.copyFrom(`${quoteSchema(ops.schema)}.jobs`, COPY_COLUMNS, copyChunks(list, now));
    await ops.run('announce', [[ops.channels.wake], ['']], tx);
  } catch (err) {
    throw translateFastError(err, list);
  }
  return list.length;
}

/**
 * The `maxPending` gate of a fast batch, as `enqueueBatch` checks it (all or nothing): the actors'
 * gate locks, held until the COPY's transaction ends, then their pending counts.
 */
async function checkMaxPending(ops: PgOps, list: readonly EnqueueArgs[], tx: Executor): Promise<void> {
  const limited = [...new Set(list.filter((a) => a.maxPending !== null).map((a) => a.actor))];
  if (limited.length === 0) return;
  await lockGates(ops, tx, list);
  const rows = await ops.run<{ actor: string; n: number }>('countPendingJobs', [limited], tx);
  assertWithinMaxPending(list, new Map(rows.map((r) => [r.actor, Number(r.n)])));
}

/** A repeated idempotency key becomes {@link DuplicateIdempotencyKeyError}; singletons as elsewhere. */
function translateFastError(err: unknown, list: readonly EnqueueArgs[]): unknown {
  const e = err as { code?: string; constraint?: string; detail?: string };
  if (e.code === '23505' && e.constraint === 'jobs_idempotency_scope_key_uniq') {
    // "Key (idempotency_scope, idempotency_key)=(scope, key) already exists."
    const match = /=\((.*), (.*)\) already exists/.exec(e.detail ?? '');
    const item = match
      ? list.find((a) => a.idempotencyScope === match[1] && a.idempotencyKey === match[2])
      : undefined;
    return new DuplicateIdempotencyKeyError({
      actor: item?.actor ?? null,
      idempotencyScope: item?.idempotencyScope ?? match?.[1] ?? null,
      idempotencyKey: item?.idempotencyKey ?? match?.[2] ?? null,
      where: 'stored',
    });
  }
  return translateUnique(err, list[0]?.actor ?? '');
}
