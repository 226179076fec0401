/**
 * The in-memory backend's cancel requests, admin retries, cancel escalation, abandonment and
 * progress writes, mirroring `postgres/sql/cancel.sql` and `pollCancelFlags`,
 * `writeCancelEscalation`, `markAbandoned` and `flushProgress` in `postgres/sql/worker.sql`.
 */
import { SingletonCollisionError } from '../../errors/backpressure-errors.js';
import type { CancelWhereCounts } from '../backend.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import { ACTIVE_STATUSES, RETRYABLE_TERMINAL_STATUSES } from '../state-machine.js';
import type { BulkCancelResult, BulkRetryResult, JobRow, JobStatus } from '../types.js';
import { isActiveSingleton } from './memory-enqueue.js';
import { matchesFilter } from './memory-listing.js';
import type { CancelCause, CancelFlag, ProgressSnapshot } from '../worker-types.js';
import type { MemoryState, StatusChange } from './memory-state.js';

const owned = (j: JobRow | undefined, workerId: string): j is JobRow =>
  j !== undefined && j.status === 'running' && j.lockedByWorker === workerId.toLowerCase();

export function pollCancelFlags(s: MemoryState, workerId: string): CancelFlag[] {
  return [...s.jobs.values()]
    .filter((j) => owned(j, workerId) && j.cancelRequestedAt !== null)
    .map((j) => ({ jobId: j.id, phase: j.cancelPhase }));
}

export function writeCancelEscalation(
  s: MemoryState,
  jobId: string,
  workerId: string,
  cause: CancelCause = 'cancel',
): boolean {
  const j = s.jobs.get(jobId);
  if (!owned(j, workerId)) return false;
  const fromPhase = j.cancelPhase;
  if (!(fromPhase === 1 || (cause === 'shutdown' && fromPhase === 0))) return false;
  j.cancelPhase = 2;
  s.event(j.id, 'state_change', {
    from_state: 'running',
    to_state: 'running',
    reason: cause === 'shutdown' ? 'shutdown_escalated' : 'cancel_escalated',
    from_phase: fromPhase,
    to_phase: 2,
    worker_id: workerId.toLowerCase(),
  });
  return true;
}

export function markAbandoned(
  s: MemoryState,
  jobId: string,
  workerId: string,
  progress?: ProgressSnapshot | null,
  cause: CancelCause = 'cancel',
): boolean {
  const j = s.jobs.get(jobId);
  if (!owned(j, workerId) || j.cancelPhase !== 2) return false;
  const shutdown = cause === 'shutdown';
  const now = s.clock.now();
  s.attempts().push({
    jobId: j.id,
    attempt: j.attempt,
    workerId: workerId.toLowerCase(),
    startedAt: j.startedAt,
    finishedAt: now,
    durationMs: null,
    outcome: 'abandoned',
    errorClass: 'Abandoned',
    errorMessage: shutdown
      ? "the handler ignored the worker's shutdown"
      : 'the handler ignored the cancel request',
    errorTraceback: null,
  });
  Object.assign(j, {
    status: 'abandoned',
    finishedAt: now,
    lockedByWorker: null,
    lockExpiresAt: null,
    errorClass: 'Abandoned',
    errorMessage: shutdown
      ? 'the handler did not stop when the worker shut down, through the cancellation and cleanup graces'
      : 'the handler did not stop after the cancel request, through the cancellation and cleanup graces',
  } satisfies Partial<JobRow>);
  if (progress && progress.seq > j.progressSeq) {
    j.progressSeq = progress.seq;
    j.progressState = structuredClone(progress.state);
  }
  s.event(j.id, 'state_change', {
    from_state: 'running',
    to_state: 'abandoned',
    reason: shutdown ? 'shutdown_abandoned' : 'cancel_abandoned',
    worker_id: workerId.toLowerCase(),
    attempt: j.attempt,
  });
  s.statusChanged([{ job: j, from: 'running' }]);
  s.emitDone([j.id]);
  return true;
}

export function flushProgress(
  s: MemoryState,
  workerId: string,
  items: readonly { jobId: string; seq: number; state: Record<string, unknown> }[],
): number {
  const flushed: string[] = [];
  for (const item of items) {
    const j = s.jobs.get(item.jobId);
    if (!owned(j, workerId) || j.progressSeq >= item.seq) continue;
    j.progressSeq = item.seq;
    j.progressState = structuredClone(item.state);
    flushed.push(j.id);
  }
  if (flushed.length > 0) s.emitProgress?.(flushed);
  return flushed.length;
}

/** Mirrors `writeCancelRequest` in `postgres/sql/cancel.sql`. */
export function writeCancelRequest(s: MemoryState, jobId: string, reason: string | null): boolean {
  const r = s.jobs.get(jobId.toLowerCase());
  if (!r) return false;
  const changes: StatusChange[] = [];
  const done = requestCancel(s, r, reason, changes);
  s.statusChanged(changes);
  return done;
}

