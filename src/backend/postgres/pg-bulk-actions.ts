import type { CancelWhereCounts } from '../backend.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import type { BulkCancelResult, BulkRetryResult } from '../types.js';
import { filterConditions } from './filter-sql.js';
import { translateUnique } from './pg-enqueue.js';
import type { PgOps } from './pg-ops.js';

/**
 * The statements over every job a filter matches (cancelWhere, retryWhere and their dry runs). Each
 * has a `{filter_conditions}` placeholder, replaced by the filter's predicates (TRUE for none) with
 * their values bound after the statement's own: built per call, so run as plain queries.
 */
type FilteredStatement = 'cancelWhere' | 'previewCancelWhere' | 'retryWhere' | 'previewRetryWhere';

async function queryFiltered<R>(
  ops: PgOps,
  quotedSchema: string,
  name: FilteredStatement,
  filter: NormalizedJobFilter,
  leading: unknown[] = [],
): Promise<R | undefined> {
  const values = [...leading];
  const conds = filterConditions(filter, values, quotedSchema);
  const text = ops.sql[name].replaceAll(
    '{filter_conditions}',
    conds.length > 0 ? conds.join(' AND ') : 'TRUE',
  );
  return (await ops.driver.query<R & Record<string, unknown>>(text, values)).rows[0];
}

/** What a bulk cancel changed; the caller announces the jobs done and the running ones flagged. */
export interface PgBulkCancel extends BulkCancelResult {
  /** The workers holding `cancelRequestedIds`, in the same order. */
  requestedWorkers: string[];
}

/** Cancels every active job the filter matches (see `cancelWhere` in sql/cancel.sql). */
export async function cancelWhere(
  ops: PgOps,
  quotedSchema: string,
  filter: NormalizedJobFilter,
  reason: string | null,
): Promise<PgBulkCancel> {
  type Row = { cancelled_ids: string[]; requested_ids: string[]; requested_workers: string[] };
  let row: Row | undefined;
  try {
    row = await queryFiltered<Row>(ops, quotedSchema, 'cancelWhere', filter, [reason]);
  } catch (err) {
    throw ops.translate(err);
  }
  const cancelledIds = row?.cancelled_ids ?? [];
  const cancelRequestedIds = row?.requested_ids ?? [];
  return {
    cancelledDirectly: cancelledIds.length,
    cancelRequested: cancelRequestedIds.length,
    cancelledIds,
    cancelRequestedIds,
    totalAffected: cancelledIds.length + cancelRequestedIds.length,
    requestedWorkers: row?.requested_workers ?? [],
  };
}

/** The dry run of {@link cancelWhere}: counted, nothing changed or locked. */
export async function previewCancelWhere(
  ops: PgOps,
  quotedSchema: string,
  filter: NormalizedJobFilter,
): Promise<CancelWhereCounts> {
  type Row = { cancelled_directly: number; cancel_requested: number };
  let row: Row | undefined;
  try {
    row = await queryFiltered<Row>(ops, quotedSchema, 'previewCancelWhere', filter);
  } catch (err) {
    throw ops.translate(err);
  }
  return {
    cancelledDirectly: Number(row?.cancelled_directly ?? 0),
    cancelRequested: Number(row?.cancel_requested ?? 0),
  };
}

/** Retries every retryable job the filter matches (see `retryWhere` in sql/cancel.sql). */
export async function retryWhere(
  ops: PgOps,
  quotedSchema: string,
  filter: NormalizedJobFilter,
): Promise<BulkRetryResult> {
  let row: { retried_ids: string[] } | undefined;
  try {
    row = await queryFiltered<{ retried_ids: string[] }>(ops, quotedSchema, 'retryWhere', filter);
  } catch (err) {
    // The singleton index names the actor whose second active job the retry would have made.
    const actor = /\(actor\)=\((.*)\)/.exec((err as { detail?: string }).detail ?? '')?.[1] ?? '';
    throw ops.translate(translateUnique(err, actor));
  }
  const retriedIds = row?.retried_ids ?? [];
  return { retried: retriedIds.length, retriedIds };
}

/** The dry run of {@link retryWhere}: how many jobs it would retry now. */
export async function previewRetryWhere(
  ops: PgOps,
  quotedSchema: string,
  filter: NormalizedJobFilter,
): Promise<number> {
  try {
    return Number(
      (await queryFiltered<{ retried: number }>(ops, quotedSchema, 'previewRetryWhere', filter))?.retried ??
        0,
    );
  } catch (err) {
    throw ops.translate(err);
  }
}
