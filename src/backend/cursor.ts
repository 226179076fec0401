import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { MAX_DATE_MS, MIN_DATE_MS } from '../core/duration.js';
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
 * Decoded keyset position. Timestamps are integer microseconds since the epoch, as `bigint`, so a
 * cursor keeps Postgres' full precision at any date (a JavaScript `Date` would drop the microseconds
 * and skip or repeat rows that share a millisecond; a `number` loses them after the year 2255).
 */
export type CursorKey =
  | { order: 'scheduled_at_asc'; priority: number; scheduledAtUs: bigint; id: string }
  | { order: 'created_at_desc'; createdAtUs: bigint; id: string }
  | { order: 'finished_at_desc'; finishedAtUs: bigint | null; id: string };

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

/** Longer than any cursor `list()` produces (about 115 characters); longer input is not decoded. */
const MAX_CURSOR_LENGTH = 256;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const INTEGER = /^-?\d{1,20}$/;
/** Timestamps a cursor may hold: the dates TaskQ accepts (years 1 to 9999), in microseconds. */
const MIN_US = BigInt(MIN_DATE_MS) * 1000n;
const MAX_US = BigInt(MAX_DATE_MS) * 1000n + 999n;
const INT32 = { min: -2_147_483_648, max: 2_147_483_647 };

function badCursor(cursor: string, why: string): InvalidArgumentError {
  return new InvalidArgumentError(
    'filter.cursor',
    cursor,
    `is not a cursor produced by list() (${why}); pass back a page's nextCursor unchanged`,
  );
}

function priorityOf(s: string | undefined, cursor: string): number {
  if (s === undefined || !INTEGER.test(s)) throw badCursor(cursor, 'its priority is not an integer');
  const n = Number(s);
  if (n < INT32.min || n > INT32.max) throw badCursor(cursor, 'its priority is outside the 32-bit range');
  return n;
}

function timestampOf(s: string | undefined, cursor: string): bigint {
  if (s === undefined || !INTEGER.test(s)) throw badCursor(cursor, 'its timestamp is not an integer');
  const us = BigInt(s);
  if (us < MIN_US || us > MAX_US) throw badCursor(cursor, 'its timestamp is outside the years 1 to 9999');
  return us;
}

/**
 * Decodes a cursor and checks it belongs to `order`. Every field is checked (a cursor comes from
 * the caller, who may have built or altered it): the length and alphabet, the ordering, a 32-bit
 * priority, timestamps within years 1 to 9999, a UUID; and the token must be exactly what
 * {@link encodeCursor} makes of those fields, so no two tokens mean the same position.
 * @throws InvalidArgumentError on `filter.cursor`
 */
export function decodeCursor(cursor: string, order: JobSortField): CursorKey {
  if (cursor.length > MAX_CURSOR_LENGTH)
    throw badCursor(cursor, `it is longer than ${MAX_CURSOR_LENGTH} characters`);
  if (!BASE64URL.test(cursor)) throw badCursor(cursor, 'it is not base64url text');
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  const parts = raw.split('|');
  const kind = parts[0];
  if (kind !== order) {
    if (ORDERINGS.includes(kind as JobSortField))
      throw new InvalidArgumentError(
        'filter.cursor',
        cursor,
        `was produced under orderBy ${kind} and cannot page orderBy ${order}`,
      );
    throw badCursor(cursor, 'it names no ordering');
  }
  const last = parts[parts.length - 1];
  if (!isUuid(last)) throw badCursor(cursor, 'its job id is not a UUID');
  const id = last.toLowerCase();
  let key: CursorKey;
  switch (order) {
    case 'scheduled_at_asc':
      if (parts.length !== 4) throw badCursor(cursor, 'it does not have 4 fields');
      key = {
        order,
        priority: priorityOf(parts[1], cursor),
        scheduledAtUs: timestampOf(parts[2], cursor),
        id,
      };
      break;
    case 'created_at_desc':
      if (parts.length !== 3) throw badCursor(cursor, 'it does not have 3 fields');
      key = { order, createdAtUs: timestampOf(parts[1], cursor), id };
      break;
    case 'finished_at_desc':
      if (parts.length !== 3) throw badCursor(cursor, 'it does not have 3 fields');
      key = { order, finishedAtUs: parts[1] === '' ? null : timestampOf(parts[1], cursor), id };
      break;
  }
  if (encodeCursor(key) !== cursor) throw badCursor(cursor, 'it is not in the form list() writes');
  return key;
}

/** Checks the event-id cursor of the crash-reclaim feed (`bigserial` ids travel as strings). */
export function checkEventIdCursor(afterId: unknown, field = 'afterId'): string {
  if (typeof afterId !== 'string' || !/^\d+$/.test(afterId))
    throw new InvalidArgumentError(field, afterId, 'must be a non-negative integer event id (as a string)');
  return afterId;
}
