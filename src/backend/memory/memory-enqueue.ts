/**
 * The in-memory backend's enqueue gates and new rows, mirroring `postgres/sql/enqueue.sql`: the
 * same gate order and outcomes, decided on the backend's clock.
 */
import { MaxPendingExceededError, SingletonCollisionError } from '../../errors/backpressure-errors.js';
import { newJobRow } from '../new-job-row.js';
import { ACTIVE_STATUSES } from '../state-machine.js';
import type { EnqueueArgs, JobRow } from '../types.js';
import {
  assertBatchKeysOneActor,
  hasUniqueGate,
  idempotencyKeyOf,
  keyConflict,
  resolveBatchGates,
  rowsOfOutcomes,
  uniqueKey,
} from '../enqueue-gates.js';
import type { MemoryTransaction } from './memory-transaction.js';

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
  const hit = uniqueHit(a, rows, now);
  if (hit) return { existing: hit };
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
    if (dup && dup.actor !== a.actor) throw keyConflict(a, dup.actor, dup.id);
    if (dup) return { existing: dup };
  }
  const row = buildRow(a, now);
  if (row.metadata.singleton === true && rows.some((r) => r.actor === row.actor && isActiveSingleton(r))) {
    throw new SingletonCollisionError(a.actor);
  }
  return { insert: row };
}

/** The newest job among `rows` that `a`'s `uniqueFor` gate matches at `now`, if it has one. */
export function uniqueHit(a: EnqueueArgs, rows: readonly JobRow[], now: Date): JobRow | undefined {
  if (a.uniqueForMs === null || a.identityKey === null) return undefined;
  const since = now.getTime() - a.uniqueForMs;
  let hit: JobRow | undefined;
  for (const r of rows) {
    if (
      r.actor === a.actor &&
      r.identityKey === a.identityKey &&
      a.uniqueStates.includes(r.status) &&
      r.createdAt.getTime() >= since &&
      (hit === undefined || r.createdAt.getTime() > hit.createdAt.getTime())
    )
      hit = r;
  }
  return hit;
}

/**
 * The in-memory stand-in for Postgres's gate locks (see `enqueue-gates.ts`): one FIFO queue per
 * gate name. An enqueue outside a transaction holds its locks for its check and insert; one inside
 * a {@link MemoryTransaction} until the transaction ends, so another caller's check waits for the
 * commit, as it waits for the advisory lock on Postgres. A transaction takes a lock it holds again
 * without waiting.
 */
export class MemoryGateLocks {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly held = new WeakMap<MemoryTransaction, Set<string>>();

  /** Waits for every lock of `names` (sorted), in order; returns the release of those it took. */
  async acquire(names: readonly string[], owner: MemoryTransaction | undefined): Promise<() => void> {
    if (owner && !owner.isOpen) throw new TypeError('transaction already ended');
    const mine = owner ? (this.held.get(owner) ?? new Set<string>()) : new Set<string>();
    if (owner) this.held.set(owner, mine);
    const releases: (() => void)[] = [];
    for (const name of names) {
      if (owner && mine.has(name)) continue;
      const before = this.tails.get(name) ?? Promise.resolve();
      let free!: () => void;
      const done = new Promise<void>((resolve) => (free = resolve));
      const tail = before.then(() => done);
      this.tails.set(name, tail);
      mine.add(name);
      releases.push(() => {
        mine.delete(name);
        free();
        if (this.tails.get(name) === tail) this.tails.delete(name);
      });
      await before;
    }
    const release = (): void => {
      for (const r of releases.splice(0)) r();
    };
    if (owner) {
      // The transaction may have ended while this waited: never leave its locks taken.
      if (!owner.isOpen) {
        release();
        throw new TypeError('transaction already ended');
      }
      owner.onEnd(release);
      return () => undefined;
    }
    return release;
  }
}

/**
 * A batch's gates against the `visible` rows (committed, plus the caller's transaction's own), as
 * `enqueueBatch` on Postgres resolves them (`resolveBatchGates`): throws before anything is
 * staged; returns each item's row and the new rows to store.
 */
export function gateBatch(
  list: readonly EnqueueArgs[],
  visible: JobRow[],
  now: Date,
): { rows: JobRow[]; staged: JobRow[] } {
  assertBatchKeysOneActor(list);
  const pending = new Map<string, number>();
  const limited = new Set(list.filter((a) => a.maxPending !== null).map((a) => a.actor));
  for (const r of visible)
    if (limited.has(r.actor) && (r.status === 'pending' || r.status === 'scheduled'))
      pending.set(r.actor, (pending.get(r.actor) ?? 0) + 1);
  const uniqueHits = new Map<string, JobRow>();
  const keyed = new Map<string, JobRow>();
  for (const a of list) {
    const hit = hasUniqueGate(a) ? uniqueHit(a, visible, now) : undefined;
    if (hit) uniqueHits.set(uniqueKey(a), hit);
    const stored =
      a.idempotencyKey !== null ? findByKey(visible, a.idempotencyScope, a.idempotencyKey) : undefined;
    if (stored) keyed.set(idempotencyKeyOf(a), stored);
  }
  const outcomes = resolveBatchGates(list, { pending, uniqueHits, keyed });
  const staged: JobRow[] = [];
  const inserted = new Map<number, JobRow>();
  outcomes.forEach((o, i) => {
    if (o.kind !== 'insert') return;
    const row = buildRow(list[i]!, now);
    if (
      row.metadata.singleton === true &&
      [...visible, ...staged].some((r) => r.actor === row.actor && isActiveSingleton(r))
    )
      throw new SingletonCollisionError(row.actor);
    staged.push(row);
    inserted.set(i, row);
  });
  return { rows: rowsOfOutcomes(outcomes, inserted), staged };
}
