import type { AnnouncedIds } from './announcements.js';
/**
 * Types of the worker-facing half of the Backend: claiming, renewing, settling and notifications.
 */
import type { AttemptOutcome, JobRow, JobStatus } from './types.js';

/** What a producer asks for when it claims work. */
export interface DispatchRequest {
  /** The claiming worker. */
  workerId: string;
  /** Queues to claim from. */
  queues: readonly string[];
  /** Actors this worker can run, with their code-declared `maxConcurrent` (null = unbounded). */
  actors: readonly { name: string; maxConcurrent: number | null }[];
  /** Most jobs to claim. */
  limit: number;
  /** Lease granted to each claimed job, in ms. */
  leaseMs: number;
  /** Per-actor candidate multiplier. */
  oversample: number;
  /**
   * How many of the claimed jobs, in the order they come back, go straight to a free slot: the claim
   * records their handlers as started (`startedAt` set). The others are claimed into the worker's
   * local queue with `startedAt` null, and recorded by `Backend.markStarted` just before their
   * handlers begin; a worker that dies before that costs them no attempt. Default: all of them.
   */
  startNow?: number;
  /**
   * Called by a backend that can tell, when the claim came back with fewer than `limit` jobs
   * because nothing else was claimable: every pending, due job of these queues and actors that no
   * other claim held was taken, and no concurrency limit, identity key or fairness rule held one
   * back. A backend that cannot tell never calls it (the producer then assumes more may be there).
   * The producer uses it to skip the claims that freed slots would otherwise start: until a
   * wake-up says new work arrived, they would come back empty.
   */
  onDrained?: () => void;
}

/** An error as stored on the job and its attempt row. */
export interface ErrorInfo {
  errorClass: string;
  message: string | null;
  traceback: string | null;
}

/** Progress to persist with a settlement (the job's last reported progress). */
export interface ProgressSnapshot {
  seq: number;
  state: Record<string, unknown>;
}

interface SettlementBase {
  jobId: string;
  workerId: string;
  /** When the handler started (in-process clock), for the attempt row. */
  handlerStartedAt: Date | null;
  /** Handler wall time in ms, for the attempt row. */
  durationMs: number | null;
  progress?: ProgressSnapshot | null;
  /** Details of the handler's last `ctx.heartbeat()` (JSON text), kept for the next attempt. */
  heartbeatDetailsJson?: string | null;
}

/** The outcome of one attempt, as written by `settle()`. */
export type Settlement =
  | (SettlementBase & {
      kind: 'succeeded';
      /** Result as JSON text, or null. */
      resultJson: string | null;
      resultSizeBytes: number | null;
      /** The actor's `resultTtl` literal (a stored `actor_config.result_ttl` wins). */
      fallbackResultTtlMs: number | null;
    })
  | (SettlementBase & {
      kind: 'failed';
      error: ErrorInfo;
      /** null = fail for good; otherwise retry after this delay (decided against the deadline by the backend). */
      retryDelayMs: number | null;
    })
  | (SettlementBase & { kind: 'cancelled'; error: ErrorInfo | null })
  | (SettlementBase & {
      kind: 'reschedule';
      delayMs: number;
      /** False gives the attempt back (Snooze, rate-limit denials). */
      consumeBudget: boolean;
      outcome: Extract<
        AttemptOutcome,
        'snoozed' | 'retry_after' | 'rate_limit_denied' | 'reservation_denied'
      >;
      error: ErrorInfo | null;
    })
  | (SettlementBase & { kind: 'release'; error: ErrorInfo | null });

/** What `settle()` did to one job: its new status, or `noop` when this worker no longer owned it. */
export interface SettleResult {
  jobId: string;
  status: JobStatus | 'noop';
  errorClass: string | null;
}

/** A worker's entry in the `workers` table. */
export interface WorkerRegistration {
  workerId: string;
  hostname: string;
  pid: number;
  label: string | null;
  queues: readonly string[];
  maxConcurrency: number;
  version: string;
}

/** The structural part of an actor's stored configuration (drift-checked at startup). */
export interface ActorStructure {
  actor: string;
  queue: string;
  metadata: Record<string, unknown>;
}

/** A structural difference between an actor's code and its stored configuration. */
/** Options of `Backend.syncActorConfig`. */
export interface ActorConfigSyncOptions {
  /** Overwrite drifted structure (queue, metadata) instead of only reporting it. */
  force: boolean;
  /**
   * Called with the actors whose row this sync created although they have finished jobs: they ran
   * before, so their row was removed since (deregistered), and this worker brings them back.
   */
  reregistered?: (actors: readonly string[]) => void;
}

export interface ActorConfigDrift {
  actor: string;
  field: 'queue' | 'metadata';
  registered: unknown;
  stored: unknown;
}

