/**
 * The in-memory backend's maintenance sweeps, mirroring the Postgres statements in
 * `postgres/sql/maintenance.sql` (same selection rules, same outcomes, same history rows).
 */
import type { JobRow } from '../types.js';
import type { EventRow } from '../types.js';
import type { ReclaimResult, RetentionPolicy, StrandedActor } from '../worker-types.js';
import type { MemoryState, StatusChange } from './memory-state.js';

export type { MemoryState as MemoryMaintenanceState } from './memory-state.js';

const CRASH_MESSAGE =
  'the worker holding the job stopped renewing its lease (it crashed or lost its connection)';
/** The error message of a job whose cancel was requested before its handler started (as in `repend`). */
export const UNSTARTED_CANCEL_MESSAGE = 'cancelled by request before its handler started';

export function reclaimExpiredLocks(
  s: MemoryState,
  cancelGraceMs: number,
  cleanupGraceMs: number,
  limit: number,
): ReclaimResult {
  const now = s.clock.now().getTime();
  const expired = [...s.jobs.values()]
    .filter(
      (j) =>
        j.status === 'running' &&
        j.lockExpiresAt !== null &&
        j.lockExpiresAt.getTime() < now &&
        (j.cancelRequestedAt === null ||
          j.lockExpiresAt.getTime() + cancelGraceMs + cleanupGraceMs + 60_000 < now),
    )
    .sort((a, b) => a.lockExpiresAt!.getTime() - b.lockExpiresAt!.getTime())
    .slice(0, limit);
  const done: string[] = [];
  const changes: StatusChange[] = [];
  let retried = 0;
  for (const j of expired) {
    // The order of the statement's CASE: a requested cancel wins; an unstarted job gets its attempt
    // back; a started one is retried while attempts remain, else crashed.
    const started = j.startedAt !== null;
    const retry = j.retryKind === 'indefinite' || (j.retryKind === 'transient' && j.attempt < j.maxAttempts);
    const to = j.cancelRequestedAt !== null ? 'cancelled' : !started || retry ? 'pending' : 'crashed';
    const again = to === 'pending';
    const worker = j.lockedByWorker;
    const attempt = j.attempt;
    if (started)
      s.attempts().push({
        jobId: j.id,
        attempt,
        workerId: worker,
        startedAt: j.startedAt,
        finishedAt: new Date(now),
        durationMs: null,
        outcome: 'crashed',
        errorClass: 'WorkerCrashed',
        errorMessage: 'the worker holding the job stopped renewing its lease',
        errorTraceback: null,
      });
    Object.assign(j, {
      status: to,
      attempt: started ? attempt : Math.max(attempt - 1, 0),
      lockedByWorker: null,
      lockExpiresAt: null,
      finishedAt: again ? null : new Date(now),
      scheduledAt: again ? new Date(now) : j.scheduledAt,
      cancelRequestedAt: again ? null : j.cancelRequestedAt,
      cancelPhase: again ? 0 : j.cancelPhase,
    } satisfies Partial<JobRow>);
    if (started)
      Object.assign(j, {
        errorClass: 'WorkerCrashed',
        errorMessage: CRASH_MESSAGE,
        errorTraceback: null,
      } satisfies Partial<JobRow>);
    else if (to === 'cancelled')
      Object.assign(j, {
        errorClass: 'CancelRequested',
        errorMessage: UNSTARTED_CANCEL_MESSAGE,
        errorTraceback: null,
      } satisfies Partial<JobRow>);
    s.event(j.id, 'state_change', {
      from_state: 'running',
      to_state: to,
      reason: 'lock_expired',
      worker_id: worker,
      attempt,
      ...(started ? {} : { handler_started: false }),
    });
    changes.push({ job: j, from: 'running' });
    if (again) retried++;
    else done.push(j.id);
  }
  s.statusChanged(changes);
  if (expired.length > 0) s.emitWake();
  if (done.length > 0) s.emitDone(done);
  return { reclaimed: expired.length, retried };
}

