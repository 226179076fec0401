/**
 * The in-memory backend's cancel escalation, abandonment and progress writes, mirroring
 * `pollCancelFlags`, `writeCancelEscalation`, `markAbandoned` and `flushProgress` in
 * `postgres/sql/worker.sql`.
 */
import type { JobRow } from '../types.js';
import type { CancelCause, CancelFlag, ProgressSnapshot } from '../worker-types.js';
import type { MemoryState } from './memory-state.js';

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
