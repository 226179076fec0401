/**
 * The in-memory backend's per-actor snapshot (`Backend.observeActors`), mirroring the Postgres
 * statement (sql/fleet.sql, `observeActors`) on the backend's injected clock.
 */
import type { Clock } from '../../core/clock.js';
import {
  checkActorObservationRequest,
  type ActorObservation,
  type ActorObservationRequest,
} from '../actor-observation.js';
import type { ActorConfigRow, JobRow } from '../types.js';

/** What the snapshot reads: the backend's state at the moment of the call. */
export interface ActorObservationState {
  readonly clock: Clock;
  readonly jobs: Iterable<JobRow>;
  readonly actorConfig: Iterable<ActorConfigRow>;
  readonly workers: Iterable<{ readonly queues: readonly string[]; readonly lastSeenAt: Date }>;
}

/** Every actor with a row, by name: its live jobs and the alive workers serving its queue. */
export function observeActors(
  s: ActorObservationState,
  request: ActorObservationRequest,
): ActorObservation[] {
  checkActorObservationRequest(request);
  const out = new Map<string, ActorObservation>();
  for (const row of s.actorConfig)
    out.set(row.actor, {
      actor: row.actor,
      queue: row.queue,
      pending: 0,
      scheduled: 0,
      running: 0,
      workersAlive: 0,
    });
  for (const j of s.jobs) {
    const a = out.get(j.actor);
    if (!a) continue;
    if (j.status === 'pending') a.pending++;
    else if (j.status === 'scheduled') a.scheduled++;
    else if (j.status === 'running') a.running++;
  }
  const aliveSince = s.clock.now().getTime() - request.aliveWithinMs;
  const alive = new Map<string, number>();
  for (const w of s.workers) {
    if (w.lastSeenAt.getTime() < aliveSince) continue;
    // A worker serving a queue twice in its list counts once.
    for (const q of new Set(w.queues)) alive.set(q, (alive.get(q) ?? 0) + 1);
  }
  for (const a of out.values()) a.workersAlive = alive.get(a.queue) ?? 0;
  return [...out.values()].sort((a, b) => (a.actor < b.actor ? -1 : a.actor > b.actor ? 1 : 0));
}
