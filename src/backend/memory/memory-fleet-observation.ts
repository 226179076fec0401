/**
 * The in-memory backend's fleet snapshot (`Backend.observeFleet`), mirroring
 * `postgres/sql/fleet.sql` on the backend's injected clock.
 */
import type { Clock } from '../../core/clock.js';
import type { ReservationSummary } from '../../ratelimit/stores/rate-limit-store.js';
import {
  checkFleetObservationRequest,
  keyedReservationBase,
  type FleetObservation,
  type FleetObservationRequest,
  type QueueObservation,
  type ReservationObservation,
} from '../fleet-observation.js';
import type { JobRow } from '../types.js';

/** What the snapshot reads: the backend's state at the moment of the call. */
export interface FleetState {
  readonly clock: Clock;
  readonly jobs: Iterable<JobRow>;
  /** Names of the `queues` rows. */
  readonly queueRows: Iterable<string>;
  readonly workers: Iterable<{ readonly queues: readonly string[]; readonly lastSeenAt: Date }>;
  /** Every reservation with slots, held counted on the same clock (`listReservations`). */
  readonly reservations: readonly ReservationSummary[];
  /** Whether the leader lease is held and unexpired. */
  readonly leaderValid: boolean;
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** One snapshot of the queues, the reservations and the live leaders. */
export function observeFleet(s: FleetState, request: FleetObservationRequest): FleetObservation {
  checkFleetObservationRequest(request);
  const now = s.clock.now().getTime();
  const queues = new Map<string, QueueObservation & { oldestDueAt: number | null }>();
  const queue = (name: string) => {
    let q = queues.get(name);
    if (!q) {
      q = {
        queue: name,
        pending: 0,
        scheduled: 0,
        running: 0,
        oldestPendingAgeSeconds: null,
        workersAlive: 0,
        oldestDueAt: null,
      };
      queues.set(name, q);
    }
    return q;
  };
  for (const j of s.jobs) {
    if (j.status === 'pending') {
      const q = queue(j.queue);
      q.pending++;
      // Due since scheduled_at, what dispatch orders by (the creation time when not delayed).
      const due = j.scheduledAt.getTime();
      if (q.oldestDueAt === null || due < q.oldestDueAt) q.oldestDueAt = due;
    } else if (j.status === 'scheduled') queue(j.queue).scheduled++;
    else if (j.status === 'running') queue(j.queue).running++;
  }
  for (const name of s.queueRows) queue(name);
  const aliveSince = now - request.aliveWithinMs;
  for (const w of s.workers) {
    if (w.lastSeenAt.getTime() < aliveSince) continue;
    // A worker serving a queue twice in its list counts once.
    for (const name of new Set(w.queues)) queue(name).workersAlive++;
  }

  const reservations = new Map<string, ReservationObservation>();
  for (const r of s.reservations) {
    const name = r.keyed ? keyedReservationBase(r.name, request.keyedReservationBases) : r.name;
    const key = `${r.keyed ? 'k' : 's'}:${name}`;
    const sum = reservations.get(key) ?? { name, keyed: r.keyed, slots: 0, held: 0 };
    sum.slots += r.slots;
    sum.held += r.held;
    reservations.set(key, sum);
  }

  return {
    queues: [...queues.values()]
      .sort((a, b) => byName(a.queue, b.queue))
      .map(({ oldestDueAt, ...q }) => ({
        ...q,
        oldestPendingAgeSeconds: oldestDueAt === null ? null : Math.max(0, now - oldestDueAt) / 1000,
      })),
    reservations: [...reservations.values()].sort(
      (a, b) => byName(a.name, b.name) || Number(a.keyed) - Number(b.keyed),
    ),
    leaders: s.leaderValid ? 1 : 0,
  };
}
