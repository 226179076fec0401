/**
 * `tq.actors`: the stored, operator-owned configuration of actors (`actor_config`), the
 * reference's `ActorsClient`. It wraps the backend's actor-config operations — the same ones the
 * `taskq actor-config` CLI runs — and adds `deregister`.
 */
import type { Backend } from '../backend/backend.js';
import { checkActorName } from '../core/text-checks.js';
import { toMsOrNull, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { ActorConfigRow, DeregisterOptions, DeregisterResult } from '../backend/types.js';

/** A capacity change: a value sets it, `null` clears it (the code's literal applies), absent leaves it. */
export interface ActorCapacityUpdate {
  /** Fleet-wide cap on running jobs of the actor (0 drains it). */
  maxConcurrent?: number | null;
  /** Backpressure bound on pending + scheduled jobs. */
  maxPending?: number | null;
  /** How long results are kept (`Duration`: ms or a string such as `'1h'`). */
  resultTtl?: Duration | null;
}

const CAPACITY_KEYS = ['maxConcurrent', 'maxPending', 'resultTtl'];

/** Actor configuration: list, get, set capacity, deregister. */
export class ActorsClient {
  /**
   * @param backend where the rows live (both backends implement every method)
   * @param onChange called after a write, so the caller can drop cached capacity values
   */
  constructor(
    private readonly backend: Backend,
    private readonly onChange: () => void = () => undefined,
  ) {}

  /** Every stored actor configuration, ordered by actor name. */
  async list(): Promise<ActorConfigRow[]> {
    return this.backend.getActorConfigs();
  }

  /** One actor's stored configuration, or null when it has no row. */
  async get(actor: string): Promise<ActorConfigRow | null> {
    checkActorName(actor, 'actor');
    return (await this.backend.getActorConfigs([actor]))[0] ?? null;
  }

  /** Changes an actor's capacity values; returns the new row, or null when the actor has no row. */
  async setCapacity(actor: string, change: ActorCapacityUpdate): Promise<ActorConfigRow | null> {
    checkActorName(actor, 'actor');
    if (change === null || typeof change !== 'object')
      throw new InvalidArgumentError('change', change, 'must be an object');
    for (const key of Object.keys(change))
      if (!CAPACITY_KEYS.includes(key))
        throw new InvalidArgumentError(
          `change.${key}`,
          (change as Record<string, unknown>)[key],
          `is not a capacity field (${CAPACITY_KEYS.join(', ')})`,
        );
    const row = await this.backend.setActorCapacity(actor, {
      maxConcurrent: change.maxConcurrent,
      maxPending: change.maxPending,
      ...(change.resultTtl === undefined
        ? {}
        : { resultTtlMs: toMsOrNull(change.resultTtl, 'resultTtl', 'nonNegative') }),
    });
    this.onChange();
    return row;
  }

  /**
   * Removes the actor's `actor_config` row, safety-checked, in one transaction ordered with the
   * actor's enqueues (see docs/actor-config.md). Refusals write nothing.
   * @throws ActorNotFoundError (no row), ActorHasActiveJobsError (pending, scheduled or running
   *   jobs; with `force` running ones only), ActorHasEnabledSchedulesError (without `force`),
   *   InvalidArgumentError (a bad actor name or option)
   */
  async deregister(actor: string, options: DeregisterOptions = {}): Promise<DeregisterResult> {
    const result = await this.backend.deregisterActor(actor, options);
    this.onChange();
    return result;
  }
}
