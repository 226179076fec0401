/**
 * What `tq.explain(jobId)` returns: why a job is not running, as typed reasons. See docs/explain.md.
 */
import type { JobStatus, QueueMode } from '../backend/types.js';
import type { Duration } from '../core/duration.js';

/** Fields every reason has. */
interface ReasonBase {
  /** One sentence for a person: what holds the job back and what would release it. */
  message: string;
}

/** The job's time has not come: `scheduledAt` is in the future on the backend's clock. */
export interface ScheduledReason extends ReasonBase {
  kind: 'scheduled';
  /** When it becomes due. */
  scheduledAt: Date;
  /** Milliseconds from the backend clock's reading until then (> 0). */
  dueInMs: number;
}

/**
 * A scheduled job whose time has passed waits for the maintenance leader to move it to pending
 * (every worker competes for that role; its sweep runs every second).
 */
export interface AwaitingPromotionReason extends ReasonBase {
  kind: 'awaiting-promotion';
  /** When it became due. */
  scheduledAt: Date;
  /** Milliseconds since it became due. */
  overdueMs: number;
  /** Whether a maintenance leader holds an unexpired lease; false: no worker is leading, nothing promotes it. */
  leaderAlive: boolean;
}

/** No worker seen recently lists the job's queue. */
export interface NoWorkerReason extends ReasonBase {
  kind: 'no-worker';
  /** The job's queue. */
  queue: string;
  /** The last time any worker serving the queue was seen (null: no worker row names it). */
  lastSeenAt: Date | null;
  /** The window a worker must have been seen in to count as alive (ms). */
  aliveWithinMs: number;
}

/** No `actor_config` row: no worker running this actor has ever started (or it was deregistered). */
export interface UnregisteredActorReason extends ReasonBase {
  kind: 'unregistered-actor';
  /** The job's actor. */
  actor: string;
}

/** The actor is drained: its stored `maxConcurrent` is 0 (`taskq actor-config set --max-concurrent 0`). */
export interface DisabledReason extends ReasonBase {
  kind: 'disabled';
  /** The drained actor. */
  actor: string;
}

/** The actor's stored `maxConcurrent` is in use by running jobs. */
export interface ActorMaxConcurrentReason extends ReasonBase {
  kind: 'actor-max-concurrent';
  /** The job's actor. */
  actor: string;
  /** The stored cap. */
  maxConcurrent: number;
  /** Running jobs of the actor. */
  running: number;
  /** Some of them (at most `listLimit`), oldest start first. */
  runningJobIds: string[];
}

/** The queue's fleet-wide cap (`queues.max_concurrent`) is in use by running jobs. */
export interface QueueCapReason extends ReasonBase {
  kind: 'queue-cap';
  /** The job's queue. */
  queue: string;
  /** The queue's cap. */
  maxConcurrent: number;
  /** Running jobs of the queue. */
  running: number;
  /** Some of them (at most `listLimit`), oldest start first. */
  runningJobIds: string[];
}

/** Another job of the same actor with the same identity key is running (one runs at a time). */
export interface IdentityKeyReason extends ReasonBase {
  kind: 'identity-key';
  /** The job's identity key. */
  identityKey: string;
  /** The running job holding the key. */
  heldByJobId: string;
}

/** The last attempt was refused by a rate limit (token bucket or sliding window). */
export interface RateLimitReason extends ReasonBase {
  kind: 'rate-limit';
  /** The limit's name, read from the attempt's recorded error (null when it cannot be read). */
  limit: string | null;
  /** When the denial was recorded. */
  deniedAt: Date;
  /** When the job is due again (its `scheduledAt`: the denial's retry hint). */
  liftsAt: Date;
}

/** The last attempt found no free slot in a concurrency reservation (or the queue's cap). */
export interface ReservationReason extends ReasonBase {
  kind: 'reservation';
  /** The reservation's name, read from the attempt's recorded error (null when it cannot be read). */
  reservation: string | null;
  /** True when the reservation is the queue's own cap (`taskq:global:queue:<queue>`). */
  queueCap: boolean;
  /** When the denial was recorded. */
  deniedAt: Date;
  /** When the job is due again (its `scheduledAt`: the denial's retry hint). */
  liftsAt: Date;
}

/** Strict-FIFO queue: due pending jobs of the same actor and queue are ahead of this one. */
export interface FifoHeadOfLineReason extends ReasonBase {
  kind: 'fifo-head-of-line';
  /** The job's queue. */
  queue: string;
  /** How many are ahead (see `aheadIsLowerBound`). */
  ahead: number;
  /** True when there are more than `ahead` (the count stops at the cap). */
  aheadIsLowerBound: boolean;
  /** The first of them from the head of the line (at most `listLimit`). */
  headJobIds: string[];
}

/** The job is running: nothing holds it back. */
export interface RunningReason extends ReasonBase {
  kind: 'running';
  /** The worker holding its lease. */
  workerId: string | null;
  /** The worker's host, when its row is still in the registry. */
  hostname: string | null;
  /** When the handler started (null: claimed, waiting in the worker's local queue). */
  since: Date | null;
  /** When its lease expires unless the worker renews it. */
  lockExpiresAt: Date | null;
  /** Whether that worker was seen within the alive window (null: no registry row). */
  workerAlive: boolean | null;
  /** Set when a cancel was requested. */
  cancelRequestedAt: Date | null;
}

/** The job has ended. */
export interface TerminalReason extends ReasonBase {
  kind: 'terminal';
  /** How it ended. */
  status: Exclude<JobStatus, 'pending' | 'scheduled' | 'running'>;
  /** When it ended. */
  finishedAt: Date | null;
}

/** One thing that holds a job back (or, for a job not waiting, what it is doing). */
export type ExplainReason =
  | ScheduledReason
  | AwaitingPromotionReason
  | NoWorkerReason
  | UnregisteredActorReason
  | DisabledReason
  | ActorMaxConcurrentReason
  | QueueCapReason
  | IdentityKeyReason
  | RateLimitReason
  | ReservationReason
  | FifoHeadOfLineReason
  | RunningReason
  | TerminalReason;

/** The kinds of {@link ExplainReason}. */
export type ExplainReasonKind = ExplainReason['kind'];

/**
 * The verdict: `ready` (pending, nothing holds it back: a worker should claim it soon), `waiting`
 * (pending or scheduled, `reasons` says why), `running`, or `finished` (terminal).
 */
export type ExplainVerdict = 'ready' | 'waiting' | 'running' | 'finished';

/** What `tq.explain(jobId)` returns. */
export interface JobExplanation {
  /** The job's id. */
  jobId: string;
  /** The job's actor. */
  actor: string;
  /** The job's queue. */
  queue: string;
  /** The job's status as read. */
  status: JobStatus;
  /** What the reasons add up to. */
  verdict: ExplainVerdict;
  /**
   * Most decisive first. Empty for a `ready` job; a single `running` or `terminal` reason for a
   * job that is not waiting.
   */
  reasons: ExplainReason[];
  /** The queue's dispatch mode. */
  queueMode: QueueMode;
  /** The backend clock's reading when the facts were read. */
  checkedAt: Date;
}

/** Options of `tq.explain(jobId, options)`. */
export interface ExplainOptions {
  /**
   * A worker counts as alive when seen within this window. Default 60 s (the default
   * `TASKQ_LOCK_LEASE`, the window the fleet gauges use).
   */
  workerAliveWithin?: Duration;
  /** Longest list of job ids a reason carries (0-1000). Default 10. */
  listLimit?: number;
}
