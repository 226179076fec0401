/**
 * The in-memory backend's enqueue gates and new rows, mirroring `postgres/sql/enqueue.sql`: the
 * same gate order and outcomes, decided on the backend's clock.
 */
import { MaxPendingExceededError, SingletonCollisionError } from '../../errors/backpressure-errors.js';
import { newJobRow } from '../new-job-row.js';
import { ACTIVE_STATUSES } from '../state-machine.js';
import type { EnqueueArgs, JobRow } from '../types.js';

const clone = <T>(v: T): T => structuredClone(v);

/** The job holding idempotency key `key` in `scope`, if any. */
export function findByKey(rows: Iterable<JobRow>, scope: string, key: string): JobRow | undefined {
  for (const r of rows) if (r.idempotencyKey === key && r.idempotencyScope === scope) return r;
  return undefined;
}

/** The row `a` inserts at `now`: pending, or scheduled when it runs later. */
export function buildRow(a: EnqueueArgs, now: Date): JobRow {
  const nowMs = now.getTime();
  const runAt = a.scheduledAt !== null ? a.scheduledAt.getTime() : nowMs + (a.scheduledDelayMs ?? 0);
  const due = runAt > nowMs;
  let deadline = a.scheduleToClose;
  if (a.scheduleToCloseIntervalMs !== null) {
    const byBudget = new Date(nowMs + a.scheduleToCloseIntervalMs);
    deadline = deadline === null || byBudget < deadline ? byBudget : deadline;
  }
  const row = newJobRow(a, {
    status: due ? 'scheduled' : 'pending',
    createdAt: now,
    scheduledAt: due ? new Date(runAt) : now,
    scheduleToClose: deadline,
  });
  // Stored rows must share nothing with the caller's objects.
  return { ...row, metadata: clone(a.metadata) };
}

/** An unfinished job of a singleton enqueue. */
export function isActiveSingleton(r: JobRow): boolean {
  return r.metadata.singleton === true && ACTIVE_STATUSES.has(r.status);
}

/**
 * Applies the enqueue gates in the reference's order (`uniqueFor`, singleton, `maxPending`,
 * idempotency) against `rows`; returns the row to return, or the new row to insert.
 */
export function gateAndBuild(
  a: EnqueueArgs,
  rows: JobRow[],
  now: Date,
): { existing: JobRow } | { insert: JobRow } {
  if (a.uniqueForMs !== null && a.identityKey !== null) {
    const since = now.getTime() - a.uniqueForMs;
    const hit = rows
      .filter(
        (r) =>
          r.actor === a.actor &&
          r.identityKey === a.identityKey &&
          a.uniqueStates.includes(r.status) &&
          r.createdAt.getTime() >= since,
      )
      .sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime())[0];
    if (hit) return { existing: hit };
  }
  if (a.singleton) {
    const blocking = rows.find((r) => r.actor === a.actor && ACTIVE_STATUSES.has(r.status));
    if (blocking) {
      const retryAfter = blocking.scheduleToClose
        ? Math.max(0, blocking.scheduleToClose.getTime() - now.getTime())
        : null;
      throw new SingletonCollisionError(a.actor, blocking.id, retryAfter);
    }
  }
  if (a.maxPending !== null) {
    const n = rows.filter(
      (r) => r.actor === a.actor && (r.status === 'pending' || r.status === 'scheduled'),
    ).length;
    if (n >= a.maxPending) throw new MaxPendingExceededError(a.actor, n, a.maxPending);
  }
  if (a.idempotencyKey !== null) {
    const dup = findByKey(rows, a.idempotencyScope, a.idempotencyKey);
    if (dup) return { existing: dup };
  }
  const row = buildRow(a, now);
  if (row.metadata.singleton === true && rows.some((r) => r.actor === row.actor && isActiveSingleton(r))) {
    throw new SingletonCollisionError(a.actor);
  }
  return { insert: row };
}
