/**
 * The Postgres backend's fleet snapshot (`Backend.observeFleet`): the one statement of
 * `sql/fleet.sql`, its JSON arrays mapped to the observation's fields.
 */
import {
  checkFleetObservationRequest,
  type FleetObservation,
  type FleetObservationRequest,
} from '../fleet-observation.js';
import type { PgOps } from './pg-ops.js';

interface QueueJson {
  queue: string;
  pending: number;
  scheduled: number;
  running: number;
  oldest_pending_age_seconds: number | null;
  workers_alive: number;
}

interface ReservationJson {
  name: string;
  keyed: boolean;
  slots: number;
  held: number;
}

/** One snapshot of the queues, the reservations and the live leaders, in one round trip. */
export async function observeFleet(ops: PgOps, request: FleetObservationRequest): Promise<FleetObservation> {
  checkFleetObservationRequest(request);
  const rows = await ops.run<{ queues: QueueJson[]; reservations: ReservationJson[]; leaders: number }>(
    'observeFleet',
    [request.aliveWithinMs, [...request.keyedReservationBases]],
  );
  const r = rows[0];
  return {
    queues: (r?.queues ?? []).map((q) => ({
      queue: q.queue,
      pending: Number(q.pending),
      scheduled: Number(q.scheduled),
      running: Number(q.running),
      oldestPendingAgeSeconds:
        q.oldest_pending_age_seconds === null ? null : Number(q.oldest_pending_age_seconds),
      workersAlive: Number(q.workers_alive),
    })),
    reservations: (r?.reservations ?? []).map((x) => ({
      name: x.name,
      keyed: x.keyed,
      slots: Number(x.slots),
      held: Number(x.held),
    })),
    leaders: Number(r?.leaders ?? 0),
  };
}
