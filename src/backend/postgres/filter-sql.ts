import { encodeCursor, type CursorKey } from '../cursor.js';
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
 * `params`. Only the schema name (already validated) is interpolated.
 */
export function filterConditions(f: NormalizedJobFilter, params: unknown[], quotedSchema: string): string[] {
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
  if (f.tags.length > 0) conds.push(`j.tags <> '{}'::text[] AND j.tags @> ${p(f.tags)}::text[]`);
  if (f.statuses !== null) {
    if (f.statuses.length === 0) conds.push('FALSE');
    else if (f.statuses.length === 1)
      conds.push(`j.status = ${p(f.statuses[0])}::${quotedSchema}.job_status`);
    else conds.push(`j.status = ANY (${p(f.statuses)}::${quotedSchema}.job_status[])`);
  }
  return conds;
}

function keysetCondition(after: CursorKey, params: unknown[]): string {
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  switch (after.order) {
    case 'scheduled_at_asc': {
      const pr = p(after.priority);
      return `(j.priority < ${pr} OR (j.priority = ${pr} AND (j.scheduled_at, j.id) > (${p(usToTimestampText(after.scheduledAtUs))}::timestamptz, ${p(after.id)}::uuid)))`;
    }
    case 'created_at_desc':
      return `(j.created_at, j.id) < (${p(usToTimestampText(after.createdAtUs))}::timestamptz, ${p(after.id)}::uuid)`;
    case 'finished_at_desc':
      return after.finishedAtUs === null
        ? `(j.finished_at IS NULL AND j.id < ${p(after.id)}::uuid)`
        : `((j.finished_at, j.id) < (${p(usToTimestampText(after.finishedAtUs))}::timestamptz, ${p(after.id)}::uuid) OR j.finished_at IS NULL)`;
  }
}

const ORDER_SQL = {
  scheduled_at_asc: 'j.priority DESC, j.scheduled_at ASC, j.id ASC',
  created_at_desc: 'j.created_at DESC, j.id DESC',
  finished_at_desc: 'j.finished_at DESC NULLS LAST, j.id DESC',
} as const;

const KEY_SQL = {
  scheduled_at_asc: '(extract(epoch FROM j.scheduled_at) * 1000000)::int8::text AS _cursor_us',
  created_at_desc: '(extract(epoch FROM j.created_at) * 1000000)::int8::text AS _cursor_us',
  finished_at_desc: '(extract(epoch FROM j.finished_at) * 1000000)::int8::text AS _cursor_us',
} as const;

/** Builds the keyset-paginated list statement. It reads one row past the page to know if more exist. */
export function listQuery(
  f: NormalizedJobFilter,
  quotedSchema: string,
  jobColumns: string,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const conds = filterConditions(f, values, quotedSchema);
  if (f.after) conds.push(keysetCondition(f.after, values));
  values.push(f.limit + 1);
  const where = conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : '';
  return {
    text: `SELECT ${jobColumns}, ${KEY_SQL[f.orderBy]} FROM ${quotedSchema}.jobs j ${where} ORDER BY ${ORDER_SQL[f.orderBy]} LIMIT $${values.length}`,
    values,
  };
}

/** The cursor for a row returned by {@link listQuery}. */
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
