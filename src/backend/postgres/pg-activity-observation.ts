/** The Postgres backend's overview activity (`Backend.observeActivity`): sql/fleet.sql's `observeActivity`. */
import {
  checkActivityObservationRequest,
  compareWorkers,
  type ActivityObservation,
  type ActivityObservationRequest,
  type FinishedCounts,
} from '../activity-observation.js';
import type { PgOps } from './pg-ops.js';

interface WorkerJson {
  worker_id: string;
  hostname: string;
  pid: number;
  label: string | null;
  queues: string[];
  max_concurrency: number;
  version: string | null;
  started_at: string;
  last_seen_at: string;
  age_seconds: number;
  alive: boolean;
}

interface ActivityRow {
  workers: WorkerJson[];
  finished: FinishedCounts[];
  counted: number;
}

/** Every worker and the window's finished jobs per queue, in one round trip. */
export async function observeActivity(
  ops: PgOps,
  request: ActivityObservationRequest,
): Promise<ActivityObservation> {
  checkActivityObservationRequest(request);
  const [row] = await ops.run<ActivityRow>('observeActivity', [
    request.aliveWithinMs,
    request.finishedWithinMs,
    request.maxCounted,
  ]);
  if (!row) return { workers: [], finished: [], finishedCapped: false };
  return {
    workers: row.workers
      .map((w) => ({
        workerId: w.worker_id,
        hostname: w.hostname,
        pid: Number(w.pid),
        label: w.label,
        queues: w.queues,
        maxConcurrency: Number(w.max_concurrency),
        version: w.version,
        startedAt: new Date(w.started_at),
        lastSeenAt: new Date(w.last_seen_at),
        lastSeenAgeSeconds: Number(w.age_seconds),
        alive: w.alive,
      }))
      .sort(compareWorkers),
    finished: row.finished.map((f) => ({
      queue: f.queue,
      succeeded: Number(f.succeeded),
      failed: Number(f.failed),
      other: Number(f.other),
    })),
    finishedCapped: Number(row.counted) >= request.maxCounted,
  };
}
