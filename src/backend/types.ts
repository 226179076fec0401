/**
 * Row and argument types shared by every backend. These are the shapes that cross the Backend
 * seam: the client builds `EnqueueArgs`, backends return `JobRow`s.
 */
import type { JobId } from '../core/ids.js';

/** Every job status, in lifecycle order. */
export const JOB_STATUSES = [
  'pending',
  'scheduled',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'crashed',
  'abandoned',
] as const;

/** A job's status; see docs/job-lifecycle.md for the state machine. */
export type JobStatus = (typeof JOB_STATUSES)[number];

/** How a job's failures are retried: bounded by `maxAttempts`, forever, or never. */
export type RetryKind = 'transient' | 'indefinite' | 'nonRetryable';

/** Every retry kind. */
export const RETRY_KINDS: readonly RetryKind[] = ['transient', 'indefinite', 'nonRetryable'];

/** Cancellation phase stored on the row: none, cooperative (signal aborted), forced. */
export type CancelPhase = 0 | 1 | 2;

/** Dispatch mode of a queue. */
export type QueueMode = 'strict_fifo' | 'round_robin';

/** What happened to one execution attempt. */
export type AttemptOutcome =
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'crashed'
  | 'abandoned'
  | 'snoozed'
  | 'retry_after'
  | 'rate_limit_denied'
  | 'reservation_denied'
  /** The worker shut down mid-attempt; the job went back to `pending` without using an attempt. */
  | 'interrupted';

/** A `jobs` row: the current snapshot of one job. */
export interface JobRow {
  /** UUIDv7 job id. */
  id: JobId;
  /** Actor name. */
  actor: string;
  /** Queue the job is on. */
  queue: string;
  /** Business key: at most one running job per `(actor, identityKey)`; key of `uniqueFor`. */
  identityKey: string | null;
  /** Cohort key for round-robin queues. */
  fairnessKey: string | null;
  /** The validated payload as stored (JSON). */
  payload: unknown;
  /** Payload schema version declared by the actor at enqueue. */
  payloadSchemaVer: number;
  /** Current status. */
  status: JobStatus;
  /** Higher runs first. */
  priority: number;
  /** Attempts dispatched so far (1-based once running). */
  attempt: number;
  /** Attempt budget of a `transient` retry policy. */
  maxAttempts: number;
  /** Retry kind of the actor's policy at enqueue. */
  retryKind: RetryKind;
  /** Overall deadline across attempts (database clock), or null. */
  scheduleToClose: Date | null;
  /** Per-attempt timeout in milliseconds, when set at enqueue. */
  startToCloseMs: number | null;
  /** Heartbeat timeout in milliseconds, when set at enqueue. */
  heartbeatTimeoutMs: number | null;
  /** When the job was inserted. */
  createdAt: Date;
  /** When the job becomes (or became) dispatchable. */
  scheduledAt: Date;
  /**
   * When the current or last attempt's handler was recorded as starting: at its claim for a job that
   * went straight to a free slot, else when it left the worker's local queue. Null while a claimed
   * job waits in that queue (a worker that dies then gives its attempt back).
   */
  startedAt: Date | null;
  /** When the job reached a terminal status. */
  finishedAt: Date | null;
  /** Last lease renewal or handler heartbeat. */
  lastHeartbeatAt: Date | null;
  /** Worker holding the lease while running. */
  lockedByWorker: string | null;
  /** Lease expiry while running (database clock). */
  lockExpiresAt: Date | null;
  /** When a cancel was requested. */
  cancelRequestedAt: Date | null;
  /** 0 none, 1 cooperative, 2 forced. */
  cancelPhase: CancelPhase;
  /** Class name of the last error. */
  errorClass: string | null;
  /** Message of the last error. */
  errorMessage: string | null;
  /** Stack of the last error. */
  errorTraceback: string | null;
  /** Last reported progress (step, percent, detail, data). */
  progressState: Record<string, unknown>;
  /** Sequence number of the last progress report. */
  progressSeq: number;
  /** Stored result (JSON), or null. */
  result: unknown;
  /** Size of the serialised result. */
  resultSizeBytes: number | null;
  /** When the stored result is removed. */
  resultExpiresAt: Date | null;
  /** Idempotency key, unique within `idempotencyScope` until the row is pruned. */
  idempotencyKey: string | null;
  /** Idempotency namespace; `''` is the default (global) scope. */
  idempotencyScope: string;
  /** W3C trace id of the producer span. */
  traceId: string | null;
  /** Span id of the producer span. */
  spanId: string | null;
  /** Free-form metadata; `singleton` and `batch_id` are reserved keys. */
  metadata: Record<string, unknown>;
  /** Tags for filtering. */
  tags: string[];
  /** Details of the last `ctx.heartbeat(details)` (shown to the next attempt), or null. */
  heartbeatDetails: unknown;
}

