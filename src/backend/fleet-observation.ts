/**
 * What the fleet gauges read from the database (`Backend.observeFleet`): one snapshot of the
 * queues, the reservations and the leader, for metrics and operators. Counts are of the moment
 * of the read; nothing here is locked.
 */
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** One queue: its live jobs by status, and the workers serving it. */
export interface QueueObservation {
  queue: string;
  pending: number;
  scheduled: number;
  running: number;
  /** Seconds since the oldest pending job became due (its `scheduled_at`, else `created_at`); null when none is pending. */
  oldestPendingAgeSeconds: number | null;
  /** Workers whose `last_seen_at` is within the asked window and whose `queues` include this one. */
  workersAlive: number;
}

/** One reservation: keyed reservations are summed under their base name (bounded cardinality). */
export interface ReservationObservation {
  /** The reservation's name, or for keyed reservations the base name they were derived from. */
  name: string;
  keyed: boolean;
  /** Slot rows. */
  slots: number;
  /** Slots held under a lease that has not expired (database clock). */
  held: number;
}

/** A snapshot of the fleet (see {@link QueueObservation}, {@link ReservationObservation}). */
export interface FleetObservation {
  /**
   * Every queue that has a pending, scheduled or running job, a `queues` row, or an alive worker
   * serving it; sorted by name.
   */
  queues: QueueObservation[];
  /** Every reservation with slot rows; sorted by name. */
  reservations: ReservationObservation[];
  /** Leaders holding a lease that has not expired on the database clock: 1 when healthy, else 0. */
  leaders: number;
}

/** What to read. */
export interface FleetObservationRequest {
  /** A worker counts as alive when its `last_seen_at` is at most this old (ms). */
  aliveWithinMs: number;
  /**
   * Base names of keyed reservations (from the registered keyed refs): a keyed slot row named
   * `<base>:<key>` is summed under the longest base that prefixes it; keyed rows matching none are
   * summed under `'(keyed)'`.
   */
  keyedReservationBases: readonly string[];
}

/** The name keyed slot rows are summed under when no base of the request prefixes them. */
export const UNMATCHED_KEYED_RESERVATION = '(keyed)';

/**
 * Checks a request before either backend reads anything.
 * @throws InvalidArgumentError naming the field, the value and the rule
 */
export function checkFleetObservationRequest(request: FleetObservationRequest): void {
  if (request === null || typeof request !== 'object')
    throw new InvalidArgumentError('request', request, 'must be an object');
  const ms: unknown = request.aliveWithinMs;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
    throw new InvalidArgumentError('aliveWithinMs', ms, 'must be a finite number of milliseconds >= 0');
  const bases: unknown = request.keyedReservationBases;
  if (!Array.isArray(bases))
    throw new InvalidArgumentError('keyedReservationBases', bases, 'must be an array of base names');
  for (const [i, base] of bases.entries()) {
    // An empty base would prefix every name that starts with ':'; NUL cannot reach Postgres text.
    if (typeof base !== 'string' || base.length === 0 || base.includes('\u0000'))
      throw new InvalidArgumentError(
        `keyedReservationBases[${i}]`,
        base,
        'must be a non-empty string without NUL characters',
      );
  }
}

/**
 * The name a keyed slot row `name` is summed under: the longest of `bases` that prefixes it
 * followed by ':', else {@link UNMATCHED_KEYED_RESERVATION}. The in-memory backend's rule; the
 * Postgres statement (sql/fleet.sql) applies the same one.
 */
export function keyedReservationBase(name: string, bases: readonly string[]): string {
  let best: string | null = null;
  for (const base of bases)
    if (name.startsWith(`${base}:`) && (best === null || base.length > best.length)) best = base;
  return best ?? UNMATCHED_KEYED_RESERVATION;
}
