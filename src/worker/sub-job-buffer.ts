import { hasUniqueGate, idempotencyKeyOf, keyConflict, uniqueKey } from '../backend/enqueue-gates.js';
import type { EnqueueArgs, JobRow } from '../backend/types.js';
import type { JobHandle } from '../client/job-handle.js';
import { SingletonCollisionError } from '../errors/backpressure-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * Most children one attempt may buffer. They are written in the transaction of the parent's
 * success, which holds their gate locks until it commits: a fan-out larger than this belongs in
 * autonomous writes (or `enqueueBatchStreaming` from a client).
 */
export const MAX_BUFFERED_SUB_JOBS = 10_000;

/**
 * The children an attempt's handler enqueued with `ctx.jobs` (buffered mode), with their handles,
 * waiting for the parent's success. What the gates would refuse whatever the store holds is refused
 * when the child is added, not at the commit: more children of an actor than their `maxPending`,
 * two children of a singleton actor, one idempotency key for two actors. The store's side (jobs
 * already pending, a running singleton, a stored key) is checked at the commit.
 */
export class SubJobBuffer {
  /** The children, in the order they were enqueued. */
  readonly args: EnqueueArgs[] = [];
  /** Their handles, by position. */
  readonly handles: JobHandle<unknown>[] = [];
  /** `uniqueFor` gates already taken by an earlier child (a later one resolves to it). */
  private readonly uniqueLeaders = new Set<string>();
  /** Children counted against `maxPending`, per actor. */
  private readonly limited = new Map<string, number>();
  /** The actor of each idempotency key in the buffer. */
  private readonly keyActors = new Map<string, string>();
  /** The child holding each singleton actor's slot. */
  private readonly singletons = new Map<string, string>();

  /**
   * Adds `list` (one call's children) and their handles, or throws and adds none of them.
   * @throws InvalidArgumentError (too many children, or more than an actor's `maxPending`),
   *   SingletonCollisionError, IdempotencyKeyConflict
   */
  add(list: readonly EnqueueArgs[], handles: readonly JobHandle<unknown>[], field: string): void {
    const total = this.args.length + list.length;
    if (total > MAX_BUFFERED_SUB_JOBS)
      throw new InvalidArgumentError(
        field,
        list.length,
        `would buffer ${total} sub-jobs in this attempt, more than ${MAX_BUFFERED_SUB_JOBS}: write a fan-out that large with { autonomous: true }`,
      );
    const leaders = new Set<string>();
    const counts = new Map<string, number>();
    const keys = new Map<string, string>();
    const singles = new Map<string, string>();
    // The order of resolveBatchGates (enqueue-gates.ts), against an empty store.
    for (const a of list) {
      if (hasUniqueGate(a)) {
        const k = uniqueKey(a);
        if (this.uniqueLeaders.has(k) || leaders.has(k)) continue;
        leaders.add(k);
      }
      if (a.maxPending !== null) {
        const mine = (counts.get(a.actor) ?? 0) + 1;
        const n = (this.limited.get(a.actor) ?? 0) + mine;
        if (n > a.maxPending)
          throw new InvalidArgumentError(
            field,
            n,
            `would make ${n} buffered children of actor ${JSON.stringify(a.actor)}, more than its maxPending of ${a.maxPending}: they could never be written with the parent's success`,
          );
        counts.set(a.actor, mine);
      }
      if (a.idempotencyKey !== null) {
        const k = idempotencyKeyOf(a);
        const holder = this.keyActors.get(k) ?? keys.get(k);
        if (holder !== undefined) {
          if (holder !== a.actor) throw keyConflict(a, holder, null);
          continue;
        }
        keys.set(k, a.actor);
      }
      if (a.singleton) {
        const holder = this.singletons.get(a.actor) ?? singles.get(a.actor);
        if (holder !== undefined) throw new SingletonCollisionError(a.actor, holder);
        singles.set(a.actor, a.id);
      }
    }
    for (const k of leaders) this.uniqueLeaders.add(k);
    for (const [actor, n] of counts) this.limited.set(actor, (this.limited.get(actor) ?? 0) + n);
    for (const [k, actor] of keys) this.keyActors.set(k, actor);
    for (const [actor, id] of singles) this.singletons.set(actor, id);
    this.args.push(...list);
    this.handles.push(...handles);
  }

  /** After the commit: each handle observes the row its child resolved to (an existing job on a key hit). */
  committed(rows: readonly JobRow[]): void {
    for (let i = 0; i < rows.length && i < this.handles.length; i++) this.handles[i]!.observe(rows[i]!);
  }
}
