import { TaskQError } from './taskq-error.js';

/** `createSchedule` for an `(actor, name)` that already has a schedule. Nothing was written. */
export class ScheduleExistsError extends TaskQError {
  readonly actor: string;
  readonly scheduleName: string;

  constructor(actor: string, scheduleName: string) {
    super(
      'TASKQ_SCHEDULE_EXISTS',
      `actor ${JSON.stringify(actor)} already has a schedule named ${JSON.stringify(scheduleName)}; ` +
        'change it with updateSchedule (or `taskq schedules`), or give the new one another name',
    );
    this.actor = actor;
    this.scheduleName = scheduleName;
  }
}

/** A schedule id that no schedule has (deleted, or never created). */
export class ScheduleNotFoundError extends TaskQError {
  readonly scheduleId: string;

  constructor(scheduleId: string) {
    super('TASKQ_SCHEDULE_NOT_FOUND', `schedule ${scheduleId} does not exist (it may have been deleted)`);
    this.scheduleId = scheduleId;
  }
}
