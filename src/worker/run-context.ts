import type { Span } from '@opentelemetry/api';

import type { ClaimedJob } from '../backend/types.js';
import type { JobContext } from '../core/context.js';
import type { Logger } from '../obs/logger.js';
import type { ProgressUpdate } from '../progress/progress-event.js';
import type { LazyAbort } from './lazy-abort.js';
import type { ProgressTracker } from './progress-tracker.js';

/**
 * The `ctx` a handler gets, one per attempt. A class and not an object literal: `signal` must stay
 * lazy (a getter: most handlers never create the AbortController behind it), and an object literal
 * with a getter is kept by V8 as a dictionary, several times the size of this class's instances, and
 * the worker allocates one per job. The methods are per-instance arrow functions, so a
 * handler may destructure them (`const { progress } = ctx`). Frozen, like the literal was.
 */
export class RunContext<P = unknown> implements JobContext<P> {
  readonly jobId: string;
  readonly actor: string;
  readonly queue: string;
  readonly attempt: number;
  readonly heartbeatDetails: unknown;
  readonly progress: (update: ProgressUpdate) => Promise<void>;
  readonly heartbeat: (details?: unknown) => void;
  readonly shouldAbort: () => boolean;
  readonly #abort: LazyAbort;

  constructor(
    row: ClaimedJob,
    readonly workerId: string,
    readonly payload: P,
    readonly log: Logger,
    abort: LazyAbort,
    tracker: ProgressTracker,
    readonly span: Span,
  ) {
    const jobId = row.id;
    this.jobId = jobId;
    this.actor = row.actor;
    this.queue = row.queue;
    this.attempt = row.attempt;
    this.heartbeatDetails = row.heartbeatDetails ?? null;
    this.#abort = abort;
    this.progress = async (update) => tracker.report(jobId, update);
    this.heartbeat = (details) => tracker.heartbeat(jobId, details);
    this.shouldAbort = () => abort.aborted;
    Object.freeze(this);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }
}
