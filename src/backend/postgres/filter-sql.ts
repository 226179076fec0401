import { encodeCursor } from '../cursor.js';
import type { NormalizedJobFilter } from '../job-filter.js';

/**
 * Microseconds since the epoch → an exact `timestamptz` literal (a JS Date would drop the µs). The
 * cursor decoder keeps timestamps within years 1 to 9999, whose ISO form Postgres reads.
 */
export function usToTimestampText(us: bigint): string {
  let ms = us / 1000n;
  if (us % 1000n < 0n) ms -= 1n; // bigint division truncates; the floor keeps the µs part positive
  const micros = us - ms * 1000n;
  const iso = new Date(Number(ms)).toISOString(); // 2026-01-02T03:04:05.678Z
  return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
}

/**
 * Renders the predicates of a filter as SQL conditions over alias `j`, appending bound values to
 * `params`. Only the schema name (already validated) is interpolated. `tagIndex: false` writes the
 * tag predicate so that the planner cannot read it through jobs_tags_idx (see list-sql.ts).
 */
export function filterConditions(
  f: NormalizedJobFilter,
  params: unknown[],
  quotedSchema: string,
  options: { tagIndex?: boolean } = {},
): string[] {
  const conds: string[] = [];
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  if (f.queue !== null) conds.push(`j.queue = ${p(f.queue)}`);
  if (f.actor !== null) conds.push(`j.actor = ${p(f.actor)}`);
  if (f.identityKey !== null) conds.push(`j.identity_key = ${p(f.identityKey)}`);
  if (f.batchId !== null) {
    // Two arms, each matching a partial index's predicate: the batch index holds no running job
    // (a claim would pay an entry there for a version the outcome write soon makes dead), so the
    // batch's running jobs are found through the running index (few rows: at most the fleet's
    // concurrency). Postgres combines the two with a BitmapOr.
    const inBatch = `j.metadata ? 'batch_id' AND (j.metadata ->> 'batch_id') = ${p(f.batchId)}`;
    conds.push(`((${inBatch} AND j.status <> 'running') OR (${inBatch} AND j.status = 'running'))`);
  }
  if (f.tags.length > 0)
    conds.push(
      // `tags <> '{}'` is jobs_tags_idx's predicate: without it the planner cannot use that index.
      options.tagIndex === false
        ? `j.tags @> ${p(f.tags)}::text[]`
        : `j.tags <> '{}'::text[] AND j.tags @> ${p(f.tags)}::text[]`,
    );
  if (f.statuses !== null) {
    if (f.statuses.length === 0) conds.push('FALSE');
    else if (f.statuses.length === 1)
      conds.push(`j.status = ${p(f.statuses[0])}::${quotedSchema}.job_status`);
    else conds.push(`j.status = ANY (${p(f.statuses)}::${quotedSchema}.job_status[])`);
  }
  return conds;
}

/** The cursor for a row returned by a listing statement (list-sql.ts), from its `_cursor_us` column. */
export function cursorForRow(
  f: NormalizedJobFilter,
  row: { id: string; priority: number; _cursor_us: string | null },
): string {
  const us = row._cursor_us === null ? null : BigInt(row._cursor_us);
  switch (f.orderBy) {
    case 'scheduled_at_asc':
      return encodeCursor({
        order: f.orderBy,
        priority: row.priority,
        scheduledAtUs: us as bigint,
        id: row.id,
      });
    case 'created_at_desc':
      return encodeCursor({ order: f.orderBy, createdAtUs: us as bigint, id: row.id });
    case 'finished_at_desc':
      return encodeCursor({ order: f.orderBy, finishedAtUs: us, id: row.id });
  }
}
