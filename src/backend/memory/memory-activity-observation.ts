/**
 * The in-memory backend's overview activity (`Backend.observeActivity`), mirroring the Postgres
 * statement (sql/fleet.sql, `observeActivity`) on the backend's injected clock.
 */
import type { Clock } from '../../core/clock.js';
import {
  checkActivityObservationRequest,
  compareWorkers,
  type ActivityObservation,
  type ActivityObservationRequest,
  type FinishedCounts,
} from '../activity-observation.js';
import type { JobRow } from '../types.js';
import type { WorkerRegistration } from '../worker-types.js';

/** What the snapshot reads: the backend's state at the moment of the call. */
export interface ActivityObservationState {
  readonly clock: Clock;
  readonly jobs: Iterable<JobRow>;
  readonly workers: Iterable<WorkerRegistration & { readonly startedAt: Date; readonly lastSeenAt: Date }>;
}

/** Every worker and the newest finished jobs of the window per queue. */
export function observeActivity(
  s: ActivityObservationState,
  request: ActivityObservationRequest,
): ActivityObservation {
  checkActivityObservationRequest(request);
  const now = s.clock.now().getTime();
  const workers = [...s.workers]
    .map((w) => ({
      workerId: w.workerId,
      hostname: w.hostname,
      pid: w.pid,
      label: w.label,
      queues: [...w.queues],
      maxConcurrency: w.maxConcurrency,
      version: w.version,
      startedAt: new Date(w.startedAt),
      lastSeenAt: new Date(w.lastSeenAt),
      lastSeenAgeSeconds: Math.max(0, (now - w.lastSeenAt.getTime()) / 1000),
      alive: w.lastSeenAt.getTime() >= now - request.aliveWithinMs,
    }))
    .sort(compareWorkers);
  const since = now - request.finishedWithinMs;
  const recent = [...s.jobs]
    .filter((j) => j.finishedAt !== null && j.finishedAt.getTime() >= since)
    .sort((a, b) => {
      const d = (b.finishedAt as Date).getTime() - (a.finishedAt as Date).getTime();
      return d !== 0 ? d : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
    })
    .slice(0, request.maxCounted);
  const byQueue = new Map<string, FinishedCounts>();
  for (const j of recent) {
    const f = byQueue.get(j.queue) ?? { queue: j.queue, succeeded: 0, failed: 0, other: 0 };
    if (j.status === 'succeeded') f.succeeded++;
    else if (j.status === 'failed') f.failed++;
    else f.other++;
    byQueue.set(j.queue, f);
  }
  return {
    workers,
    finished: [...byQueue.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0)),
    finishedCapped: recent.length >= request.maxCounted,
  };
}
