/**
 * What the admin UI's overview reads besides the fleet gauges (`Backend.observeActivity`): every
 * registered worker with its age on the database clock, and the jobs that finished within a recent
 * window, per queue and outcome. The count is bounded (the newest `maxCounted` finished jobs), so
 * its cost never follows the throughput of a busy fleet past that bound.
 */
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** One row of the `workers` table, as the overview shows it. */
export interface WorkerObservation {
  /** The worker's id. */
  workerId: string;
  /** Its host name. */
  hostname: string;
  /** Its process id. */
  pid: number;
  /** Its label, if it set one. */
  label: string | null;
  /** The queues it serves. */
  queues: string[];
  /** Its `maxConcurrency`. */
  maxConcurrency: number;
  /** The TaskQ version it runs, when it recorded one. */
  version: string | null;
  /** When it registered. */
  startedAt: Date;
  /** When it was last seen (its last heartbeat). */
  lastSeenAt: Date;
  /** Seconds since `lastSeenAt`, on the database clock (never negative). */
  lastSeenAgeSeconds: number;
  /** Seen within the asked liveness window. */
  alive: boolean;
}

/** Jobs of one queue that finished within the window, by outcome. */
export interface FinishedCounts {
  /** The queue. */
  queue: string;
  /** Finished `succeeded`. */
  succeeded: number;
  /** Finished `failed`. */
  failed: number;
  /** Finished `cancelled`, `crashed` or `abandoned`. */
  other: number;
}

/** What {@link ActivityObservationRequest} asked for, as read. */
export interface ActivityObservation {
  /** Every registered worker, alive ones first, then by host name and pid. */
  workers: WorkerObservation[];
  /** Per queue with a finished job in the window, sorted by queue. */
  finished: FinishedCounts[];
  /**
   * True when the window held more than `maxCounted` finished jobs: the counts are those of the
   * newest `maxCounted` (say "at least").
   */
  finishedCapped: boolean;
}

/** What to read. */
export interface ActivityObservationRequest {
  /** A worker counts as alive when its `last_seen_at` is at most this old (ms). */
  aliveWithinMs: number;
  /** The recent window: jobs whose `finished_at` is at most this old (ms). */
  finishedWithinMs: number;
  /** Count at most this many finished jobs (1 to 1,000,000). */
  maxCounted: number;
}

/**
 * Checks a request before either backend reads anything.
 * @throws InvalidArgumentError naming the field, the value and the rule
 */
export function checkActivityObservationRequest(request: ActivityObservationRequest): void {
  if (request === null || typeof request !== 'object')
    throw new InvalidArgumentError('request', request, 'must be an object');
  for (const field of ['aliveWithinMs', 'finishedWithinMs'] as const) {
    const ms: unknown = request[field];
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      throw new InvalidArgumentError(field, ms, 'must be a finite number of milliseconds >= 0');
  }
  const cap: unknown = request.maxCounted;
  if (typeof cap !== 'number' || !Number.isInteger(cap) || cap < 1 || cap > 1_000_000)
    throw new InvalidArgumentError('maxCounted', cap, 'must be an integer from 1 to 1000000');
}

/** Alive workers first, then by host name and pid (both backends sort the same way). */
export function compareWorkers(a: WorkerObservation, b: WorkerObservation): number {
  if (a.alive !== b.alive) return a.alive ? -1 : 1;
  if (a.hostname !== b.hostname) return a.hostname < b.hostname ? -1 : 1;
  if (a.pid !== b.pid) return a.pid - b.pid;
  return a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0;
}
