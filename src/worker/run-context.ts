import type { Span } from '@opentelemetry/api';

import type { ClaimedJob } from '../backend/types.js';
import type { JobContext } from '../core/context.js';
import type { Logger } from '../obs/logger.js';
import type { ProgressUpdate } from '../progress/progress-event.js';
import type { LazyAbort } from './lazy-abort.js';
import type { ProgressTracker } from './progress-tracker.js';
import { SubJobsUnavailableError } from '../errors/sub-job-errors.js';
import type { SubJobEnvironment } from './sub-job-environment.js';
import type { AttemptSubJobs, SubJobEnqueuer } from './sub-jobs.js';

/** Where an attempt keeps its `ctx.jobs` once the handler first reads it (the runner's job entry). */
export interface SubJobSlot {
  readonly row: ClaimedJob;
  subJobs?: AttemptSubJobs;
}

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
  readonly #subJobs: SubJobEnvironment | null;
  readonly #slot: SubJobSlot;

  constructor(
    row: ClaimedJob,
    readonly workerId: string,
    readonly payload: P,
    readonly log: Logger,
    abort: LazyAbort,
    tracker: ProgressTracker,
    readonly span: Span,
    subJobs: SubJobEnvironment | null,
    slot: SubJobSlot,
  ) {
    const jobId = row.id;
    this.jobId = jobId;
    this.actor = row.actor;
    this.queue = row.queue;
    this.attempt = row.attempt;
    this.heartbeatDetails = row.heartbeatDetails ?? null;
    this.#abort = abort;
    this.#subJobs = subJobs;
    this.#slot = slot;
    this.progress = async (update) => tracker.report(jobId, update);
    this.heartbeat = (details) => tracker.heartbeat(jobId, details);
    this.shouldAbort = () => abort.aborted;
    Object.freeze(this);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Made on first read (a getter, like `signal`): an attempt that never enqueues pays nothing. */
  get jobs(): SubJobEnqueuer {
    const slot = this.#slot;
    if (slot.subJobs !== undefined) return slot.subJobs;
    if (this.#subJobs === null)
      throw new SubJobsUnavailableError(
        `ctx.jobs of job ${this.jobId} is not available: this runner was built without a backend to enqueue on`,
      );
    return (slot.subJobs = this.#subJobs.open(slot.row));
  }
}
