import type { FleetObservation } from '../backend/fleet-observation.js';
import type { QueueConfigRow, QueueMode } from '../backend/types.js';

/**
 * A worker counts as alive in `taskq queues list` when it was seen this recently: the default of
 * the admin UI's `adminWorkerLivenessSeconds` (30 s), so the CLI and the UI agree.
 */
export const WORKER_ALIVE_WITHIN_MS = 30_000;

/** One queue as `taskq queues list` shows it: its configuration and its live jobs. */
export interface QueueView {
  /** Queue name. */
  name: string;
  /** Dispatch mode (`strict_fifo` when the queue has no `queues` row). */
  mode: QueueMode;
  /** Fleet-wide cap on running jobs, or null for none. */
  maxConcurrent: number | null;
  /** True when the queue has a `queues` row. */
  configured: boolean;
  /** Jobs waiting to be claimed. */
  pending: number;
  /** Jobs waiting for their time. */
  scheduled: number;
  /** Jobs running now. */
  running: number;
  /** Seconds since the oldest pending job became due, or null when none is pending. */
  oldestPendingAgeSeconds: number | null;
  /** Workers seen within {@link WORKER_ALIVE_WITHIN_MS} that serve the queue. */
  workersAlive: number;
}

/** Every queue with a `queues` row, a live job or an alive worker, sorted by name. */
export function queueViews(config: readonly QueueConfigRow[], fleet: FleetObservation): QueueView[] {
  const byName = new Map<string, QueueView>();
  const empty = (name: string): QueueView => ({
    name,
    mode: 'strict_fifo',
    maxConcurrent: null,
    configured: false,
    pending: 0,
    scheduled: 0,
    running: 0,
    oldestPendingAgeSeconds: null,
    workersAlive: 0,
  });
  for (const q of fleet.queues)
    byName.set(q.queue, {
      ...empty(q.queue),
      pending: q.pending,
      scheduled: q.scheduled,
      running: q.running,
      oldestPendingAgeSeconds: q.oldestPendingAgeSeconds,
      workersAlive: q.workersAlive,
    });
  for (const c of config) {
    const v = byName.get(c.name) ?? empty(c.name);
    byName.set(c.name, { ...v, mode: c.mode, maxConcurrent: c.maxConcurrent, configured: true });
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Table columns of `taskq queues list`. */
export const QUEUE_TABLE_HEADER = [
  'QUEUE',
  'MODE',
  'MAX CONCURRENT',
  'PENDING',
  'SCHEDULED',
  'RUNNING',
  'OLDEST PENDING',
  'WORKERS',
];

/** One `taskq queues list` row; `!` after the worker count marks pending jobs nothing serves. */
export function queueTableRow(v: QueueView): string[] {
  return [
    v.name,
    v.mode,
    v.maxConcurrent === null ? '-' : String(v.maxConcurrent),
    String(v.pending),
    String(v.scheduled),
    String(v.running),
    v.oldestPendingAgeSeconds === null ? '-' : `${Math.round(v.oldestPendingAgeSeconds)}s`,
    v.workersAlive === 0 && v.pending > 0 ? '0 (no alive worker!)' : String(v.workersAlive),
  ];
}
