import type { Executor } from '../../db/driver.js';
import type { PgOps } from './pg-ops.js';

/** True when the planner's statistics of `jobs` are missing or far out of date (`jobsStatisticsStale`). */
async function jobsStatisticsStale(ops: PgOps, ex: Executor = ops.driver): Promise<boolean> {
  const rows = await ops.run<{ stale: boolean | null }>('jobsStatisticsStale', [], ex);
  return rows[0]?.stale === true;
}

/**
 * Analyzes `jobs` when its statistics are stale (a table filled in a burst); returns whether it did.
 * The workers of a fleet start together and all find the statistics stale. One at a time under a
 * lock, each checking again once it holds it: the first analyzes, the others wait for it (their
 * claims must not be planned before it ends) and find the statistics fresh. Concurrent ANALYZEs of
 * one table queue on its lock anyway: without the advisory lock each worker would run its own and
 * wait for all the others' in turn, one ANALYZE per worker where one suffices.
 */
export async function refreshJobsStatistics(ops: PgOps, quotedSchema: string): Promise<boolean> {
  if (!(await jobsStatisticsStale(ops))) return false;
  const analyzed = await ops.driver.transaction(async (tx) => {
    await ops.run('statisticsRefreshLock', [`taskq:statistics:${ops.schema}`], tx);
    if (!(await jobsStatisticsStale(ops, tx))) return false;
    // ANALYZE samples a fixed number of rows: tens of milliseconds even on a large table.
    await tx.query(`ANALYZE ${quotedSchema}.jobs`);
    return true;
  });
  if (analyzed) ops.logger.info({ schema: ops.schema }, 'jobs-statistics-refreshed');
  return analyzed;
}
