import type { NormalizedBatchFilter } from '../backend/batch-types.js';
import { decodeBatchCursor } from '../backend/batch-cursor.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { isUuid } from '../core/ids.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** `listBatches`' filter. Batches come newest first; page with `nextCursor`. */
export interface BatchFilter {
  /** Batches whose (first child's) queue is this one. */
  queue?: string;
  /** true: active batches only; false: complete or aborted ones only. */
  active?: boolean;
  /** One batch by id. */
  batchId?: string;
  /** Page size, 0 to 1,000. Default 100. */
  limit?: number;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

const KEYS: readonly string[] = ['queue', 'active', 'batchId', 'limit', 'cursor'];

/** Most rows one `listBatches` page returns. */
export const MAX_BATCH_PAGE = 1000;

/** Validates a {@link BatchFilter}. @throws InvalidArgumentError naming the field */
export function normalizeBatchFilter(f: BatchFilter): NormalizedBatchFilter {
  if (f === null || typeof f !== 'object') throw new InvalidArgumentError('filter', f, 'must be an object');
  checkKnownKeys(f, KEYS, 'filter', 'a field of a batch filter');
  if (f.queue !== undefined && (typeof f.queue !== 'string' || f.queue.length === 0))
    throw new InvalidArgumentError('filter.queue', f.queue, 'must be a non-empty string');
  if (f.active !== undefined && typeof f.active !== 'boolean')
    throw new InvalidArgumentError('filter.active', f.active, 'must be a boolean');
  if (f.batchId !== undefined && !isUuid(f.batchId))
    throw new InvalidArgumentError('filter.batchId', f.batchId, 'must be a UUID');
  const limit = f.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > MAX_BATCH_PAGE)
    throw new InvalidArgumentError(
      'filter.limit',
      f.limit,
      `must be a whole number from 0 to ${MAX_BATCH_PAGE}`,
    );
  if (f.cursor !== undefined) decodeBatchCursor(f.cursor);
  return {
    queue: f.queue ?? null,
    active: f.active ?? null,
    batchId: f.batchId?.toLowerCase() ?? null,
    limit,
    cursor: f.cursor ?? null,
  };
}
