/**
 * What makes `maxPending` and `uniqueFor` exact under concurrency, shared by both backends: which
 * gate locks an enqueue takes, and how a batch resolves its gates once it holds them.
 *
 * A gate is a check followed by an insert; two callers that both check before either inserts both
 * pass. So an enqueue that has a gate to check first takes a lock per gate — one per actor for
 * `maxPending`, one per `(actor, identityKey)` for `uniqueFor` — and holds it until its insert is
 * committed: the next caller's check then sees that insert. Enqueues with no such gate take no
 * lock, and two different gates never wait on each other. On Postgres the locks are
 * transaction-scoped advisory locks (see `pg-enqueue-gates.ts`); in memory, promise queues.
 */
import { IdempotencyKeyConflict } from '../errors/idempotency-key-conflict.js';
import { MaxPendingExceededError } from '../errors/backpressure-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { EnqueueArgs, JobRow } from './types.js';

/** True when `a` has a `uniqueFor` gate to check: the actor sets `uniqueFor` and the job has an identity key. */
export function hasUniqueGate(a: EnqueueArgs): boolean {
  return a.uniqueForMs !== null && a.identityKey !== null;
}

/** True when enqueueing `a` must hold a gate lock (it has a `maxPending` or a `uniqueFor` gate). */
export function needsGateLock(a: EnqueueArgs): boolean {
  return a.maxPending !== null || hasUniqueGate(a);
}

/**
 * The gate locks the enqueue of `list` takes, by name, each once, sorted: every caller takes
 * its locks in this one order, so two batches sharing gates queue up instead of deadlocking.
 * (Postgres sorts the hashed keys again; the names only have to be the same for the same gate.)
 */
export function gateLockNames(list: readonly EnqueueArgs[]): string[] {
  const names = new Set<string>();
  for (const a of list) {
    // The actor's length makes each name unambiguous (text cannot hold a NUL to separate them).
    if (a.maxPending !== null) names.add(`maxPending:${a.actor.length}:${a.actor}`);
    if (hasUniqueGate(a)) names.add(`uniqueFor:${a.actor.length}:${a.actor}:${a.identityKey}`);
  }
  return [...names].sort();
}

/** The `(actor, identityKey)` of a `uniqueFor` gate, as one map key. */
export const uniqueKey = (a: EnqueueArgs): string => `${a.actor}\u0000${a.identityKey}`;
/** The `(scope, key)` of an idempotency key, as one map key. */
export const idempotencyKeyOf = (a: EnqueueArgs): string => `${a.idempotencyScope}\u0000${a.idempotencyKey}`;

/** What the store holds that a batch's gates look at, read while holding the batch's gate locks. */
export interface BatchGateState {
  /** Pending + scheduled jobs per actor that has a `maxPending` (absent: 0). */
  pending: ReadonlyMap<string, number>;
  /** The newest job each `uniqueFor` gate matches (by {@link uniqueKey}), if any. */
  uniqueHits: ReadonlyMap<string, JobRow>;
  /** The stored job holding each idempotency key of the batch (by {@link idempotencyKeyOf}), if any. */
  keyed: ReadonlyMap<string, JobRow>;
}

/** How one batch item resolves. */
export type ItemOutcome =
  /** An existing job: a `uniqueFor` hit or a stored idempotency key of the same actor. */
  | { kind: 'existing'; row: JobRow }
  /** The job an earlier item of the batch resolves to (same `uniqueFor` gate or idempotency key). */
  | { kind: 'sameAs'; index: number }
  /** Inserted (the backend may still find its key taken by a job committed meanwhile). */
  | { kind: 'insert' };

/**
 * Throws {@link IdempotencyKeyConflict} when two items of the batch share an idempotency key but
 * not their actor. Checked before anything is read or written.
 */
export function assertBatchKeysOneActor(list: readonly EnqueueArgs[]): void {
  const first = new Map<string, EnqueueArgs>();
  for (const a of list) {
    if (a.idempotencyKey === null) continue;
    const k = idempotencyKeyOf(a);
    const holder = first.get(k);
    if (!holder) first.set(k, a);
    else if (holder.actor !== a.actor) throw keyConflict(a, holder.actor, null);
  }
}

/** The conflict of `a`'s key with a job (or earlier item, `jobId` null) of `existingActor`. */
export function keyConflict(
  a: EnqueueArgs,
  existingActor: string,
  jobId: string | null,
): IdempotencyKeyConflict {
  return new IdempotencyKeyConflict({
    idempotencyKey: a.idempotencyKey ?? '',
    idempotencyScope: a.idempotencyScope,
    existingActor,
    requestedActor: a.actor,
    existingJobId: jobId,
  });
}

