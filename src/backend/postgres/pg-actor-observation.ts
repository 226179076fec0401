/** The Postgres backend's per-actor snapshot (`Backend.observeActors`): sql/fleet.sql's `observeActors`. */
import {
  checkActorObservationRequest,
  type ActorObservation,
  type ActorObservationRequest,
} from '../actor-observation.js';
import type { PgOps } from './pg-ops.js';

interface ActorObservationRow {
  actor: string;
  queue: string;
  pending: number;
  scheduled: number;
  running: number;
  workers_alive: number;
}

/** Every actor with a row, its live jobs and the alive workers of its queue, in one round trip. */
export async function observeActors(
  ops: PgOps,
  request: ActorObservationRequest,
): Promise<ActorObservation[]> {
  checkActorObservationRequest(request);
  const rows = await ops.run<ActorObservationRow>('observeActors', [request.aliveWithinMs]);
  return rows.map((r) => ({
    actor: r.actor,
    queue: r.queue,
    pending: Number(r.pending),
    scheduled: Number(r.scheduled),
    running: Number(r.running),
    workersAlive: Number(r.workers_alive),
  }));
}
