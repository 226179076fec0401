/**
 * The Postgres backend's maintenance sweeps (the leader runs them): each one statement of
 * `sql/maintenance.sql` or `sql/worker.sql`, its rows mapped, and the jobs it ended announced.
 */
import { checkEventIdCursor } from '../cursor.js';
import type { EventRow, LongRunningJobEventsWriter } from '../types.js';
import type { PromotionResult, ReclaimResult, RetentionPolicy, StrandedActor } from '../worker-types.js';
import type { PgAnnouncer } from './pg-announcer.js';
import type { PgOps } from './pg-ops.js';
import { toEventRow } from './row-mapper.js';

/** Sweep 3: due scheduled jobs to pending. */
export async function scheduledToPending(ops: PgOps, limit: number): Promise<PromotionResult> {
  const rows = await ops.run<{ promoted: number; next_due_ms: number | null }>('scheduledToPending', [
    limit,
    ops.channels.wake,
  ]);
  const r = rows[0];
  return {
    promoted: Number(r?.promoted ?? 0),
    nextDueInMs:
      r?.next_due_ms === null || r?.next_due_ms === undefined ? null : Math.max(0, Number(r.next_due_ms)),
  };
}

/** Sweep 1: running jobs whose lease expired; the jobs that ended are announced. */
export async function reclaimExpiredLocks(
  ops: PgOps,
  announcer: PgAnnouncer,
  cancelGraceMs: number,
  cleanupGraceMs: number,
  limit: number,
): Promise<ReclaimResult> {
  const rows = await ops.run<{ reclaimed: number; retried: number; ended_ids: string[] }>(
    'reclaimExpiredLocks',
    [cancelGraceMs, cleanupGraceMs, limit, ops.channels.wake],
  );
  await announcer.send({ done: rows[0]?.ended_ids ?? [] });
  return { reclaimed: Number(rows[0]?.reclaimed ?? 0), retried: Number(rows[0]?.retried ?? 0) };
}

/** Sweep 2: waiting jobs past their deadline fail; they are announced. */
export async function deadlineSweep(ops: PgOps, announcer: PgAnnouncer, limit: number): Promise<number> {
  const rows = await ops.run<{ failed_ids: string[] }>('deadlineSweep', [limit]);
  const failed = rows[0]?.failed_ids ?? [];
  await announcer.send({ done: failed });
  return failed.length;
}

/** Drops stored results past their expiry. */
export async function sweepExpiredResults(ops: PgOps, limit: number): Promise<number> {
  const res = await ops.driver.query(ops.sql.sweepExpiredResults, [limit]).catch((err: unknown) => {
    throw ops.translate(err);
  });
  return res.rowCount;
}

/** Removes workers not seen for `olderThanMs`. */
export async function cleanupStaleWorkers(ops: PgOps, olderThanMs: number): Promise<number> {
  const res = await ops.driver.query(ops.sql.cleanupStaleWorkers, [olderThanMs]).catch((err: unknown) => {
    throw ops.translate(err);
  });
  return res.rowCount;
}

/** Actors with waiting jobs and no `actor_config` row. */
export async function strandedActors(ops: PgOps): Promise<StrandedActor[]> {
  const rows = await ops.run<{ actor: string; jobs: number }>('strandedActors', []);
  return rows.map((r) => ({ actor: r.actor, jobs: Number(r.jobs) }));
}

/** Sweep 5, one batch: expired terminal jobs to the archive. */
export async function pruneJobs(
  ops: PgOps,
  r: RetentionPolicy,
  batchSize: number,
): Promise<{ archived: number; attempts: number }> {
  const rows = await ops.run<{ archived: number; attempts: number }>('pruneJobs', [
    batchSize,
    r.succeededMs,
    r.failedMs,
    r.cancelledMs,
    r.abandonedMs,
    r.archiveMs,
  ]);
  return { archived: Number(rows[0]?.archived ?? 0), attempts: Number(rows[0]?.attempts ?? 0) };
}

/** Sweep 6, one batch: archived jobs past their expiry are deleted. */
export async function expireArchive(ops: PgOps, batchSize: number): Promise<number> {
  const res = await ops.driver.query(ops.sql.expireArchive, [batchSize]).catch((err: unknown) => {
    throw ops.translate(err);
  });
  return res.rowCount;
}

/** The crash-reclaim feed after `afterId`. */
export async function pollReclaimEvents(
  ops: PgOps,
  afterId: string,
  options: { limit?: number; visibilityDelayMs?: number },
): Promise<EventRow[]> {
  checkEventIdCursor(afterId);
  const rows = await ops.run('pollReclaimEvents', [
    afterId,
    options.limit ?? 100,
    options.visibilityDelayMs ?? 2000,
  ]);
  return rows.map(toEventRow);
}

/** Transactions holding `table` open for longer than `marginMs` (see `checkReclaimVisibilityDelayRisk`). */
export async function reclaimVisibilityRisk(
  ops: PgOps,
  table: string,
  marginMs: number,
): Promise<LongRunningJobEventsWriter[]> {
  const rows = await ops.run<{
    pid: number;
    application_name: string;
    state: string;
    xact_start: Date;
    open_ms: number;
    query: string;
  }>('reclaimVisibilityRisk', [table, marginMs]);
  return rows.map((r) => ({
    pid: Number(r.pid),
    applicationName: r.application_name,
    state: r.state,
    transactionStart: r.xact_start,
    openMs: Number(r.open_ms),
    query: r.query,
  }));
}
