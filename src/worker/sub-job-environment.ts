import type { Backend } from '../backend/backend.js';
import type { ClaimedJob } from '../backend/types.js';
import { ActorCapacityCache, DEFAULT_CAPACITY_CACHE_TTL_MS } from '../client/capacity-cache.js';
import { TaskQ } from '../client/taskq.js';
import type { ActorRef } from '../core/actor.js';
import { SystemClock } from '../core/clock.js';
import type { Logger } from '../obs/logger.js';
import { EnqueueTracing } from '../obs/tracing/enqueue-tracing.js';
import { AttemptSubJobs } from './sub-jobs.js';

/** The worker settings `ctx.jobs` follows (those of a client's enqueue). */
export interface SubJobSettings {
  payloadMaxBytes: number;
  idempotencyKeyMaxBytes: number;
  /** `send` spans around sub-job enqueues, as a client's (false: no tracer is called). */
  otelEnabled: boolean;
}

/**
 * What every attempt's `ctx.jobs` shares, one per worker: the backend, the stored `maxPending`
 * values (read through a cache, as a client does), the client behind the handles, the tracer. All
 * of it is made on first use, so that a worker whose handlers never touch `ctx.jobs` pays nothing.
 */
export class SubJobEnvironment {
  private clientInstance: TaskQ | null = null;
  private capacity: ActorCapacityCache | null = null;
  private tracingInstance: EnqueueTracing | null | undefined = undefined;

  constructor(
    readonly backend: Backend,
    readonly settings: SubJobSettings,
    readonly logger: Logger,
  ) {}

  /** The `ctx.jobs` of one attempt (a fresh, empty buffer). */
  open(row: ClaimedJob): AttemptSubJobs {
    return new AttemptSubJobs(this, row);
  }

  /** The client the children's handles use (`wait()`, `status()`, …); never closes the backend. */
  get client(): TaskQ {
    return (this.clientInstance ??= new TaskQ(this.backend, {
      logger: this.logger,
      payloadMaxBytes: this.settings.payloadMaxBytes,
      idempotencyKeyMaxBytes: this.settings.idempotencyKeyMaxBytes,
      otelEnabled: this.settings.otelEnabled,
    }));
  }

  /** The `send` spans' tracer, or null with `otelEnabled: false`. */
  get tracing(): EnqueueTracing | null {
    if (this.tracingInstance === undefined)
      this.tracingInstance = this.settings.otelEnabled ? new EnqueueTracing() : null;
    return this.tracingInstance;
  }

  /**
   * A child's effective `maxPending`: without `perCall`, the stored value or else the actor's
   * literal (as `TaskQ.enqueue`); with it, the lower of it and a stored value, or it alone when
   * nothing is stored (the reference's `SubJobEnqueuer.enqueue`).
   */
  async maxPendingOf(ref: ActorRef<unknown, unknown>, perCall: number | undefined): Promise<number | null> {
    this.capacity ??= new ActorCapacityCache(
      this.backend,
      new SystemClock(),
      DEFAULT_CAPACITY_CACHE_TTL_MS,
      this.logger,
    );
    if (perCall === undefined) return this.capacity.effectiveMaxPending(ref.name, ref.maxPending);
    // The cache answers "stored, else the literal given": given `perCall`, that is the stored value
    // when there is one, else `perCall` itself.
    const storedOrPerCall = await this.capacity.effectiveMaxPending(ref.name, perCall);
    return Math.min(storedOrPerCall ?? perCall, perCall);
  }

  /** Releases the client's subscriptions (at worker shutdown, once no handler runs). */
  async close(): Promise<void> {
    await this.clientInstance?.close();
  }
}