/**
 * Resolves a batch's gates in the reference's order, per item: `uniqueFor` (a stored hit, or an
 * earlier item of the batch with the same gate, is returned and the item skips every later
 * check), then `maxPending` for the whole batch (`existing + items > limit` refuses the whole batch:
 * all or nothing), then idempotency keys (a stored key of another actor refuses the whole batch;
 * of the same actor, or an earlier item's key, is returned). Throws before anything is written.
 */
export function resolveBatchGates(list: readonly EnqueueArgs[], state: BatchGateState): ItemOutcome[] {
  const out: ItemOutcome[] = [];
  const uniqueLeader = new Map<string, number>();
  const adding = new Map<string, number[]>();
  for (let i = 0; i < list.length; i++) {
    const a = list[i]!;
    if (hasUniqueGate(a)) {
      const k = uniqueKey(a);
      const hit = state.uniqueHits.get(k);
      if (hit) {
        out.push({ kind: 'existing', row: hit });
        continue;
      }
      const leader = uniqueLeader.get(k);
      if (leader !== undefined) {
        out.push({ kind: 'sameAs', index: leader });
        continue;
      }
      uniqueLeader.set(k, i);
    }
    if (a.maxPending !== null) {
      const limits = adding.get(a.actor);
      if (limits) limits.push(a.maxPending);
      else adding.set(a.actor, [a.maxPending]);
    }
    out.push({ kind: 'insert' });
  }
  // Each item's own limit holds for the items of its actor up to and including it. Items of one
  // actor usually share one limit (then this is `existing + items > limit`); sub-jobs enqueued with
  // per-call `maxPending` overrides may not.
  for (const [actor, limits] of adding) {
    const existing = state.pending.get(actor) ?? 0;
    for (let k = 0; k < limits.length; k++)
      if (existing + k + 1 > limits[k]!) throw new MaxPendingExceededError(actor, existing, limits[k]!);
  }
  const keyLeader = new Map<string, number>();
  for (let i = 0; i < list.length; i++) {
    const a = list[i]!;
    if (out[i]!.kind !== 'insert' || a.idempotencyKey === null) continue;
    const k = idempotencyKeyOf(a);
    const stored = state.keyed.get(k);
    if (stored) {
      if (stored.actor !== a.actor) throw keyConflict(a, stored.actor, stored.id);
      out[i] = { kind: 'existing', row: stored };
      continue;
    }
    const leader = keyLeader.get(k);
    if (leader !== undefined) out[i] = { kind: 'sameAs', index: leader };
    else keyLeader.set(k, i);
  }
  return out;
}

/** The row each item returns, from its outcome and the rows of the inserted items. */
export function rowsOfOutcomes(
  outcomes: readonly ItemOutcome[],
  inserted: ReadonlyMap<number, JobRow>,
): JobRow[] {
  const rows: JobRow[] = [];
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    const row = o.kind === 'existing' ? o.row : o.kind === 'sameAs' ? rows[o.index] : inserted.get(i);
    if (!row) throw new Error(`enqueueBatch: item ${i} was neither inserted nor matched an existing job`);
    rows.push(row);
  }
  return rows;
}

/**
 * `enqueueBatchFast` cannot apply `uniqueFor`: a hit returns the existing job, and that path returns
 * no handles (nor can COPY skip a row). Throws {@link InvalidArgumentError} for the first item with
 * a `uniqueFor` gate, before anything is written.
 */
export function assertNoUniqueGate(list: readonly EnqueueArgs[]): void {
  const i = list.findIndex(hasUniqueGate);
  if (i < 0) return;
  throw new InvalidArgumentError(
    `items[${i}].options.identityKey`,
    list[i]!.identityKey,
    `is a uniqueFor key (actor ${JSON.stringify(list[i]!.actor)} sets uniqueFor), which enqueueBatchFast cannot apply: it returns no handle to an existing job; use enqueueBatch`,
  );
}

/**
 * Throws {@link MaxPendingExceededError} when `list` would take an actor past its `maxPending`
 * (`existing + items > limit`, as `enqueueBatch`); `pending` holds the actors' current counts.
 */
export function assertWithinMaxPending(
  list: readonly EnqueueArgs[],
  pending: ReadonlyMap<string, number>,
): void {
  resolveBatchGates(list, { pending, uniqueHits: new Map(), keyed: new Map() });
}
