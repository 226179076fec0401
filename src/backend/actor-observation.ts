/**
 * What the admin UI's actors page reads per actor (`Backend.observeActors`): the live jobs of each
 * actor with an `actor_config` row and the alive workers serving its queue. A snapshot: nothing is
 * locked, counts are of the moment of the read.
 */
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** One actor's live jobs and the workers that could run them. */
export interface ActorObservation {
  /** The actor's name. */
  actor: string;
  /** The queue its `actor_config` row names (its home queue). */
  queue: string;
  /** Its jobs waiting to be claimed, in any queue. */
  pending: number;
  /** Its jobs waiting for their time, in any queue. */
  scheduled: number;
  /** Its jobs running now. */
  running: number;
  /**
   * Workers seen within the asked window whose `queues` include the actor's home queue. Workers
   * record the queues they serve, not their actors, so this is what "an alive worker serves it"
   * can mean from the database (as in `tq.explain`).
   */
  workersAlive: number;
}

/** What to read. */
export interface ActorObservationRequest {
  /** A worker counts as alive when its `last_seen_at` is at most this old (ms). */
  aliveWithinMs: number;
}

/**
 * Checks a request before either backend reads anything.
 * @throws InvalidArgumentError naming the field, the value and the rule
 */
export function checkActorObservationRequest(request: ActorObservationRequest): void {
  if (request === null || typeof request !== 'object')
    throw new InvalidArgumentError('request', request, 'must be an object');
  const ms: unknown = request.aliveWithinMs;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
    throw new InvalidArgumentError('aliveWithinMs', ms, 'must be a finite number of milliseconds >= 0');
}