export function deadlineSweep(s: MemoryState, limit: number): number {
  const now = s.clock.now();
  const due = [...s.jobs.values()]
    .filter(
      (j) =>
        (j.status === 'pending' || j.status === 'scheduled') &&
        j.scheduleToClose !== null &&
        j.scheduleToClose < now,
    )
    .sort((a, b) => a.scheduleToClose!.getTime() - b.scheduleToClose!.getTime())
    .slice(0, limit);
  const changes: StatusChange[] = [];
  for (const j of due) {
    const from = j.status;
    Object.assign(j, {
      status: 'failed',
      finishedAt: now,
      errorClass: 'DeadlineExceeded',
      errorMessage: 'the job did not finish before its deadline (schedule_to_close)',
      errorTraceback: null,
    } satisfies Partial<JobRow>);
    s.event(j.id, 'state_change', { from_state: from, to_state: 'failed', reason: 'deadline_exceeded' });
    changes.push({ job: j, from });
  }
  s.statusChanged(changes);
  if (due.length > 0) s.emitDone(due.map((j) => j.id));
  return due.length;
}

export function sweepExpiredResults(s: MemoryState, limit: number): number {
  const now = s.clock.now();
  let n = 0;
  for (const j of s.jobs.values()) {
    if (n >= limit) break;
    if (j.result !== null && j.resultExpiresAt !== null && j.resultExpiresAt < now) {
      j.result = null;
      j.resultSizeBytes = null;
      n++;
    }
  }
  return n;
}

export function cleanupStaleWorkers(s: MemoryState, olderThanMs: number): number {
  const cutoff = s.clock.now().getTime() - olderThanMs;
  let n = 0;
  for (const [id, w] of s.workers) {
    if (w.lastSeenAt.getTime() < cutoff) {
      s.workers.delete(id);
      n++;
    }
  }
  return n;
}

export function strandedActors(s: MemoryState): StrandedActor[] {
  const counts = new Map<string, number>();
  for (const j of s.jobs.values()) {
    if ((j.status === 'pending' || j.status === 'scheduled') && !s.actorConfig.has(j.actor))
      counts.set(j.actor, (counts.get(j.actor) ?? 0) + 1);
  }
  return [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([actor, jobs]) => ({ actor, jobs }));
}

function retentionOf(j: JobRow, r: RetentionPolicy): number | null {
  switch (j.status) {
    case 'succeeded':
      return r.succeededMs;
    case 'failed':
      return r.failedMs;
    case 'cancelled':
      return r.cancelledMs;
    case 'crashed':
    case 'abandoned':
      return r.abandonedMs;
    default:
      return null;
  }
}

export function pruneJobs(
  s: MemoryState,
  r: RetentionPolicy,
  batchSize: number,
): { archived: number; attempts: number } {
  const now = s.clock.now().getTime();
  const doomed = [...s.jobs.values()]
    .filter((j) => {
      const keep = retentionOf(j, r);
      return keep !== null && j.finishedAt !== null && j.finishedAt.getTime() < now - keep;
    })
    .sort((a, b) => a.finishedAt!.getTime() - b.finishedAt!.getTime())
    .slice(0, batchSize);
  const ids = new Set(doomed.map((j) => j.id));
  const moved = s.attempts().filter((a) => ids.has(a.jobId));
  for (const j of doomed) {
    s.jobs.delete(j.id);
    s.archive.set(j.id, { ...j, archivedAt: new Date(now), expireAt: new Date(now + r.archiveMs) });
  }
  s.archivedAttempts.push(...moved);
  s.setAttempts(s.attempts().filter((a) => !ids.has(a.jobId)));
  s.setEvents(s.events().filter((e) => !ids.has(e.jobId)));
  return { archived: doomed.length, attempts: moved.length };
}

export function expireArchive(s: MemoryState, batchSize: number): number {
  const now = s.clock.now();
  const doomed = [...s.archive.values()]
    .filter((a) => a.expireAt < now)
    .sort((a, b) => a.expireAt.getTime() - b.expireAt.getTime())
    .slice(0, batchSize)
    .map((a) => a.id);
  const ids = new Set(doomed);
  for (const id of doomed) s.archive.delete(id);
  const kept = s.archivedAttempts.filter((a) => !ids.has(a.jobId));
  s.archivedAttempts.splice(0, s.archivedAttempts.length, ...kept);
  return doomed.length;
}

export function pollReclaimEvents(
  s: MemoryState,
  afterId: string,
  limit: number,
  visibilityDelayMs: number,
): EventRow[] {
  const after = BigInt(afterId);
  const cutoff = s.clock.now().getTime() - visibilityDelayMs;
  return s
    .events()
    .filter(
      (e) =>
        BigInt(e.eventId) > after &&
        e.kind === 'state_change' &&
        e.detail.reason === 'lock_expired' &&
        e.occurredAt.getTime() < cutoff,
    )
    .slice(0, limit)
    .map((e) => structuredClone(e));
}
