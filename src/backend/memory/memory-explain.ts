/**
 * The in-memory backend's `Backend.explainJob`, mirroring `postgres/sql/explain.sql` on the
 * backend's injected clock.
 */
import type { Clock } from '../../core/clock.js';
import {
  checkExplainFactsRequest,
  EXPLAIN_AHEAD_COUNT_CAP,
  type ExplainFactsRequest,
  type JobExplainFacts,
} from '../explain-facts.js';
import type { ActorConfigRow, AttemptRow, JobRow, QueueConfigRow } from '../types.js';
import type { WorkerRegistration } from '../worker-types.js';

/** What the facts are read from: the backend's state at the moment of the call. */
export interface ExplainState {
  readonly clock: Clock;
  readonly jobs: ReadonlyMap<string, JobRow>;
  readonly attempts: readonly AttemptRow[];
  readonly actorConfig: ReadonlyMap<string, ActorConfigRow>;
  readonly queues: ReadonlyMap<string, QueueConfigRow>;
  readonly workers: ReadonlyMap<string, WorkerRegistration & { lastSeenAt: Date }>;
  /** Whether the leader lease is held and unexpired. */
  readonly leaderValid: boolean;
}

const us = (d: Date): number => d.getTime() * 1000;
const byId = (a: JobRow, b: JobRow): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
/** Running jobs, oldest start first (a job not yet started last), then by id: the statement's order. */
const byStart = (a: JobRow, b: JobRow): number =>
  a.startedAt === null && b.startedAt === null
    ? byId(a, b)
    : a.startedAt === null
      ? 1
      : b.startedAt === null
        ? -1
        : a.startedAt.getTime() - b.startedAt.getTime() || byId(a, b);
/** Dispatch order: priority, then time, then id. */
const dispatchOrder = (a: JobRow, b: JobRow): number =>
  b.priority - a.priority || us(a.scheduledAt) - us(b.scheduledAt) || byId(a, b);

/** The facts about one job; null when there is no such job. */
export function explainJob(s: ExplainState, request: ExplainFactsRequest): JobExplainFacts | null {
  checkExplainFactsRequest(request);
  const job = s.jobs.get(request.jobId);
  if (!job) return null;
  const now = s.clock.now();
  const aliveSince = now.getTime() - request.aliveWithinMs;
  const running = [...s.jobs.values()].filter((r) => r.status === 'running');
  const sample = (rows: JobRow[]) => ({
    count: rows.length,
    jobIds: rows
      .sort(byStart)
      .slice(0, request.listLimit)
      .map((r) => r.id),
  });

  let alive = 0;
  let lastSeen: number | null = null;
  for (const w of s.workers.values()) {
    if (!w.queues.includes(job.queue)) continue;
    const seen = w.lastSeenAt.getTime();
    if (seen >= aliveSince) alive++;
    if (lastSeen === null || seen > lastSeen) lastSeen = seen;
  }
  // Job rows hold the worker id in lower case; the registry keeps it as the worker gave it.
  const holder =
    job.lockedByWorker === null
      ? undefined
      : [...s.workers.values()].find((w) => w.workerId.toLowerCase() === job.lockedByWorker);

  const ahead =
    job.status !== 'pending'
      ? []
      : [...s.jobs.values()]
          .filter(
            (a) =>
              a.status === 'pending' &&
              a.queue === job.queue &&
              a.actor === job.actor &&
              a.id !== job.id &&
              a.scheduledAt.getTime() <= now.getTime() &&
              dispatchOrder(a, job) < 0,
          )
          .sort(dispatchOrder);

  const last = s.attempts.filter((a) => a.jobId === job.id).at(-1);
  const config = s.actorConfig.get(job.actor);
  const queue = s.queues.get(job.queue);
  return {
    now,
    job: {
      id: job.id,
      actor: job.actor,
      queue: job.queue,
      status: job.status,
      priority: job.priority,
      identityKey: job.identityKey,
      createdAt: job.createdAt,
      scheduledAt: job.scheduledAt,
      startedAt: job.startedAt,
      finishedAt: job.finishedAt,
      lockedByWorker: job.lockedByWorker,
      lockExpiresAt: job.lockExpiresAt,
      cancelRequestedAt: job.cancelRequestedAt,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
    },
    actorConfig: config ? { maxConcurrent: config.maxConcurrent } : null,
    queue: {
      mode: queue?.mode ?? 'strict_fifo',
      maxConcurrent: queue?.maxConcurrent ?? null,
      configured: queue !== undefined,
    },
    workers: { alive, lastSeenAt: lastSeen === null ? null : new Date(lastSeen) },
    lockHolder: holder
      ? {
          workerId: holder.workerId,
          hostname: holder.hostname,
          lastSeenAt: holder.lastSeenAt,
          alive: holder.lastSeenAt.getTime() >= aliveSince,
        }
      : null,
    actorRunning: sample(running.filter((r) => r.actor === job.actor)),
    queueRunning: sample(running.filter((r) => r.queue === job.queue)),
    identityHolder:
      job.identityKey === null
        ? null
        : (running.find((r) => r.actor === job.actor && r.identityKey === job.identityKey && r.id !== job.id)
            ?.id ?? null),
    ahead: {
      count: Math.min(ahead.length, EXPLAIN_AHEAD_COUNT_CAP),
      jobIds: ahead.slice(0, request.listLimit).map((r) => r.id),
      countIsLowerBound: ahead.length > EXPLAIN_AHEAD_COUNT_CAP,
    },
    lastAttempt: last
      ? { outcome: last.outcome, errorMessage: last.errorMessage, finishedAt: last.finishedAt }
      : null,
    leaderAlive: s.leaderValid,
  };
}
