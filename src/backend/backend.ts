import type { ClientLike } from '../db/driver.js';
import type { NormalizedJobFilter } from './job-filter.js';
import type { AttemptRow, EnqueueArgs, EventRow, JobRow } from './types.js';

/**
 * Version of the Backend contract. Bump it when an existing member's observable behaviour changes
 * so that an implementation written against the old contract would silently misbehave.
 */
export const BACKEND_PROTOCOL_VERSION = 1;

/** One page of `list()`. `nextCursor` is null on the last page. */
export interface JobPage {
  jobs: JobRow[];
  nextCursor: string | null;
}

/**
 * The one seam between TaskQ's client/worker and storage. `PostgresBackend` owns every SQL
 * statement; `InMemoryBackend` (from `taskq/testing`) passes the same contract suite for users'
 * own tests. Time predicates are the backend's: Postgres uses its own clock, the in-memory backend
 * its injected `Clock`.
 */
export interface Backend {
  /** Contract version this implementation was written against. */
  readonly protocolVersion: number;
  /** Human-readable kind, for logs. */
  readonly kind: 'postgres' | 'memory';

  /**
   * Inserts one job, applying the enqueue gates in order — `uniqueFor` dedup, singleton,
   * `maxPending`, idempotency — and returns the new row or the existing one it deduplicated to.
   * @throws SingletonCollisionError, MaxPendingExceededError, SchemaNotMigratedError
   */
  enqueue(args: EnqueueArgs): Promise<JobRow>;
  /**
   * Same as {@link enqueue} on the caller's connection, which must already be inside the caller's
   * transaction: the job commits or rolls back with it. No BEGIN/COMMIT is issued.
   */
  enqueueWithConn(conn: ClientLike, args: EnqueueArgs): Promise<JobRow>;
  /**
   * Inserts up to 1000 validated jobs in one statement and returns one row per item, in order; an
   * idempotency collision returns the existing row. `uniqueFor` is not applied to batches.
   */
  enqueueBatch(args: readonly EnqueueArgs[], options?: { connection?: ClientLike }): Promise<JobRow[]>;

  /** The job, or null. */
  get(jobId: string): Promise<JobRow | null>;
  /** One page of jobs in the filter's keyset order. */
  listJobs(filter: NormalizedJobFilter): Promise<JobPage>;
  /** Pending + scheduled counts of the given actors (absent = 0), in one round trip. */
  countPendingJobs(actors: readonly string[]): Promise<Map<string, number>>;
  /** Pending + scheduled + running jobs on the given queues; an empty list counts 0. */
  countActiveJobs(queues: readonly string[]): Promise<number>;
  /** Stored `actor_config.max_pending` per actor with a row (null = row with no override). */
  getActorMaxPending(): Promise<Map<string, number | null>>;

  /**
   * Requests cancellation: pending/scheduled jobs end `cancelled` at once; a running job is
   * flagged (phase 1) and its worker notified. Returns false when nothing changed (terminal, or
   * already requested).
   */
  writeCancelRequest(jobId: string, reason: string | null): Promise<boolean>;
  /** Admin retry: a failed, crashed, cancelled or abandoned job goes back to `pending`. */
  retryJob(jobId: string): Promise<boolean>;

  /** Appends an attempt row. */
  writeAttempt(attempt: AttemptRow): Promise<void>;
  /** Attempt rows of a job, oldest first. */
  getAttempts(jobId: string): Promise<AttemptRow[]>;
  /** Event rows of a job, oldest first. */
  getEvents(jobId: string): Promise<EventRow[]>;

  /** Releases what the backend owns. */
  close(): Promise<void>;
}
