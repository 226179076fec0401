import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';

/** Sort orders of `list()`; each pages with its own cursor shape. */
export const JobSortField = {
  /** `priority DESC, scheduled_at ASC, id ASC` — dispatch order (the default). */
  SCHEDULED_AT_ASC: 'scheduled_at_asc',
  /** `created_at DESC, id DESC` — newest first. */
  CREATED_AT_DESC: 'created_at_desc',
  /** `finished_at DESC NULLS LAST, id DESC` — most recently finished first. */
  FINISHED_AT_DESC: 'finished_at_desc',
} as const;

/** One of {@link JobSortField}'s values. */
export type JobSortField = (typeof JobSortField)[keyof typeof JobSortField];

const ORDERINGS: readonly JobSortField[] = Object.values(JobSortField);

/**
 * Decoded keyset position. Timestamps are integer microseconds since the epoch, so a cursor keeps
 * Postgres' full precision (a JavaScript `Date` would drop the microseconds and skip or repeat rows
 * that share a millisecond).
 */
export type CursorKey =
  | { order: 'scheduled_at_asc'; priority: number; scheduledAtUs: number; id: string }
  | { order: 'created_at_desc'; createdAtUs: number; id: string }
  | { order: 'finished_at_desc'; finishedAtUs: number | null; id: string };

/** Validates an `orderBy` value (undefined → the default ordering). */
export function checkOrdering(value: unknown): JobSortField {
  if (value === undefined || value === null) return JobSortField.SCHEDULED_AT_ASC;
  if (typeof value !== 'string' || !ORDERINGS.includes(value as JobSortField)) {
    throw new InvalidArgumentError('filter.orderBy', value, `must be one of ${ORDERINGS.join(', ')}`);
  }
  return value as JobSortField;
}

/** Encodes a keyset position as an opaque, URL-safe token. */
export function encodeCursor(key: CursorKey): string {
  let raw: string;
  switch (key.order) {
    case 'scheduled_at_asc':
      raw = `${key.order}|${key.priority}|${key.scheduledAtUs}|${key.id}`;
      break;
    case 'created_at_desc':
      raw = `${key.order}|${key.createdAtUs}|${key.id}`;
      break;
    case 'finished_at_desc':
      raw = `${key.order}|${key.finishedAtUs ?? ''}|${key.id}`;
      break;
  }
  return Buffer.from(raw, 'utf8').toString('base64url');
}

function badCursor(cursor: string, why: string): InvalidArgumentError {
  return new InvalidArgumentError('filter.cursor', cursor, why);
}

function parseIntStrict(s: string | undefined, cursor: string): number {
  if (s === undefined || !/^-?\d+$/.test(s)) throw badCursor(cursor, 'is not a cursor produced by list()');
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw badCursor(cursor, 'is not a cursor produced by list()');
  return n;
}

/** Decodes a cursor and checks it belongs to `order`. */
export function decodeCursor(cursor: string, order: JobSortField): CursorKey {
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  const parts = raw.split('|');
  const kind = parts[0];
  if (kind !== order) {
    throw badCursor(
      cursor,
      ORDERINGS.includes(kind as JobSortField)
        ? `was produced under orderBy ${kind} and cannot page orderBy ${order}`
        : 'is not a cursor produced by list()',
    );
  }
  const id = parts[parts.length - 1];
  if (!isUuid(id)) throw badCursor(cursor, 'is not a cursor produced by list()');
  switch (order) {
    case 'scheduled_at_asc':
      if (parts.length !== 4) throw badCursor(cursor, 'is not a cursor produced by list()');
      return {
        order,
        priority: parseIntStrict(parts[1], cursor),
        scheduledAtUs: parseIntStrict(parts[2], cursor),
        id,
      };
    case 'created_at_desc':
      if (parts.length !== 3) throw badCursor(cursor, 'is not a cursor produced by list()');
      return { order, createdAtUs: parseIntStrict(parts[1], cursor), id };
    case 'finished_at_desc':
      if (parts.length !== 3) throw badCursor(cursor, 'is not a cursor produced by list()');
      return { order, finishedAtUs: parts[1] === '' ? null : parseIntStrict(parts[1], cursor), id };
  }
}

/** Checks the event-id cursor of the crash-reclaim feed (`bigserial` ids travel as strings). */
export function checkEventIdCursor(afterId: unknown, field = 'afterId'): string {
  if (typeof afterId !== 'string' || !/^\d+$/.test(afterId))
    throw new InvalidArgumentError(field, afterId, 'must be a non-negative integer event id (as a string)');
  return afterId;
}