/** Callbacks of a notification subscription. */
export interface NotificationHandlers {
  /** New dispatchable work (enqueue, scheduled promotion, retry, reclaim). */
  onWake?: () => void;
  /** A cancel request for a job of `workerId` (only delivered when subscribed with that worker id). */
  onCancel?: (jobId: string, workerId: string) => void;
  /** Jobs reached a terminal status (`'*'` when too many to list). */
  onDone?: (jobIds: AnnouncedIds) => void;
  /** Progress of running jobs was written (`'*'` when too many to list); wakes Postgres-driven streams. */
  onProgress?: (jobIds: AnnouncedIds) => void;
}

/** A live subscription to the backend's notifications. */
export interface NotificationSubscription {
  /** Checks the underlying connection (a failed ping means: reconnect). */
  ping(): Promise<void>;
  /** Called once when the subscription breaks (e.g. the LISTEN connection died). */
  onClose(cb: (err: Error | undefined) => void): void;
  close(): Promise<void>;
}

/**
 * The fencing token of one leadership term: every sweep the leader runs carries it, and the backend
 * refuses the sweep (writing nothing) unless this term of this worker is still the current,
 * unexpired lease — see `LeadershipLostError`.
 */
export interface LeaderFence {
  /** The worker holding the term. */
  readonly workerId: string;
  /** The term: grows by one with every change of holder (a decimal string: a `bigint` in Postgres). */
  readonly term: string;
}

/** The maintenance leader's lease as the backend stores it (`maintenance_leader` on Postgres). */
export interface LeaderLease {
  /** The worker holding (or last holding) the lease. */
  workerId: string;
  /** Its host name, as it reported it. */
  hostname: string | null;
  /** The current term (see {@link LeaderFence.term}). */
  term: string;
  /** When this term began (backend clock). */
  acquiredAt: Date;
  /** When the holder last renewed it (backend clock). */
  renewedAt: Date;
  /** When it expires unless renewed (backend clock). */
  expiresAt: Date;
  /** True while `expiresAt` is in the future on the backend's clock. */
  valid: boolean;
}

/**
 * A session that competes for the maintenance leadership: a lease (holder, term, expiry on the
 * backend's clock) renewed on every election tick. On Postgres a session-level advisory lock on a
 * dedicated connection rides alongside: it lets a candidate take over at once from a holder whose
 * connection died, instead of waiting for the lease to expire.
 */
export interface LeaderSession {
  /**
   * Renews this worker's lease, or takes a free one (expired, or given up) with a new term. Returns
   * whether this worker now leads; a lease lost meanwhile (expired, taken over) comes back false.
   */
  tryAcquire(): Promise<boolean>;
  /** True while this session holds the lease (as of its last `tryAcquire`). */
  readonly held: boolean;
  /** The term held (as of the last `tryAcquire`), or null. */
  readonly fence: LeaderFence | null;
  /** Gives the lease up (it expires at once, so another worker takes over on its next tick). */
  release(): Promise<void>;
  /** Gives up the leadership and closes the session. */
  close(): Promise<void>;
}

/** Result of one scheduled-to-pending pass. */
export interface PromotionResult {
  /** Jobs moved from scheduled to pending. */
  promoted: number;
  /** Milliseconds until the next scheduled job is due (database clock), or null when none. */
  nextDueInMs: number | null;
}

/** What one reclaim sweep did. */
export interface ReclaimResult {
  /** Expired leases reclaimed. */
  reclaimed: number;
  /** Of those, jobs sent back to pending (attempts left). */
  retried: number;
}

/** Retention of terminal jobs before they move to the archive, and of the archive, in ms. */
export interface RetentionPolicy {
  succeededMs: number;
  failedMs: number;
  cancelledMs: number;
  /** Abandoned and crashed jobs. */
  abandonedMs: number;
  /** Archived rows are deleted this long after archiving. */
  archiveMs: number;
}

/** An actor with pending/scheduled jobs but no `actor_config` row. */
export interface StrandedActor {
  actor: string;
  jobs: number;
}

/**
 * Why a running job is being escalated or abandoned: a caller's cancel, or the worker giving up a
 * handler that outlived its own shutdown graces.
 */
export type CancelCause = 'cancel' | 'shutdown';

/** A running job of this worker with a cancel requested, and its stored phase. */
export interface CancelFlag {
  jobId: string;
  phase: 0 | 1 | 2;
}

/**
 * What `Backend.settleWithChildren` did: the parent's write, and the row each child resolved to, in
 * order (an idempotency key or `uniqueFor` hit resolves to the existing job). No children were
 * written when the parent's write was a no-op (`result.status` `noop`).
 */
export interface SettleWithChildrenResult {
  result: SettleResult;
  children: JobRow[];
}