/** One job's cancel request; a direct cancel is added to `changes` (the caller reports them). */
function requestCancel(s: MemoryState, r: JobRow, reason: string | null, changes: StatusChange[]): boolean {
  const now = s.clock.now();
  if (r.status === 'pending' || r.status === 'scheduled') {
    const from: JobStatus = r.status;
    Object.assign(r, {
      status: 'cancelled',
      finishedAt: now,
      cancelRequestedAt: now,
      errorClass: 'CancelRequested',
      errorMessage: reason ?? 'cancelled by request',
    } satisfies Partial<JobRow>);
    s.event(r.id, 'state_change', {
      from_state: from,
      to_state: 'cancelled',
      reason: 'cancel_requested',
      message: reason,
    });
    changes.push({ job: r, from });
    return true;
  }
  if (r.status === 'running' && r.cancelRequestedAt === null) {
    r.cancelRequestedAt = now;
    r.cancelPhase = 1;
    s.event(r.id, 'cancel_request', { phase: 1, message: reason, worker_id: r.lockedByWorker });
    const owner = r.lockedByWorker;
    if (owner) s.emitCancel(r.id, owner);
    return true;
  }
  return false;
}

/** Mirrors `cancelWhere` in `postgres/sql/cancel.sql`. */
export function cancelWhere(
  s: MemoryState,
  filter: NormalizedJobFilter,
  reason: string | null,
): BulkCancelResult {
  const cancelledIds: string[] = [];
  const cancelRequestedIds: string[] = [];
  const changes: StatusChange[] = [];
  for (const r of [...s.jobs.values()]) {
    if (!ACTIVE_STATUSES.has(r.status) || !matchesFilter(r, filter)) continue;
    const wasRunning = r.status === 'running';
    const alreadyRequested = r.cancelRequestedAt !== null;
    if (wasRunning && alreadyRequested) continue;
    requestCancel(s, r, reason, changes);
    (wasRunning ? cancelRequestedIds : cancelledIds).push(r.id);
  }
  s.statusChanged(changes);
  if (cancelledIds.length > 0) s.emitDone(cancelledIds);
  return {
    cancelledDirectly: cancelledIds.length,
    cancelRequested: cancelRequestedIds.length,
    cancelledIds,
    cancelRequestedIds,
    totalAffected: cancelledIds.length + cancelRequestedIds.length,
  };
}

/** Mirrors `previewCancelWhere` in `postgres/sql/cancel.sql`: what `cancelWhere` would change now. */
export function previewCancelWhere(s: MemoryState, filter: NormalizedJobFilter): CancelWhereCounts {
  let cancelledDirectly = 0;
  let cancelRequested = 0;
  for (const r of s.jobs.values()) {
    if (!ACTIVE_STATUSES.has(r.status) || !matchesFilter(r, filter)) continue;
    if (r.status !== 'running') cancelledDirectly++;
    else if (r.cancelRequestedAt === null) cancelRequested++;
  }
  return { cancelledDirectly, cancelRequested };
}

/** Mirrors `retryJob` in `postgres/sql/cancel.sql`: an admin retry with a fresh attempt budget. */
export function retryJob(s: MemoryState, jobId: string): boolean {
  const r = s.jobs.get(jobId.toLowerCase());
  if (!r || !RETRYABLE_TERMINAL_STATUSES.has(r.status)) return false;
  if (
    r.metadata.singleton === true &&
    [...s.jobs.values()].some((o) => o.id !== r.id && o.actor === r.actor && isActiveSingleton(o))
  ) {
    throw new SingletonCollisionError(r.actor);
  }
  s.statusChanged([resetForRetry(s, r)]);
  s.emitWake();
  return true;
}

/**
 * Mirrors `retryWhere`: every retryable job matching the filter, all or nothing. A singleton job
 * that would make a second active job of its actor (another one active, or two retried) refuses
 * the call before anything changes, as the singleton index fails the statement.
 */
export function retryWhere(s: MemoryState, filter: NormalizedJobFilter): BulkRetryResult {
  const targets = [...s.jobs.values()].filter(
    (r) => RETRYABLE_TERMINAL_STATUSES.has(r.status) && matchesFilter(r, filter),
  );
  const singletonActors = new Set<string>();
  for (const r of targets) {
    if (r.metadata.singleton !== true) continue;
    if (
      singletonActors.has(r.actor) ||
      [...s.jobs.values()].some((o) => o.actor === r.actor && isActiveSingleton(o))
    )
      throw new SingletonCollisionError(r.actor);
    singletonActors.add(r.actor);
  }
  const changes = targets.map((r) => resetForRetry(s, r));
  s.statusChanged(changes);
  if (targets.length > 0) s.emitWake();
  const retriedIds = targets.map((r) => r.id).sort();
  return { retried: retriedIds.length, retriedIds };
}

/** The dry run of {@link retryWhere}: how many jobs it would retry now. */
export function previewRetryWhere(s: MemoryState, filter: NormalizedJobFilter): number {
  let n = 0;
  for (const r of s.jobs.values())
    if (RETRYABLE_TERMINAL_STATUSES.has(r.status) && matchesFilter(r, filter)) n++;
  return n;
}

/** A retryable job back to pending with a fresh attempt budget, its error, result and cancel state cleared. */
function resetForRetry(s: MemoryState, r: JobRow): StatusChange {
  const from = r.status;
  Object.assign(r, {
    status: 'pending',
    attempt: 0,
    scheduledAt: s.clock.now(),
    startedAt: null,
    finishedAt: null,
    lastHeartbeatAt: null,
    lockedByWorker: null,
    lockExpiresAt: null,
    cancelRequestedAt: null,
    cancelPhase: 0,
    errorClass: null,
    errorMessage: null,
    errorTraceback: null,
    result: null,
    resultSizeBytes: null,
    resultExpiresAt: null,
  } satisfies Partial<JobRow>);
  s.event(r.id, 'state_change', { from_state: from, to_state: 'pending', reason: 'admin_retry' });
  return { job: r, from };
}