/**
 * What a claim returns for each job: the fields a worker needs to run the attempt (the rest of the
 * row is not read back — fewer columns to format, send and parse per claimed job). A backend may
 * return whole {@link JobRow}s (the in-memory one does); the worker reads only these.
 */
export type ClaimedJob = Pick<
  JobRow,
  | 'id'
  | 'actor'
  | 'queue'
  | 'payload'
  | 'payloadSchemaVer'
  | 'priority'
  | 'attempt'
  | 'startToCloseMs'
  | 'heartbeatTimeoutMs'
  | 'progressState'
  | 'progressSeq'
  | 'heartbeatDetails'
  | 'traceId'
  | 'spanId'
>;

/** Everything a backend needs to insert one job. Built and validated by the client. */
export interface EnqueueArgs {
  id: JobId;
  actor: string;
  queue: string;
  identityKey: string | null;
  fairnessKey: string | null;
  /** The validated payload serialised as JSON text (the client checks it serialises). */
  payloadJson: string;
  payloadSchemaVer: number;
  priority: number;
  maxAttempts: number;
  retryKind: RetryKind;
  /** Absolute time to run at; null = now (plus `scheduledDelayMs`). The database decides pending vs scheduled. */
  scheduledAt: Date | null;
  /** Delay measured on the backend's clock at insert, when `scheduledAt` is null. */
  scheduledDelayMs: number | null;
  /** Absolute deadline (deprecated form), or null. */
  scheduleToClose: Date | null;
  /** Deadline interval anchored to the database clock at insert (`retry.timeBudget`), or null. */
  scheduleToCloseIntervalMs: number | null;
  startToCloseMs: number | null;
  heartbeatTimeoutMs: number | null;
  idempotencyKey: string | null;
  /** `''` for the default scope. */
  idempotencyScope: string;
  traceId: string | null;
  spanId: string | null;
  metadata: Record<string, unknown>;
  tags: string[];
  /** Effective max pending for the actor (stored override or literal), or null for no limit. */
  maxPending: number | null;
  /** True for singleton actors: refuse when an active job exists. */
  singleton: boolean;
  /** Dedup window in milliseconds over `(actor, identityKey)`, or null. */
  uniqueForMs: number | null;
  /** Statuses considered by `uniqueFor`. */
  uniqueStates: readonly JobStatus[];
}

/** A `job_attempts` row: one execution attempt. */
export interface AttemptRow {
  jobId: JobId;
  /** Attempt number (1-based). */
  attempt: number;
  /** Worker that ran the attempt. */
  workerId: string | null;
  startedAt: Date | null;
  finishedAt: Date;
  /** Wall time of the attempt in milliseconds (to the microsecond), when known. */
  durationMs: number | null;
  outcome: AttemptOutcome;
  errorClass: string | null;
  errorMessage: string | null;
  errorTraceback: string | null;
}

/**
 * A job that sweep 5 moved from `jobs` to `jobs_archive` (retention passed), as
 * `Backend.getArchivedJob` reads it. Its events were not archived.
 */
export interface ArchivedJob {
  /** The row as it was when archived. */
  job: JobRow;
  /** When sweep 5 archived it (backend clock). */
  archivedAt: Date;
  /** When sweep 6 deletes it for good (backend clock). */
  expireAt: Date;
  /** Its archived attempts, oldest first. */
  attempts: AttemptRow[];
}

/** Kinds of rows in `job_events`. */
export type EventKind = 'state_change' | 'cancel_request';

