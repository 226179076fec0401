/**
 * Structural drift between an actor's declaration in code and its stored `actor_config` row: the
 * one rule both backends apply when a worker syncs its actors at start (and refuses to start on),
 * and the rule the admin UI's actors page shows, so the page never disagrees with the worker.
 */
import { isDeepStrictEqual } from 'node:util';

import type { ActorConfigDrift, ActorStructure } from './worker-types.js';

/**
 * The structural differences (queue, metadata) between `declared` and the `stored` row, in that
 * order; empty when they agree. Metadata is compared as JSON stores it (a key whose value is
 * `undefined` is absent), since that is what the row can hold.
 */
export function structuralDrift(
  declared: ActorStructure,
  stored: { readonly queue: string; readonly metadata: Record<string, unknown> },
): ActorConfigDrift[] {
  const drifts: ActorConfigDrift[] = [];
  if (stored.queue !== declared.queue)
    drifts.push({ actor: declared.actor, field: 'queue', registered: declared.queue, stored: stored.queue });
  if (!isDeepStrictEqual(stored.metadata, JSON.parse(JSON.stringify(declared.metadata))))
    drifts.push({
      actor: declared.actor,
      field: 'metadata',
      registered: declared.metadata,
      stored: stored.metadata,
    });
  return drifts;
}
