import type { JobRow } from '../backend/types.js';
import type { Logger } from '../obs/logger.js';

/** Pauses before the second and third read of a row the hooks need (a database blip passes). */
const RETRY_DELAYS_MS = [100, 500];

/**
 * Reads a job's stored row for its hooks and the error reporter, after its outcome was written.
 * A claim carries only what running the job needs (`ClaimedJob`), so the hooks' row is read here,
 * on the paths that call a hook, not per job. Up to three tries on errors; when they all fail, or
 * the row is gone (pruned meanwhile), it logs `hook-row-unreadable` and returns null, and the caller skips
 * the hooks: they must see the row as stored, not a guess at it.
 */
export async function readStoredRow(
  read: (jobId: string) => Promise<JobRow | null>,
  jobId: string,
  log: Logger,
): Promise<JobRow | null> {
  let lastError: unknown = null;
  for (let attempt = 0; attempt <= RETRY_DELAYS_MS.length; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt - 1]));
    try {
      const row = await read(jobId);
      if (row !== null) return row;
      // Gone (pruned or deleted meanwhile): another read will not bring it back.
      lastError = null;
      break;
    } catch (err) {
      lastError = err;
    }
  }
  log.error({ err: lastError, jobId }, 'hook-row-unreadable');
  return null;
}