/** A `job_events` row: an immutable audit record of a transition or cancel request. */
export interface EventRow {
  /** bigserial id as a decimal string (ordering key of the reclaim feed). */
  eventId: string;
  jobId: JobId;
  /** Database time of the INSERT. */
  occurredAt: Date;
  kind: EventKind;
  /** `{ from_state, to_state, reason, ... }` for state changes; `{ reason, phase }` for cancel requests. */
  detail: Record<string, unknown>;
}

/** Outcome of `cancel(jobId)`. */
export interface CancelResult {
  jobId: JobId;
  /** Status read before the request. */
  previousStatus: JobStatus;
  /** Status read after the request. */
  newStatus: JobStatus;
  /** True when the request changed anything (cancelled directly, or a running job was flagged). */
  cancellationInitiated: boolean;
}

/** Outcome of `cancelWhere(filter)`. */
export interface BulkCancelResult {
  /** Pending or scheduled jobs that ended `cancelled` at once. */
  cancelledDirectly: number;
  /** Running jobs flagged for cooperative cancellation. */
  cancelRequested: number;
  cancelledIds: JobId[];
  cancelRequestedIds: JobId[];
  /** `cancelledDirectly + cancelRequested`. */
  totalAffected: number;
}

/** What a bulk admin retry (`retryWhere`) did. */
export interface BulkRetryResult {
  /** Failed, crashed, cancelled or abandoned jobs sent back to `pending` with a fresh attempt budget. */
  retried: number;
  retriedIds: JobId[];
}

/** A `actor_config` row: the stored, operator-owned configuration of an actor. */
export interface ActorConfigRow {
  actor: string;
  queue: string;
  maxConcurrent: number | null;
  maxPending: number | null;
  /** Stored result TTL in milliseconds. */
  resultTtlMs: number | null;
  metadata: Record<string, unknown>;
  updatedAt: Date;
}

/** Options of `deregister` (`tq.actors.deregister`, `Backend.deregisterActor`). */
export interface DeregisterOptions {
  /**
   * Cancel the actor's pending and scheduled jobs and disable its enabled cron schedules instead of
   * refusing. Running jobs still refuse the deregistration. Default false.
   */
  force?: boolean;
  /**
   * Also delete the `queues` row of the actor's queue, when no other `actor_config` row names that
   * queue and no pending, scheduled or running job of any actor is in it; otherwise the row stays
   * (`queuePurged: false`). Default false.
   */
  purgeQueue?: boolean;
}

/** What a successful deregistration did (every refusal throws an `ActorDeregistrationError`). */
export interface DeregisterResult {
  /** The deregistered actor. */
  actor: string;
  /** The queue its `actor_config` row named. */
  queue: string;
  /** Always true: a missing row throws `ActorNotFoundError` instead (kept for the reference's contract). */
  actorConfigDeleted: true;
  /** Enabled cron schedules disabled by `force` (0 without it). */
  schedulesDisabled: number;
  /** Pending and scheduled jobs cancelled by `force` (0 without it). */
  jobsCancelled: number;
  /** Terminal jobs of the actor left in `jobs` (history; retention removes them), the cancelled ones included. */
  terminalJobsRemaining: number;
  /** Whether the queue's `queues` row was deleted (see {@link DeregisterOptions.purgeQueue}). */
  queuePurged: boolean;
}

/** A `queues` row: dispatch mode and optional fleet-wide cap of one queue. */
export interface QueueConfigRow {
  name: string;
  mode: QueueMode;
  /** Fleet-wide cap on running jobs of the queue (enforced with reservation slots), or null. */
  maxConcurrent: number | null;
  updatedAt: Date;
}

/**
 * A change to an actor's operator-owned capacity: `undefined` leaves a field as it is, `null` clears
 * it (the actor's code literal applies again), a value stores it.
 */
export interface ActorCapacityChange {
  /** Fleet-wide cap on running jobs of the actor (0 drains it). */
  maxConcurrent?: number | null;
  /** Backpressure bound on pending + scheduled jobs. */
  maxPending?: number | null;
  /** How long results are kept, in milliseconds. */
  resultTtlMs?: number | null;
}

/** A transaction holding `job_events` open past the reclaim feed's visibility margin. */
export interface LongRunningJobEventsWriter {
  pid: number;
  applicationName: string;
  state: string;
  transactionStart: Date;
  openMs: number;
  query: string;
}
