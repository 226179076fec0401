import { TaskQStateError } from '../errors/client-errors.js';
import type { JobWatchSources } from '../progress/job-watch.js';

/** What a client's streams read from: its backend, its notifications and Redis, and its lifetime. */
export interface StreamSources extends JobWatchSources {
  /** Aborted when the client closes: open streams then fail with `TaskQStateError`. */
  closed: AbortSignal;
}

/** The error of a stream whose client was closed while it was open. */
export function streamClosedError(): TaskQStateError {
  return new TaskQStateError(
    'the client was closed while a stream was open; open a new one with TaskQ.open()',
  );
}
