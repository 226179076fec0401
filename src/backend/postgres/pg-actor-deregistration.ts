/**
 * An actor's deregistration on Postgres, in one transaction: lock, read, decide (the shared rules of
 * `actor-deregistration.ts`), then write. A refusal throws before the first write, and the
 * transaction rolls back, so nothing is written.
 */
import { actorLockKey, checkDeregister, decideDeregistration } from '../actor-deregistration.js';
import { normalizeJobFilter } from '../job-filter.js';
import { ActorNotFoundError } from '../../errors/actor-deregistration-errors.js';
import type { Executor } from '../../db/driver.js';
import type { DeregisterOptions, DeregisterResult } from '../types.js';
import { filterConditions } from './filter-sql.js';
import type { PgOps } from './pg-ops.js';

/** Why force cancelled a job (its `error_message` and the event's `message`). */
export const DEREGISTER_CANCEL_REASON = 'actor deregistered (force)';

/** The result, and the jobs force cancelled (the caller announces them once committed). */
export interface PgDeregistration {
  result: DeregisterResult;
  cancelledIds: string[];
}

/**
 * Deregisters `actor` (see `Backend.deregisterActor`). Serialised against the actor's enqueues by
 * its enqueue lock (`actorLockKey`): every job whose insert committed before this transaction took
 * the lock is counted (a refusal, or with force cancelled); an insert that comes later waits for
 * this transaction to end, and its job is the actor's first after the deregistration.
 */
export async function deregisterActor(
  ops: PgOps,
  quotedSchema: string,
  actor: unknown,
  options: DeregisterOptions | undefined,
): Promise<PgDeregistration> {
  const req = checkDeregister(actor, options);
  return ops.driver.transaction(async (tx) => {
    const run = <R = Record<string, unknown>>(name: Parameters<PgOps['run']>[0], values: unknown[]) =>
      ops.run<R>(name, values, tx);
    const schedules = await run<{ id: string; enabled: boolean }>('deregisterLockSchedules', [req.actor]);
    await run('deregisterLockActor', [actorLockKey(ops.schema, req.actor)]);
    const [config] = await run<{ queue: string }>('deregisterLockConfig', [req.actor]);
    if (!config) throw new ActorNotFoundError(req.actor);
    if (req.force) await run('deregisterLockWaiting', [req.actor]);
    const statusCounts: Record<string, number> = {};
    for (const r of await run<{ status: string; n: number }>('deregisterCountJobs', [req.actor]))
      statusCounts[r.status] = Number(r.n);
    decideDeregistration(req, {
      statusCounts,
      enabledScheduleIds: schedules.filter((s) => s.enabled).map((s) => s.id),
    });
    // Nothing was written before this line.
    let cancelledIds: string[] = [];
    if (req.force && (statusCounts.pending ?? 0) + (statusCounts.scheduled ?? 0) > 0)
      cancelledIds = await cancelWaiting(ops, quotedSchema, tx, req.actor);
    const disabled = req.force ? await run<{ id: string }>('deregisterDisableSchedules', [req.actor]) : [];
    await run('deregisterDeleteConfig', [req.actor]);
    const purged = req.purgeQueue ? await run('deregisterPurgeQueue', [config.queue]) : [];
    const [terminal] = await run<{ n: number }>('deregisterCountTerminal', [req.actor]);
    return {
      cancelledIds,
      result: {
        actor: req.actor,
        queue: config.queue,
        actorConfigDeleted: true,
        schedulesDisabled: disabled.length,
        jobsCancelled: cancelledIds.length,
        terminalJobsRemaining: Number(terminal?.n ?? 0),
        queuePurged: purged.length > 0,
      },
    };
  });
}

/**
 * Cancels the actor's pending and scheduled jobs with the `cancelWhere` statement, so that they end
 * exactly as a bulk cancel ends them: one event row each, batch counters by the same triggers.
 */
async function cancelWaiting(
  ops: PgOps,
  quotedSchema: string,
  tx: Executor,
  actor: string,
): Promise<string[]> {
  const values: unknown[] = [DEREGISTER_CANCEL_REASON];
  const filter = normalizeJobFilter({ actor, status: ['pending', 'scheduled'] }, 'cancelWhere');
  const text = ops.sql.cancelWhere.replaceAll(
    '{filter_conditions}',
    filterConditions(filter, values, quotedSchema).join(' AND '),
  );
  let rows: { cancelled_ids: string[] }[];
  try {
    rows = (await tx.query<{ cancelled_ids: string[] }>(text, values)).rows;
  } catch (err) {
    throw ops.translate(err);
  }
  return rows[0]?.cancelled_ids ?? [];
}
