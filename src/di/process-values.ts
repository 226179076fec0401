/**
 * Process-scoped values: one per provider registration per process, shared by every Worker of the
 * process that is given the same `Providers`. Reference-counted: made when the first such Worker
 * starts, torn down when the last one stops (a Worker started later makes a new one).
 */
import type { Logger } from '../obs/logger.js';
import type { ProviderEntry } from './providers.js';
import { Teardowns } from './teardowns.js';

interface Shared {
  value: Promise<unknown>;
  refs: number;
  teardowns: Teardowns;
}

const shared = new Map<ProviderEntry, Shared>();

/**
 * The process's value for `entry`, made by `make` when no Worker holds it yet; each call holds one
 * reference until {@link releaseProcessValue}. A failed make holds nothing (the next call retries).
 */
export function acquireProcessValue(entry: ProviderEntry, make: () => unknown): Promise<unknown> {
  const held = shared.get(entry);
  if (held) {
    held.refs++;
    return held.value;
  }
  const teardowns = new Teardowns();
  const record: Shared = {
    refs: 1,
    teardowns,
    value: Promise.resolve()
      .then(make)
      .then((v) => {
        teardowns.add(entry, v);
        return v;
      }),
  };
  shared.set(entry, record);
  record.value.catch(() => {
    if (shared.get(entry) === record) shared.delete(entry);
  });
  return record.value;
}

/** Drops one reference; the last one tears the value down. */
export async function releaseProcessValue(entry: ProviderEntry, log: Logger): Promise<void> {
  const held = shared.get(entry);
  if (!held) return;
  held.refs--;
  if (held.refs > 0) return;
  shared.delete(entry);
  await held.teardowns.runAll(log, 'process');
}
