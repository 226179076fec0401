import { IllegalStateTransition } from '../errors/job-errors.js';
import type { JobStatus } from './types.js';

/**
 * Allowed moves between statuses. The SQL `WHERE status = ...` predicates are the authoritative
 * gate; this table is the application-level fast check and the source of the lifecycle docs.
 */
export const VALID_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  pending: ['running', 'cancelled', 'failed'],
  scheduled: ['pending', 'cancelled', 'failed'],
  running: ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned', 'scheduled', 'pending'],
  // Terminal statuses move only through the admin retry (`retryJob`), which is not a worker transition.
  succeeded: [],
  failed: [],
  cancelled: [],
  crashed: [],
  abandoned: [],
};

/** Statuses a job never leaves on its own. */
export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(
  (Object.keys(VALID_TRANSITIONS) as JobStatus[]).filter((s) => VALID_TRANSITIONS[s].length === 0),
);

/** Non-terminal statuses ("not yet finished"): derived, so a new non-terminal state widens `active` filters. */
export const ACTIVE_STATUSES: ReadonlySet<JobStatus> = new Set(
  (Object.keys(VALID_TRANSITIONS) as JobStatus[]).filter((s) => VALID_TRANSITIONS[s].length > 0),
);

/** Terminal statuses `retryJob` may send back to `pending`. */
export const RETRYABLE_TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set([
  'failed',
  'crashed',
  'cancelled',
  'abandoned',
]);

/** True for succeeded, failed, cancelled, crashed and abandoned. */
export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

/** Throws {@link IllegalStateTransition} when `from → to` is not an allowed move. */
export function assertValidTransition(from: JobStatus, to: JobStatus, jobId: string): void {
  if (!VALID_TRANSITIONS[from].includes(to)) throw new IllegalStateTransition(jobId, from, to);
}
