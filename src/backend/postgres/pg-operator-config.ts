/**
 * Operator configuration on Postgres: `actor_config` (structure synced by workers, capacity owned by
 * operators) and `queues` (dispatch mode and fleet-wide cap). Values are checked by the rules of
 * `operator-config.ts` before anything is written.
 */
import { structuralDrift } from '../actor-config-drift.js';
import { checkActorCapacity, checkQueueCap, checkQueueMode } from '../operator-config.js';
import type { ActorCapacityChange, ActorConfigRow, QueueConfigRow, QueueMode } from '../types.js';
import type { ActorConfigDrift, ActorConfigSyncOptions, ActorStructure } from '../worker-types.js';
import type { PgOps } from './pg-ops.js';
import { toActorConfigRow, toQueueConfigRow } from './row-mapper.js';

/** Creates missing `actor_config` rows and reports (with `force`, overwrites) structural drift. */
export async function syncActorConfig(
  ops: PgOps,
  actors: readonly ActorStructure[],
  options: ActorConfigSyncOptions,
): Promise<ActorConfigDrift[]> {
  if (actors.length === 0) return [];
  const reregistered = await ops.run<{ actor: string }>('insertActorConfigs', [
    actors.map((a) => a.actor),
    actors.map((a) => a.queue),
    actors.map((a) => JSON.stringify(a.metadata)),
  ]);
  if (reregistered.length > 0) options.reregistered?.(reregistered.map((r) => r.actor));
  const stored = new Map(
    (
      await getActorConfigs(
        ops,
        actors.map((a) => a.actor),
      )
    ).map((r) => [r.actor, r]),
  );
  const drifts: ActorConfigDrift[] = [];
  for (const a of actors) {
    const row = stored.get(a.actor);
    if (!row) continue;
    const drifted = structuralDrift(a, row);
    drifts.push(...drifted);
    if (options.force && drifted.length > 0) {
      await ops.run('updateActorConfigStructure', [a.actor, a.queue, JSON.stringify(a.metadata)]);
    }
  }
  return drifts;
}

/** Stored actor configuration (all actors, or the given ones). */
export async function getActorConfigs(ops: PgOps, actors?: readonly string[]): Promise<ActorConfigRow[]> {
  return (await ops.run('getActorConfigs', [actors ?? null])).map(toActorConfigRow);
}

/** Changes an actor's operator-owned capacity; null when it has no row. */
export async function setActorCapacity(
  ops: PgOps,
  actor: string,
  change: ActorCapacityChange,
): Promise<ActorConfigRow | null> {
  const v = checkActorCapacity(actor, change);
  const rows = await ops.run('setActorCapacity', [
    actor,
    v.maxConcurrent,
    v.maxPending,
    v.resultTtlMs,
    change.maxConcurrent !== undefined,
    change.maxPending !== undefined,
    change.resultTtlMs !== undefined,
  ]);
  return rows[0] ? toActorConfigRow(rows[0]) : null;
}

/** Every configured queue. */
export async function listQueues(ops: PgOps): Promise<QueueConfigRow[]> {
  return (await ops.run('listQueues', [])).map(toQueueConfigRow);
}

/** Sets a queue's dispatch mode, creating its row. */
export async function setQueueMode(ops: PgOps, queue: string, mode: QueueMode): Promise<QueueConfigRow> {
  checkQueueMode(queue, mode);
  return toQueueConfigRow((await ops.run('upsertQueueMode', [queue, mode]))[0]!);
}

/** Sets or clears a queue's fleet-wide cap, creating its row. */
export async function setQueueMaxConcurrent(
  ops: PgOps,
  queue: string,
  maxConcurrent: number | null,
): Promise<QueueConfigRow> {
  const cap = checkQueueCap(queue, maxConcurrent);
  return toQueueConfigRow((await ops.run('upsertQueueMaxConcurrent', [queue, cap]))[0]!);
}
