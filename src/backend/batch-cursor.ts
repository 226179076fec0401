import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';

/**
 * `listBatches`' keyset cursor: the last row's creation time, as the backend wrote it (Postgres
 * keeps microseconds, which a `Date` would drop), and its id. Opaque to callers.
 */
export interface BatchCursor {
  createdAt: string;
  id: string;
}

const PREFIX = 'b1.';
const MAX_LENGTH = 200;
/** A timestamp as Postgres prints one (`2026-12-06 02:49:18.166109+00`) or an ISO string. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}(:?\d{2})?)$/;

/** The cursor text of the last row of a page. */
export function encodeBatchCursor(c: BatchCursor): string {
  return PREFIX + Buffer.from(`${c.createdAt}|${c.id}`, 'utf8').toString('base64url');
}

/** The cursor a page's `nextCursor` holds. @throws InvalidArgumentError naming `filter.cursor`. */
export function decodeBatchCursor(cursor: string): BatchCursor {
  const bad = (why: string) =>
    new InvalidArgumentError(
      'filter.cursor',
      cursor,
      `is not a cursor produced by listBatches() (${why}); pass back a page's nextCursor unchanged`,
    );
  if (typeof cursor !== 'string' || cursor.length > MAX_LENGTH || !cursor.startsWith(PREFIX))
    throw bad('unknown format');
  const text = Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString('utf8');
  const bar = text.lastIndexOf('|');
  const createdAt = text.slice(0, bar);
  const id = text.slice(bar + 1);
  if (bar <= 0 || !isUuid(id) || !TIMESTAMP.test(createdAt)) throw bad('damaged');
  return { createdAt, id };
}
