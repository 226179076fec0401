import type { JobStatus } from '../types.js';
import type { Settlement, SettleResult } from '../worker-types.js';
import {
  boolColumn,
  epochMsColumn,
  numberColumn,
  textColumn,
  uuidArrayLiteral,
  type BatchColumn,
} from './batch-column.js';

/** A row of the settle statement (settle.sql): an item's stored outcome, or (id null) the count row. */
export interface SettleRow {
  id: string | null;
  status: JobStatus | null;
  error_class: string | null;
  succeeded: number | null;
}

/**
 * The settle statement's parameters: $1 the job ids, $2–$17 one array per column, $18–$33 the same
 * columns' values when every item agrees (batch-column.ts).
 */
export function settleParams(items: readonly Settlement[]): unknown[] {
  const err = (s: Settlement) => ('error' in s ? s.error : null);
  const columns: BatchColumn[] = [
    textColumn(items, (s) => s.workerId),
    textColumn(items, (s) => s.kind),
    textColumn(items, (s) => (s.kind === 'succeeded' ? s.resultJson : null)),
    numberColumn(items, (s) => (s.kind === 'succeeded' ? s.fallbackResultTtlMs : null)),
    numberColumn(items, (s) => (s.kind === 'succeeded' ? s.resultSizeBytes : null)),
    numberColumn(items, (s) =>
      s.kind === 'failed' ? s.retryDelayMs : s.kind === 'reschedule' ? s.delayMs : null,
    ),
    boolColumn(items, (s) => (s.kind === 'reschedule' ? s.consumeBudget : true)),
    textColumn(items, (s) => (s.kind === 'reschedule' ? s.outcome : null)),
    textColumn(items, (s) => err(s)?.errorClass ?? null),
    textColumn(items, (s) => err(s)?.message ?? null),
    textColumn(items, (s) => err(s)?.traceback ?? null),
    numberColumn(items, (s) => s.progress?.seq ?? null),
    textColumn(items, (s) => (s.progress ? JSON.stringify(s.progress.state) : null)),
    epochMsColumn(items, (s) => s.handlerStartedAt),
    numberColumn(items, (s) => s.durationMs),
    textColumn(items, (s) => s.heartbeatDetailsJson ?? null),
  ];
  return [
    uuidArrayLiteral(items.map((s) => s.jobId)),
    ...columns.map((c) => c[0]),
    ...columns.map((c) => c[1]),
  ];
}

/**
 * True when `settleSucceeded` can write the batch: every item a success with no progress snapshot
 * and no heartbeat details (what such an item leaves unchanged is then all `settle` would decide).
 */
export function allPlainSuccesses(items: readonly Settlement[]): boolean {
  for (const s of items) {
    if (s.kind !== 'succeeded' || s.progress != null || s.heartbeatDetailsJson != null) return false;
  }
  return true;
}

/**
 * The `settleSucceeded` statement's parameters (settle.sql): $1 the job ids, $2–$7 one array per
 * column, $8–$13 the same columns' values when every item agrees. Only for
 * {@link allPlainSuccesses} batches.
 */
export function settleSucceededParams(items: readonly Settlement[]): unknown[] {
  const ok = (s: Settlement) => s as Extract<Settlement, { kind: 'succeeded' }>;
  const columns: BatchColumn[] = [
    textColumn(items, (s) => s.workerId),
    textColumn(items, (s) => ok(s).resultJson),
    numberColumn(items, (s) => ok(s).fallbackResultTtlMs),
    numberColumn(items, (s) => ok(s).resultSizeBytes),
    epochMsColumn(items, (s) => s.handlerStartedAt),
    numberColumn(items, (s) => s.durationMs),
  ];
  return [
    uuidArrayLiteral(items.map((s) => s.jobId)),
    ...columns.map((c) => c[0]),
    ...columns.map((c) => c[1]),
  ];
}

/**
 * Each item's result, in item order. The statement leaves out the rows of succeeded items when all
 * of them were written (its row without an id counts them): each of those ended `succeeded`, with
 * no error class. An item without a row was not written (this worker no longer owned the job).
 */
export function settleResults(items: readonly Settlement[], rows: readonly SettleRow[]): SettleResult[] {
  let succeededSent = 0;
  for (const s of items) if (s.kind === 'succeeded') succeededSent++;
  let succeededWritten = -1;
  const byId = new Map<string, SettleRow>();
  for (const r of rows) {
    if (r.id === null) succeededWritten = Number(r.succeeded);
    else byId.set(r.id, r);
  }
  const allSucceededWritten = succeededWritten === succeededSent;
  return items.map((s): SettleResult => {
    if (s.kind === 'succeeded' && allSucceededWritten)
      return { jobId: s.jobId, status: 'succeeded', errorClass: null };
    const r = byId.get(s.jobId);
    return r
      ? { jobId: s.jobId, status: r.status!, errorClass: r.error_class }
      : { jobId: s.jobId, status: 'noop', errorClass: null };
  });
}
