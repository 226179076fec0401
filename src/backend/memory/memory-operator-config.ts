import { structuralDrift } from '../actor-config-drift.js';
import { checkActorCapacity, checkQueueCap, checkQueueMode } from '../operator-config.js';
import { ACTIVE_STATUSES } from '../state-machine.js';
import type { ActorCapacityChange, ActorConfigRow, QueueConfigRow, QueueMode } from '../types.js';
import type { ActorConfigDrift, ActorConfigSyncOptions, ActorStructure } from '../worker-types.js';
import type { MemoryState } from './memory-state.js';

const clone = <T>(v: T): T => structuredClone(v);

/**
 * The `actor_config` rows of a starting worker's actors: a new actor gets a row with no stored
 * capacity; an existing one is compared on its structure (queue, metadata) and the drifts returned,
 * overwritten only with `force`. Capacity stays the operator's, as on Postgres (pg-operator-config.ts).
 */
export function syncActorConfig(
  s: MemoryState,
  actors: readonly ActorStructure[],
  options: ActorConfigSyncOptions,
): ActorConfigDrift[] {
  const drifts: ActorConfigDrift[] = [];
  const reregistered: string[] = [];
  for (const a of actors) {
    const metadata = JSON.parse(JSON.stringify(a.metadata)) as Record<string, unknown>;
    const row = s.actorConfig.get(a.actor);
    if (!row) {
      // As on Postgres: finished jobs mean it ran before, so its row was removed since.
      if ([...s.jobs.values()].some((j) => j.actor === a.actor && !ACTIVE_STATUSES.has(j.status)))
        reregistered.push(a.actor);
      s.actorConfig.set(a.actor, {
        actor: a.actor,
        queue: a.queue,
        maxConcurrent: null,
        maxPending: null,
        resultTtlMs: null,
        metadata,
        updatedAt: s.clock.now(),
      });
      continue;
    }
    const drifted = structuralDrift(a, row);
    drifts.push(...drifted);
    if (options.force && drifted.length > 0)
      Object.assign(row, { queue: a.queue, metadata, updatedAt: s.clock.now() });
  }
  if (reregistered.length > 0) options.reregistered?.(reregistered);
  return drifts;
}

/** The stored `actor_config` rows, by actor name (all, or those of `actors`). */
export function getActorConfigs(s: MemoryState, actors?: readonly string[]): ActorConfigRow[] {
  return [...s.actorConfig.values()]
    .filter((r) => !actors || actors.includes(r.actor))
    .sort((a, b) => (a.actor < b.actor ? -1 : 1))
    .map(clone);
}

/** Changes an actor's stored capacity; null when the actor has no row. */
export function setActorCapacity(
  s: MemoryState,
  actor: string,
  change: ActorCapacityChange,
): ActorConfigRow | null {
  const v = checkActorCapacity(actor, change);
  const row = s.actorConfig.get(actor);
  if (!row) return null;
  if (change.maxConcurrent !== undefined) row.maxConcurrent = v.maxConcurrent;
  if (change.maxPending !== undefined) row.maxPending = v.maxPending;
  if (change.resultTtlMs !== undefined) row.resultTtlMs = v.resultTtlMs;
  row.updatedAt = s.clock.now();
  return clone(row);
}

/** The `queues` rows, by name. */
export function listQueues(s: MemoryState): QueueConfigRow[] {
  return [...s.queues.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map(clone);
}

/** Sets a queue's dispatch mode (an upsert: nothing creates queue rows but configuration). */
export function setQueueMode(s: MemoryState, queue: string, mode: QueueMode): QueueConfigRow {
  checkQueueMode(queue, mode);
  s.queueModes.set(queue, mode);
  return upsertQueue(s, queue, { mode });
}

/** Sets or clears (null) a queue's fleet-wide cap. */
export function setQueueMaxConcurrent(
  s: MemoryState,
  queue: string,
  maxConcurrent: number | null,
): QueueConfigRow {
  return upsertQueue(s, queue, { maxConcurrent: checkQueueCap(queue, maxConcurrent) });
}

function upsertQueue(s: MemoryState, queue: string, change: Partial<QueueConfigRow>): QueueConfigRow {
  const row: QueueConfigRow = {
    ...(s.queues.get(queue) ?? { name: queue, mode: 'strict_fifo', maxConcurrent: null }),
    ...change,
    updatedAt: s.clock.now(),
  };
  s.queues.set(queue, row);
  return clone(row);
}
