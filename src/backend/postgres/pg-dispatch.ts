import type { Executor } from '../../db/driver.js';
import type { ClaimedJob } from '../types.js';
import type { DispatchRequest } from '../worker-types.js';
import type { PgOps } from './pg-ops.js';
import { toClaimedJob } from './row-mapper.js';

type Raw = Record<string, unknown>;

/**
 * After the lean claim had to hand over to the full one (a stored concurrency limit, a round-robin
 * queue, a pending job with a fairness key, identity keys at the head of the queue), claims skip it
 * for this long: whatever made it hand over is likely still there, and each hand-over costs a
 * statement.
 */
export const LEAN_DISPATCH_PAUSE_MS = 5_000;

/** Most times the full claim is retried after losing an identity-key race to another producer. */
const IDENTITY_RACE_ATTEMPTS = 5;

/**
 * Runs claims. Two statements implement one contract: `dispatchLean`, a small plan for the common
 * case (strict FIFO, no concurrency limit, no fairness or identity keys), and `dispatch`, which handles every
 * case. The lean one checks its own preconditions in the same snapshot and, when one fails, claims
 * nothing and says so; the full one then runs. A request whose actors declare `maxConcurrent` goes
 * straight to the full one.
 */
export class Dispatcher {
  /** `performance.now()` time before which the lean claim is not tried. */
  private leanPausedUntil = 0;
  /** How long a hand-over keeps claims off the lean statement ({@link LEAN_DISPATCH_PAUSE_MS}). */
  leanPauseMs = LEAN_DISPATCH_PAUSE_MS;
  /** Claims the lean statement handed over to the full one (observability and tests). */
  handovers = 0;

  constructor(
    private readonly ops: PgOps,
    private readonly ex: Executor,
  ) {}

  async dispatch(req: DispatchRequest): Promise<ClaimedJob[]> {
    if (req.limit <= 0 || req.actors.length === 0 || req.queues.length === 0) return [];
    if (this.leanApplies(req)) {
      const rows = await this.ops.run('dispatchLean', leanParams(req, req.limit), this.ex);
      if (rows[0]?._fallback !== true) {
        const jobs = rows.filter((r) => r.id !== null).map(toClaimedJob);
        // The lean claim ran only because no limit, key or fairness rule applies: a short claim
        // took every job it could see (the others are held by concurrent claims, which take them).
        if (jobs.length < req.limit) req.onDrained?.();
        return jobs;
      }
      this.handovers++;
      this.leanPausedUntil = performance.now() + this.leanPauseMs;
    }
    return this.dispatchFull(req);
  }

  /**
   * Runs the claim statement `req` would use with a limit of 0 on `connections` connections at once
   * (opening them): each gets its plan, and nothing is claimed. A claim on a new connection pays for
   * connecting, loading the catalog and planning, many times a warm claim's cost; warming moves that
   * cost from the start of the first burst to the worker's start.
   */
  async warmUp(req: DispatchRequest, connections: number): Promise<void> {
    const run = () =>
      this.leanApplies(req)
        ? this.ops.run('dispatchLean', leanParams(req, 0), this.ex)
        : this.ops.run('dispatch', fullParams(req, 0), this.ex);
    await Promise.all(Array.from({ length: connections }, run));
  }

  private leanApplies(req: DispatchRequest): boolean {
    return performance.now() >= this.leanPausedUntil && req.actors.every((a) => a.maxConcurrent === null);
  }

  private async dispatchFull(req: DispatchRequest): Promise<ClaimedJob[]> {
    const values = fullParams(req, req.limit);
    // Two producers can race for the same identity key; the unique index on running identities
    // makes one of them fail. A fresh statement sees the winner's row and skips that identity.
    for (let attempt = 1; ; attempt++) {
      try {
        return (await this.ops.run<Raw>('dispatch', values, this.ex)).map(toClaimedJob);
      } catch (err) {
        const e = err as { code?: string; constraint?: string };
        if (
          attempt < IDENTITY_RACE_ATTEMPTS &&
          e.code === '23505' &&
          e.constraint === 'jobs_running_identity_uniq'
        )
          continue;
        throw err;
      }
    }
  }
}

/** The parameters of `dispatchLean` for `req`, claiming at most `limit` jobs. */
function leanParams(req: DispatchRequest, limit: number): unknown[] {
  return [req.queues, limit, req.workerId, req.leaseMs, req.actors.map((a) => a.name), startNow(req, limit)];
}

/** How many claimed jobs the claim records as started (every one unless the request says fewer). */
function startNow(req: DispatchRequest, limit: number): number {
  return Math.max(0, Math.min(req.startNow ?? limit, limit));
}

/** The parameters of `dispatch` for `req`, claiming at most `limit` jobs. */
function fullParams(req: DispatchRequest, limit: number): unknown[] {
  return [
    req.queues,
    limit,
    req.workerId,
    req.leaseMs,
    req.oversample,
    req.actors.map((a) => a.name),
    req.actors.map((a) => a.maxConcurrent),
    startNow(req, limit),
  ];
}
