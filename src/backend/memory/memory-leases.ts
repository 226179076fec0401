import type { JobRow } from '../types.js';
import { UNSTARTED_CANCEL_MESSAGE } from './memory-maintenance.js';
import type { MemoryState, StatusChange } from './memory-state.js';

/**
 * Renews the leases of the jobs `workerId` still runs (the heartbeat), storing each job's
 * heartbeat details when given; returns the ids renewed.
 */
export function heartbeatJobs(
  s: MemoryState,
  workerId: string,
  jobIds: readonly string[],
  leaseMs: number,
  details?: ReadonlyMap<string, string>,
): string[] {
  const now = s.clock.now();
  const owner = workerId.toLowerCase();
  const renewed: string[] = [];
  for (const id of jobIds) {
    const r = s.jobs.get(id);
    if (r && r.status === 'running' && r.lockedByWorker === owner) {
      r.lockExpiresAt = new Date(now.getTime() + leaseMs);
      r.lastHeartbeatAt = now;
      const d = details?.get(id);
      if (d !== undefined) r.heartbeatDetails = JSON.parse(d) as unknown;
      renewed.push(id);
    }
  }
  return renewed;
}

/**
 * A stopping worker's unstarted jobs back to pending, their attempt given back (`drained`); a job
 * whose cancel was requested meanwhile ends cancelled instead, as the reclaim sweep ends it.
 * Returns how many jobs it moved.
 */
export function repend(s: MemoryState, workerId: string, jobIds: readonly string[]): number {
  let n = 0;
  let wake = false;
  const cancelled: string[] = [];
  const changes: StatusChange[] = [];
  const now = s.clock.now();
  const owner = workerId.toLowerCase();
  for (const id of jobIds) {
    const r = s.jobs.get(id);
    if (!r || r.status !== 'running' || r.lockedByWorker !== owner) continue;
    const cancel = r.cancelRequestedAt !== null;
    Object.assign(r, {
      status: cancel ? 'cancelled' : 'pending',
      attempt: Math.max(r.attempt - 1, 0),
      lockedByWorker: null,
      lockExpiresAt: null,
      startedAt: null,
      scheduledAt: cancel ? r.scheduledAt : now,
      finishedAt: cancel ? now : null,
    } satisfies Partial<JobRow>);
    if (cancel)
      Object.assign(r, {
        errorClass: 'CancelRequested',
        errorMessage: UNSTARTED_CANCEL_MESSAGE,
        errorTraceback: null,
      } satisfies Partial<JobRow>);
    s.event(r.id, 'state_change', {
      from_state: 'running',
      to_state: r.status,
      reason: 'drained',
      worker_id: workerId,
    });
    changes.push({ job: r, from: 'running' });
    if (cancel) cancelled.push(r.id);
    else wake = true;
    n++;
  }
  s.statusChanged(changes);
  if (wake) s.emitWake();
  if (cancelled.length > 0) s.emitDone(cancelled);
  return n;
}
