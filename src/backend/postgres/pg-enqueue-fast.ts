import type { Executor } from '../../db/driver.js';
import { DuplicateIdempotencyKeyError } from '../../errors/job-errors.js';
import type { EnqueueArgs } from '../types.js';
import type { PgOps } from './pg-ops.js';
import { translateUnique } from './pg-enqueue.js';

/** The staging table's columns, in the order of each COPY line (see `enqueue-fast.sql`). */
const STAGE_COLUMNS = [
  'id',
  'actor',
  'queue',
  'identity_key',
  'fairness_key',
  'payload',
  'payload_schema_ver',
  'priority',
  'max_attempts',
  'retry_kind',
  'scheduled_at',
  'delay_ms',
  'schedule_to_close',
  'stc_interval_ms',
  'start_to_close_ms',
  'heartbeat_timeout_ms',
  'idempotency_key',
  'idempotency_scope',
  'trace_id',
  'span_id',
  'metadata',
  'tags',
] as const;

/** One field of a COPY text-format line: `\N` for NULL; backslash, tab, newline and CR escaped. */
function field(value: string | number | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return String(value);
  // Most values (ids, names, JSON without control characters) need no escaping: test first.
  if (!/[\\\t\n\r]/.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}

/** The batch as COPY text: one line per item, in {@link STAGE_COLUMNS} order. */
export function copyText(list: readonly EnqueueArgs[]): string {
  const lines: string[] = new Array<string>(list.length);
  for (let i = 0; i < list.length; i++) {
    const a = list[i]!;
    lines[i] = [
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
      a.scheduledAt === null ? null : a.scheduledAt.toISOString(),
      a.scheduledDelayMs,
      a.scheduleToClose === null ? null : a.scheduleToClose.toISOString(),
      a.scheduleToCloseIntervalMs,
      a.startToCloseMs,
      a.heartbeatTimeoutMs,
      a.idempotencyKey,
      a.idempotencyScope,
      a.traceId,
      a.spanId,
      JSON.stringify(a.metadata),
      JSON.stringify(a.tags),
    ]
      .map(field)
      .join('\t');
  }
  return lines.join('\n') + '\n';
}

/**
 * `enqueueBatchFast` on Postgres, inside the transaction `tx` (the backend's own, or the caller's):
 * COPY the items into the session's staging table, then one INSERT … SELECT moves them into `jobs`
 * with the database clock deciding status, run time and deadlines, and NOTIFYs the workers (sent
 * when the transaction commits). Returns the number of jobs written: all of them, or it throws.
 */
export async function enqueueFast(ops: PgOps, list: readonly EnqueueArgs[], tx: Executor): Promise<number> {
  if (!tx.copyFrom) throw new TypeError('enqueueBatchFast needs a connection that supports COPY');
  let inserted: number;
  try {
    await ops.run('enqueueFastStage', [], tx);
    await tx.copyFrom('pg_temp.taskq_fast_stage', STAGE_COLUMNS, copyText(list));
    const rows = await ops.run<{ inserted: number }>('enqueueFastInsert', [ops.channels.wake], tx);
    inserted = Number(rows[0]?.inserted ?? 0);
  } catch (err) {
    throw translateFastError(err, list);
  }
  if (inserted !== list.length)
    throw new Error(`enqueueBatchFast: ${inserted} of ${list.length} jobs were written`);
  return inserted;
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
