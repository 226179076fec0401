import { TaskQError } from './taskq-error.js';

/**
 * Base of every refusal of `tq.actors.deregister()`: nothing was written. Catch this class to
 * handle all four at once; each subclass carries what blocked the deregistration.
 */
export class ActorDeregistrationError extends TaskQError {
  /** The actor whose deregistration was refused. */
  readonly actor: string;

  constructor(code: string, actor: string, detail: string) {
    super(code, `cannot deregister actor ${JSON.stringify(actor)}: ${detail}`);
    this.actor = actor;
  }
}

/** The actor has no `actor_config` row: nothing to deregister (never registered, or already gone). */
export class ActorNotFoundError extends ActorDeregistrationError {
  constructor(actor: string) {
    super(
      'TASKQ_ACTOR_NOT_FOUND',
      actor,
      'no stored actor_config row for this actor (check the name with `taskq actor-config list`)',
    );
  }
}

/**
 * Non-terminal jobs of the actor block the deregistration. Without `force` every pending,
 * scheduled or running job blocks; with `force` only running ones do (pending and scheduled jobs
 * would have been cancelled).
 */
export class ActorHasActiveJobsError extends ActorDeregistrationError {
  /** How many jobs block (all non-terminal ones, or with `force` the running ones). */
  readonly activeCount: number;
  /** The actor's non-terminal jobs by status, e.g. `{ pending: 3, running: 1 }` (zero counts left out). */
  readonly statusCounts: Readonly<Record<string, number>>;
  /** Whether the refused call passed `force: true`. */
  readonly force: boolean;

  constructor(actor: string, activeCount: number, statusCounts: Record<string, number>, force = false) {
    const breakdown = JSON.stringify(statusCounts);
    super(
      'TASKQ_ACTOR_HAS_ACTIVE_JOBS',
      actor,
      force
        ? `${activeCount} running job(s) still reference this actor (breakdown: ${breakdown}); force does not cancel running jobs: wait for them to finish or cancel them first (tq.cancel), then retry`
        : `${activeCount} non-terminal job(s) still reference this actor (breakdown: ${breakdown}); cancel them first, or pass force: true (--force) to cancel the pending and scheduled ones`,
    );
    this.activeCount = activeCount;
    this.statusCounts = statusCounts;
    this.force = force;
  }
}

/** Enabled cron schedules of the actor block the deregistration. */
export class ActorHasEnabledSchedulesError extends ActorDeregistrationError {
  /** The ids of the enabled schedules. */
  readonly scheduleIds: readonly string[];

  constructor(actor: string, scheduleIds: readonly string[]) {
    super(
      'TASKQ_ACTOR_HAS_ENABLED_SCHEDULES',
      actor,
      `${scheduleIds.length} enabled cron schedule(s) reference this actor (ids: ${scheduleIds.join(', ')}); disable or delete them first, or pass force: true (--force) to disable them`,
    );
    this.scheduleIds = scheduleIds;
  }
}
