/**
 * What `Backend.explainJob` reads: the raw facts about one job and everything dispatch weighs
 * against it, from the storage's current state and on the backend's clock. Both backends return
 * these facts and nothing more; the client turns them into reasons (`src/client/job-explainer.ts`),
 * once, so the two backends cannot disagree about what a state means.
 */
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { AttemptOutcome, JobStatus, QueueMode } from './types.js';

/** What to read. */
export interface ExplainFactsRequest {
  /** The job's id (a UUID, lower case). */
  jobId: string;
  /** A worker counts as alive when its `last_seen_at` is at most this old (ms). */
  aliveWithinMs: number;
  /** Longest list of job ids each fact carries (running jobs, jobs ahead), 0-1000. */
  listLimit: number;
}

/**
 * Jobs ahead are counted up to this many; beyond it the count is a lower bound. Fixed, and written
 * as a literal (1001 = this + 1) in `postgres/sql/explain.sql`: a bound the generic plan can see.
 */
export const EXPLAIN_AHEAD_COUNT_CAP = 1000;

/**
 * The fields of the job that an explanation needs (never its payload or result); each means what
 * the field of the same name in `JobRow` means.
 */
export interface ExplainedJob {
  id: string;
  actor: string;
  queue: string;
  status: JobStatus;
  priority: number;
  identityKey: string | null;
  createdAt: Date;
  scheduledAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  lockedByWorker: string | null;
  lockExpiresAt: Date | null;
  cancelRequestedAt: Date | null;
  attempt: number;
  maxAttempts: number;
}

/** A bounded list of job ids and the exact number they were taken from. */
export interface JobIdSample {
  /** How many jobs there are (for jobs ahead: at most {@link EXPLAIN_AHEAD_COUNT_CAP}, see `countIsLowerBound`). */
  count: number;
  /** The first `listLimit` of them, in the order named where the fact is defined. */
  jobIds: string[];
}

/** The raw facts about one job (see the module comment). */
export interface JobExplainFacts {
  /** The backend clock's reading when the facts were read (the database's on Postgres). */
  now: Date;
  /** The job itself. */
  job: ExplainedJob;
  /** The actor's stored `actor_config` row (null: no worker has registered the actor, or it was deregistered). */
  actorConfig: { maxConcurrent: number | null } | null;
  /** The queue's `queues` row, or the defaults (`strict_fifo`, no cap) with `configured: false`. */
  queue: { mode: QueueMode; maxConcurrent: number | null; configured: boolean };
  /** Workers whose `queues` include the job's queue. */
  workers: {
    /** How many of them were seen within `aliveWithinMs`. */
    alive: number;
    /** The latest `last_seen_at` among all of them, alive or not (null: no worker row names the queue). */
    lastSeenAt: Date | null;
  };
  /** The worker row of `job.lockedByWorker` (null: the job has no lock holder, or its row is gone). */
  lockHolder: { workerId: string; hostname: string; lastSeenAt: Date; alive: boolean } | null;
  /** Running jobs of the job's actor, oldest start first (then by id). */
  actorRunning: JobIdSample;
  /** Running jobs of the job's queue, oldest start first (then by id). */
  queueRunning: JobIdSample;
  /** Another running job of the same actor with the job's identity key (null: none, or no key). */
  identityHolder: string | null;
  /**
   * Due pending jobs of the same actor and queue that dispatch orders before this one (priority,
   * then `scheduled_at`, then id), nearest the head first. Counted only for a pending job.
   */
  ahead: JobIdSample & { countIsLowerBound: boolean };
  /** The job's latest `job_attempts` row (null: it never had one). */
  lastAttempt: { outcome: AttemptOutcome; errorMessage: string | null; finishedAt: Date } | null;
  /** Whether a maintenance leader holds an unexpired lease (it moves due scheduled jobs to pending). */
  leaderAlive: boolean;
}

/**
 * Checks a request before either backend reads anything.
 * @throws InvalidArgumentError naming the field, the value and the rule
 */
export function checkExplainFactsRequest(r: ExplainFactsRequest): void {
  if (r === null || typeof r !== 'object') throw new InvalidArgumentError('request', r, 'must be an object');
  if (typeof r.jobId !== 'string') throw new InvalidArgumentError('jobId', r.jobId, 'must be a UUID');
  const ms = r.aliveWithinMs;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
    throw new InvalidArgumentError('aliveWithinMs', ms, 'must be a finite number of milliseconds >= 0');
  const n = r.listLimit;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1000)
    throw new InvalidArgumentError('listLimit', n, 'must be an integer from 0 to 1000');
}
