import type { AnyActor } from '../core/actor.js';
import type { ClaimedJob } from '../backend/types.js';
import type { Settlement, SettleResult } from '../backend/worker-types.js';
import type { JobScopedLogger } from '../obs/job-log-context.js';
import type { AttemptOutcomes, AttemptTiming } from './attempt-outcomes.js';
import type { Completer } from './completer.js';
import type { AttemptSubJobs } from './sub-jobs.js';

/** The outcome actually written for an attempt whose handler used `ctx.jobs`, and what the write did. */
export interface SubJobOutcome {
  outcome: Settlement;
  /** The error the hooks and the reporter get (the refusal, when the children were refused). */
  thrown: unknown;
  result: SettleResult;
}

/**
 * Writes the outcome of an attempt whose handler read `ctx.jobs`. Any outcome but a success drops
 * the buffered children. A success waits for the `ctx.jobs` calls still in progress, then is written
 * with its children in one transaction; when no child was buffered it joins the usual batched write.
 * When the children are refused (a gate: `maxPending` full, a singleton busy, a key held by another
 * actor) nothing is written, and the attempt fails with that error under the actor's retry policy.
 */
export async function settleWithSubJobs(
  completer: Completer,
  outcomes: AttemptOutcomes,
  subJobs: AttemptSubJobs,
  row: ClaimedJob,
  log: JobScopedLogger,
  outcome: Settlement,
  thrown: unknown,
  actor: AnyActor | null,
): Promise<SubJobOutcome> {
  if (outcome.kind !== 'succeeded' || actor === null) {
    subJobs.discard();
    return { outcome, thrown, result: await completer.settle(outcome) };
  }
  const children = await subJobs.seal();
  if (children.length === 0) return { outcome, thrown, result: await completer.settle(outcome) };
  const write = await completer.settleWithChildren(outcome, children);
  if (write.kind === 'written') {
    if (write.result.status !== 'noop') subJobs.committed(write.children);
    return { outcome, thrown, result: write.result };
  }
  log.warn({ err: write.error, children: children.length }, 'sub-jobs-refused');
  const timing: AttemptTiming = {
    handlerStartedAt: outcome.handlerStartedAt ?? new Date(),
    durationMs: outcome.durationMs ?? 0,
  };
  const failure = outcomes.failure(actor, row, write.error, timing);
  failure.progress = outcome.progress ?? null;
  failure.heartbeatDetailsJson = outcome.heartbeatDetailsJson ?? null;
  return { outcome: failure, thrown: write.error, result: await completer.settle(failure) };
}
