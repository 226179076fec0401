import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';
import { checkNoNul } from '../core/text-checks.js';
import { checkOrdering, decodeCursor, type CursorKey, type JobSortField } from './cursor.js';
import { ACTIVE_STATUSES, TERMINAL_STATUSES } from './state-machine.js';
import { JOB_STATUSES, type JobStatus } from './types.js';

/** What `list()` and `cancelWhere()` select. Every field is optional; predicates are ANDed. */
export interface JobFilter {
  /** Queue name equals. */
  queue?: string;
  /**
   * One status, or any of several. An empty array matches nothing (it is not "no filter").
   * Exclusive with `active`.
   */
  status?: JobStatus | readonly JobStatus[];
  /** Actor name equals. */
  actor?: string;
  /** Identity key equals. */
  identityKey?: string;
  /** Jobs enqueued in this batch (`metadata.batch_id`). */
  batchId?: string;
  /** Jobs carrying every one of these tags (an empty array is no predicate). */
  tags?: readonly string[];
  /** `true`: not yet finished (pending, scheduled, running); `false`: terminal. Exclusive with `status`. */
  active?: boolean;
  /** Page size, default 100, `>= 0`. Ignored by `cancelWhere`. */
  limit?: number;
  /** Opaque token from a previous page's `nextCursor`. Ignored by `cancelWhere`. */
  cursor?: string;
  /** Sort order, default `scheduled_at_asc`. Ignored by `cancelWhere`. */
  orderBy?: JobSortField;
}

/** A validated filter with its status set resolved, ready for a backend. */
export interface NormalizedJobFilter {
  queue: string | null;
  actor: string | null;
  identityKey: string | null;
  batchId: string | null;
  tags: string[];
  /** null = no status predicate; otherwise the allowed statuses (possibly empty = match nothing). */
  statuses: JobStatus[] | null;
  limit: number;
  orderBy: JobSortField;
  after: CursorKey | null;
  /** True when at least one predicate is set (see `cancelWhere`'s empty-filter guard). */
  hasPredicates: boolean;
}

/** Default page size of `list()`. */
export const DEFAULT_LIST_LIMIT = 100;

function optionalText(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new InvalidArgumentError(field, value, 'must be a string');
  return checkNoNul(value, field);
}

/**
 * Validates a {@link JobFilter}. Both backends call this, so bad input (unknown statuses, NUL
 * bytes, `status` with `active`, negative limits, foreign cursors) fails identically everywhere.
 */
export function normalizeJobFilter(filter: JobFilter = {}): NormalizedJobFilter {
  if (filter === null || typeof filter !== 'object')
    throw new InvalidArgumentError('filter', filter, 'must be an object');
  const limit = filter.limit ?? DEFAULT_LIST_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) {
    throw new InvalidArgumentError('filter.limit', limit, 'must be an integer >= 0');
  }
  if (filter.status !== undefined && filter.active !== undefined) {
    throw new InvalidArgumentError(
      'filter.status',
      filter.status,
      'status and active are mutually exclusive: use status for specific statuses or active for the terminal/non-terminal split',
    );
  }
  let statuses: JobStatus[] | null = null;
  if (filter.status !== undefined) {
    const values = typeof filter.status === 'string' ? [filter.status] : filter.status;
    if (!Array.isArray(values))
      throw new InvalidArgumentError(
        'filter.status',
        filter.status,
        'must be a status or an array of statuses',
      );
    const unknown = values.filter((v) => !(JOB_STATUSES as readonly string[]).includes(v as string));
    if (unknown.length > 0) {
      throw new InvalidArgumentError(
        'filter.status',
        filter.status,
        `unknown status ${JSON.stringify(unknown[0])}; valid: ${JOB_STATUSES.join(', ')}`,
      );
    }
    statuses = [...new Set(values as JobStatus[])];
  }
  if (filter.active !== undefined) {
    if (typeof filter.active !== 'boolean')
      throw new InvalidArgumentError('filter.active', filter.active, 'must be a boolean');
    statuses = [...(filter.active ? ACTIVE_STATUSES : TERMINAL_STATUSES)];
  }
  let tags: string[] = [];
  if (filter.tags !== undefined) {
    if (!Array.isArray(filter.tags))
      throw new InvalidArgumentError('filter.tags', filter.tags, 'must be an array of strings');
    tags = filter.tags.map((t, i) => {
      if (typeof t !== 'string') throw new InvalidArgumentError(`filter.tags[${i}]`, t, 'must be a string');
      return checkNoNul(t, `filter.tags[${i}]`);
    });
  }
  let batchId: string | null = null;
  if (filter.batchId !== undefined && filter.batchId !== null) {
    if (!isUuid(filter.batchId))
      throw new InvalidArgumentError('filter.batchId', filter.batchId, 'must be a UUID');
    batchId = filter.batchId.toLowerCase();
  }
  const orderBy = checkOrdering(filter.orderBy);
  let after: CursorKey | null = null;
  if (filter.cursor !== undefined && filter.cursor !== null) {
    if (typeof filter.cursor !== 'string')
      throw new InvalidArgumentError('filter.cursor', filter.cursor, 'must be a string');
    after = decodeCursor(filter.cursor, orderBy);
  }
  const queue = optionalText(filter.queue, 'filter.queue');
  const actor = optionalText(filter.actor, 'filter.actor');
  const identityKey = optionalText(filter.identityKey, 'filter.identityKey');
  const hasPredicates =
    queue !== null ||
    actor !== null ||
    identityKey !== null ||
    batchId !== null ||
    tags.length > 0 ||
    filter.status !== undefined ||
    filter.active !== undefined;
  return { queue, actor, identityKey, batchId, tags, statuses, limit, orderBy, after, hasPredicates };
}
