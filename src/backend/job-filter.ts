import { unknownKeyRule } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';
import { checkStorableText } from '../core/text-checks.js';
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
  /**
   * Page size of `list()`: default 100, at most {@link MAX_LIST_LIMIT} (1,000). `cancelWhere`
   * refuses it (a bulk cancel is not paginated).
   */
  limit?: number;
  /** Opaque token from a previous page's `nextCursor`. `cancelWhere` refuses it. */
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

/** Default page size of `list()` (the reference's). */
export const DEFAULT_LIST_LIMIT = 100;

/**
 * Largest page of `list()`: 1,000 rows, the size of the largest `enqueueBatch` (a batch can be read
 * back in one page). A page is one statement whose rows, payloads included, are held in memory
 * at once; more rows are read page by page with `nextCursor`.
 */
export const MAX_LIST_LIMIT = 1000;

/** Every field of {@link JobFilter}: anything else is a mistake (a typo must not widen a cancel). */
const FILTER_KEYS: readonly (keyof JobFilter)[] = [
  'queue',
  'status',
  'actor',
  'identityKey',
  'batchId',
  'tags',
  'active',
  'limit',
  'cursor',
  'orderBy',
];

/** Fields that page a listing: `cancelWhere` refuses them, as it acts on every matching job. */
const PAGING_KEYS: readonly (keyof JobFilter)[] = ['limit', 'cursor'];

function optionalText(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new InvalidArgumentError(field, value, 'must be a string');
  return checkStorableText(value, field);
}

/**
 * Validates a {@link JobFilter} for `purpose`. Both backends get the result, so bad input (unknown
 * fields, unknown statuses, text Postgres cannot store, `status` with `active`, a limit out of range,
 * a forged or foreign cursor) fails identically everywhere, before any query. For `cancelWhere`,
 * `limit` and `cursor` are refused: a bulk cancel acts on every matching job, and a caller who
 * passes them expects otherwise.
 * @throws InvalidArgumentError naming `filter.<field>`
 */
export function normalizeJobFilter(
  filter: JobFilter = {},
  purpose: 'list' | 'cancelWhere' | 'retryWhere' = 'list',
): NormalizedJobFilter {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw new InvalidArgumentError('filter', filter, 'must be an object');
  for (const key of Object.keys(filter)) {
    if (!(FILTER_KEYS as readonly string[]).includes(key))
      throw new InvalidArgumentError(
        `filter.${key}`,
        (filter as Record<string, unknown>)[key],
        unknownKeyRule(key, FILTER_KEYS, 'a filter field'),
      );
    const value = (filter as Record<string, unknown>)[key];
    if (purpose !== 'list' && (PAGING_KEYS as readonly string[]).includes(key) && value !== undefined)
      throw new InvalidArgumentError(
        `filter.${key}`,
        value,
        `is not accepted by ${purpose}, which ${purpose === 'cancelWhere' ? 'cancels' : 'retries'} every matching job (it is not paginated); ` +
          'narrow the filter instead, and preview the count with { dryRun: true }',
      );
  }
  const limit = filter.limit ?? DEFAULT_LIST_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError(
      'filter.limit',
      limit,
      `must be an integer between 0 and ${MAX_LIST_LIMIT}; read more rows page by page with nextCursor`,
    );
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
      return checkStorableText(t, `filter.tags[${i}]`);
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
