/**
 * An actor's deregistration in memory: the same rules as on Postgres (`actor-deregistration.ts`),
 * run in one synchronous pass, so no enqueue, claim or settle interleaves with it. A job inside an
 * open memory transaction is not committed yet: it counts as enqueued after the deregistration,
 * as on Postgres, where that enqueue waits for the deregistration's lock.
 */
import { checkDeregister, decideDeregistration } from '../actor-deregistration.js';
import { normalizeJobFilter, type NormalizedJobFilter } from '../job-filter.js';
import { ACTIVE_STATUSES } from '../state-machine.js';
import { ActorNotFoundError } from '../../errors/actor-deregistration-errors.js';
import type { ScheduleRecord } from '../schedule-types.js';
import type {
  ActorConfigRow,
  BulkCancelResult,
  DeregisterOptions,
  DeregisterResult,
  JobRow,
  QueueConfigRow,
} from '../types.js';

/** The parts of the in-memory backend a deregistration reads and writes. */
export interface MemoryDeregistrationHost {
  actorConfig: Map<string, ActorConfigRow>;
  jobs: ReadonlyMap<string, JobRow>;
  queues: Map<string, QueueConfigRow>;
  queueModes: Map<string, unknown>;
  enabledSchedules(actor: string): ScheduleRecord[];
  disableSchedule(id: string): void;
  cancelWhere(filter: NormalizedJobFilter, reason: string | null): BulkCancelResult;
}

/** Why force cancelled a job, as on Postgres. */
const REASON = 'actor deregistered (force)';

/** Deregisters `actor` (see `Backend.deregisterActor`); a refusal throws before any change. */
export function deregisterInMemory(
  host: MemoryDeregistrationHost,
  actor: unknown,
  options: DeregisterOptions | undefined,
): DeregisterResult {
  const req = checkDeregister(actor, options);
  const config = host.actorConfig.get(req.actor);
  if (!config) throw new ActorNotFoundError(req.actor);
  const statusCounts: Record<string, number> = {};
  for (const j of host.jobs.values())
    if (j.actor === req.actor && ACTIVE_STATUSES.has(j.status))
      statusCounts[j.status] = (statusCounts[j.status] ?? 0) + 1;
  const enabled = host.enabledSchedules(req.actor);
  decideDeregistration(req, { statusCounts, enabledScheduleIds: enabled.map((s) => s.id) });
  let jobsCancelled = 0;
  if (req.force) {
    jobsCancelled = host.cancelWhere(
      normalizeJobFilter({ actor: req.actor, status: ['pending', 'scheduled'] }, 'cancelWhere'),
      REASON,
    ).cancelledDirectly;
    for (const s of enabled) host.disableSchedule(s.id);
  }
  host.actorConfig.delete(req.actor);
  let queuePurged = false;
  if (req.purgeQueue && host.queues.has(config.queue)) {
    const named = [...host.actorConfig.values()].some((c) => c.queue === config.queue);
    const busy = [...host.jobs.values()].some(
      (j) => j.queue === config.queue && ACTIVE_STATUSES.has(j.status),
    );
    if (!named && !busy) {
      host.queues.delete(config.queue);
      host.queueModes.delete(config.queue);
      queuePurged = true;
    }
  }
  let terminalJobsRemaining = 0;
  for (const j of host.jobs.values())
    if (j.actor === req.actor && !ACTIVE_STATUSES.has(j.status)) terminalJobsRemaining++;
  return {
    actor: req.actor,
    queue: config.queue,
    actorConfigDeleted: true,
    schedulesDisabled: req.force ? enabled.length : 0,
    jobsCancelled,
    terminalJobsRemaining,
    queuePurged,
  };
}
