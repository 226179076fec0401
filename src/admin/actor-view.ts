/**
 * What the actors page shows per actor, computed from the stored row, the live counts and — when
 * the host gave them — the code's declarations. Drift uses the worker's own rule
 * (`structuralDrift`), so the page flags exactly what would stop a worker from starting.
 */
import { structuralDrift } from '../backend/actor-config-drift.js';
import type { ActorObservation } from '../backend/actor-observation.js';
import type { ActorConfigRow } from '../backend/types.js';
import type { ActorConfigDrift } from '../backend/worker-types.js';
import type { ActorDefinition } from '../core/actor.js';

/** The operator-owned capacity fields, as `ActorConfigRow` and `ActorDefinition` name them. */
export const CAPACITY_FIELDS = ['maxConcurrent', 'maxPending', 'resultTtlMs'] as const;

/** One capacity field of `ActorConfigRow`. */
export type CapacityField = (typeof CAPACITY_FIELDS)[number];

/** Where a capacity value in force comes from. */
export type CapacitySource = 'operator' | 'code' | 'none' | 'unknown';

/** One capacity value: the stored one, the code's literal and which one applies. */
export interface CapacityView {
  /** The field. */
  field: CapacityField;
  /** The operator's stored value (null: none stored). */
  stored: number | null;
  /** The code's literal, null when the code declares none, undefined when the code is not known. */
  declared: number | null | undefined;
  /**
   * `operator` when a stored value applies (it wins over the code), `code` when the code's literal
   * applies, `none` when neither sets it, `unknown` when nothing is stored and the code is not known.
   */
  source: CapacitySource;
  /** True when a stored value applies and the code declares a different one. */
  overridden: boolean;
}

/** One row of the actors page. */
export interface ActorView {
  /** The stored row. */
  row: ActorConfigRow;
  /** Live jobs and alive workers (zero counts when the row appeared after the observation). */
  pending: number;
  /** Jobs waiting for their time. */
  scheduled: number;
  /** Jobs running now. */
  running: number;
  /** Alive workers serving the actor's queue. */
  workersAlive: number;
  /** The capacity values, in {@link CAPACITY_FIELDS} order. */
  capacity: CapacityView[];
  /** Structural drift (queue, metadata) against the code; null when the code is not known. */
  drift: ActorConfigDrift[] | null;
  /** True when the code is known and does not declare this actor. */
  undeclared: boolean;
}

/** The actors page's model: every stored row, and the declared actors that have none yet. */
export interface ActorsModel {
  /** One view per stored row, by actor name. */
  actors: ActorView[];
  /** Declared actors without a row (no worker running them has started yet); empty without declarations. */
  unregistered: ActorDefinition[];
  /** Whether the code's declarations were given (drift can be judged). */
  codeKnown: boolean;
}

function capacityOf(row: ActorConfigRow, declared: ActorDefinition | undefined, field: CapacityField) {
  const stored = row[field];
  const literal = declared === undefined ? undefined : declared[field];
  const source: CapacitySource =
    stored !== null ? 'operator' : literal === undefined ? 'unknown' : literal === null ? 'none' : 'code';
  return {
    field,
    stored,
    declared: literal,
    source,
    overridden: stored !== null && literal !== undefined && literal !== stored,
  };
}

/** Builds the page's model; `declared` is null when the host gave no declarations. */
export function actorsModel(
  rows: readonly ActorConfigRow[],
  observations: readonly ActorObservation[],
  declared: ReadonlyMap<string, ActorDefinition> | null,
): ActorsModel {
  const seen = new Map(observations.map((o) => [o.actor, o]));
  const actors = rows.map((row): ActorView => {
    const o = seen.get(row.actor);
    const code = declared?.get(row.actor);
    return {
      row,
      pending: o?.pending ?? 0,
      scheduled: o?.scheduled ?? 0,
      running: o?.running ?? 0,
      workersAlive: o?.workersAlive ?? 0,
      capacity: CAPACITY_FIELDS.map((f) => capacityOf(row, code, f)),
      drift:
        code === undefined
          ? null
          : structuralDrift({ actor: code.name, queue: code.queue, metadata: { ...code.metadata } }, row),
      undeclared: declared !== null && code === undefined,
    };
  });
  const stored = new Set(rows.map((r) => r.actor));
  const unregistered = declared === null ? [] : [...declared.values()].filter((d) => !stored.has(d.name));
  return { actors, unregistered, codeKnown: declared !== null };
}
