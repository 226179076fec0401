// Job listing for the in-memory backend: the filter, the three orders and their cursors, the same
// semantics as the listing statements of the Postgres backend (microsecond timestamps included).
import type { JobPage } from '../backend.js';
import { encodeCursor, type CursorKey } from '../cursor.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import type { JobRow } from '../types.js';

const us = (d: Date): bigint => BigInt(d.getTime()) * 1000n;
const ms = (d: Date): number => d.getTime();

/** True when the row passes the filter's predicates (not its cursor). */
export function matchesFilter(r: JobRow, f: NormalizedJobFilter): boolean {
  if (f.queue !== null && r.queue !== f.queue) return false;
  if (f.actor !== null && r.actor !== f.actor) return false;
  if (f.identityKey !== null && r.identityKey !== f.identityKey) return false;
  if (f.batchId !== null && r.metadata.batch_id !== f.batchId) return false;
  if (f.tags.length > 0 && !f.tags.every((t) => r.tags.includes(t))) return false;
  if (f.statuses !== null && !f.statuses.includes(r.status)) return false;
  return true;
}

/** Orders rows as `listJobs` does in SQL for the given order. */
function compare(order: NormalizedJobFilter['orderBy'], a: JobRow, b: JobRow): number {
  const byId = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
  switch (order) {
    case 'scheduled_at_asc':
      return b.priority - a.priority || ms(a.scheduledAt) - ms(b.scheduledAt) || byId(a.id, b.id);
    case 'created_at_desc':
      return ms(b.createdAt) - ms(a.createdAt) || byId(b.id, a.id);
    case 'finished_at_desc': {
      if (a.finishedAt === null && b.finishedAt !== null) return 1;
      if (a.finishedAt !== null && b.finishedAt === null) return -1;
      const f = (b.finishedAt ? ms(b.finishedAt) : 0) - (a.finishedAt ? ms(a.finishedAt) : 0);
      return f || byId(b.id, a.id);
    }
  }
}

/** The cursor key of a row for the given order. */
function keyOf(order: NormalizedJobFilter['orderBy'], r: JobRow): CursorKey {
  switch (order) {
    case 'scheduled_at_asc':
      return { order, priority: r.priority, scheduledAtUs: us(r.scheduledAt), id: r.id };
    case 'created_at_desc':
      return { order, createdAtUs: us(r.createdAt), id: r.id };
    case 'finished_at_desc':
      return { order, finishedAtUs: r.finishedAt ? us(r.finishedAt) : null, id: r.id };
  }
}

/** True when the row comes after the cursor in its order. */
function after(r: JobRow, k: CursorKey): boolean {
  switch (k.order) {
    case 'scheduled_at_asc':
      return (
        r.priority < k.priority ||
        (r.priority === k.priority &&
          (us(r.scheduledAt) > k.scheduledAtUs || (us(r.scheduledAt) === k.scheduledAtUs && r.id > k.id)))
      );
    case 'created_at_desc':
      return us(r.createdAt) < k.createdAtUs || (us(r.createdAt) === k.createdAtUs && r.id < k.id);
    case 'finished_at_desc':
      if (k.finishedAtUs === null) return r.finishedAt === null && r.id < k.id;
      if (r.finishedAt === null) return true;
      return us(r.finishedAt) < k.finishedAtUs || (us(r.finishedAt) === k.finishedAtUs && r.id < k.id);
  }
}

/** One page of jobs matching the filter, ordered and cursor-paged as the Postgres backend does. */
export function listJobs(jobs: Iterable<JobRow>, filter: NormalizedJobFilter): JobPage {
  if (filter.limit === 0) return { jobs: [], nextCursor: null };
  const rows = [...jobs]
    .filter((r) => matchesFilter(r, filter) && (filter.after === null || after(r, filter.after)))
    .sort((a, b) => compare(filter.orderBy, a, b));
  const page = rows.slice(0, filter.limit);
  const last = page[page.length - 1];
  return {
    jobs: page.map((r) => structuredClone(r)),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(keyOf(filter.orderBy, last)) : null,
  };
}
