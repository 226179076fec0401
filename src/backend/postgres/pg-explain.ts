/**
 * The Postgres backend's `Backend.explainJob`: the one statement of `sql/explain.sql`, its row
 * mapped to {@link JobExplainFacts}.
 */
import {
  checkExplainFactsRequest,
  EXPLAIN_AHEAD_COUNT_CAP,
  type ExplainFactsRequest,
  type JobExplainFacts,
} from '../explain-facts.js';
import type { AttemptOutcome, JobStatus, QueueMode } from '../types.js';
import type { PgOps } from './pg-ops.js';

type Raw = Record<string, unknown>;

// Timestamps arrive as epoch milliseconds (float8), as in JOB_COLUMNS.
const date = (v: unknown): Date => new Date(Number(v));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const ids = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

/** The facts about one job, in one round trip; null when there is no such job. */
export async function explainJob(ops: PgOps, request: ExplainFactsRequest): Promise<JobExplainFacts | null> {
  checkExplainFactsRequest(request);
  const [r] = await ops.run<Raw>('explainJob', [request.jobId, request.aliveWithinMs, request.listLimit]);
  if (!r) return null;
  const ahead = Number(r.ahead);
  return {
    now: date(r.now_ms),
    job: {
      id: String(r.id),
      actor: String(r.actor),
      queue: String(r.queue),
      status: r.status as JobStatus,
      priority: Number(r.priority),
      identityKey: strOrNull(r.identity_key),
      createdAt: date(r.created_at),
      scheduledAt: date(r.scheduled_at),
      startedAt: dateOrNull(r.started_at),
      finishedAt: dateOrNull(r.finished_at),
      lockedByWorker: strOrNull(r.locked_by_worker),
      lockExpiresAt: dateOrNull(r.lock_expires_at),
      cancelRequestedAt: dateOrNull(r.cancel_requested_at),
      attempt: Number(r.attempt),
      maxAttempts: Number(r.max_attempts),
    },
    actorConfig: r.actor_configured
      ? { maxConcurrent: r.actor_max_concurrent === null ? null : Number(r.actor_max_concurrent) }
      : null,
    queue: {
      mode: r.queue_mode as QueueMode,
      maxConcurrent: r.queue_max_concurrent === null ? null : Number(r.queue_max_concurrent),
      configured: r.queue_configured === true,
    },
    workers: { alive: Number(r.workers_alive), lastSeenAt: dateOrNull(r.workers_last_seen_at) },
    lockHolder:
      r.holder_id === null || r.holder_id === undefined
        ? null
        : {
            workerId: String(r.holder_id),
            hostname: String(r.holder_hostname),
            lastSeenAt: date(r.holder_last_seen_at),
            alive: r.holder_alive === true,
          },
    actorRunning: { count: Number(r.actor_running), jobIds: ids(r.actor_running_ids) },
    queueRunning: { count: Number(r.queue_running), jobIds: ids(r.queue_running_ids) },
    identityHolder: strOrNull(r.identity_holder),
    ahead: {
      count: Math.min(ahead, EXPLAIN_AHEAD_COUNT_CAP),
      jobIds: ids(r.ahead_ids),
      countIsLowerBound: ahead > EXPLAIN_AHEAD_COUNT_CAP,
    },
    lastAttempt:
      r.last_outcome === null || r.last_outcome === undefined
        ? null
        : {
            outcome: r.last_outcome as AttemptOutcome,
            errorMessage: strOrNull(r.last_error_message),
            finishedAt: date(r.last_finished_at),
          },
    leaderAlive: r.leader_alive === true,
  };
}
