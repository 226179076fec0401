import { TaskQError } from './taskq-error.js';

/**
 * A leader-only sweep was refused: the term it carried is no longer the current, unexpired lease of
 * the maintenance leadership (the lease expired while the worker was stalled or frozen, or another
 * worker took over). The sweep wrote nothing. A worker that gets it steps down and competes again on
 * its next election tick; code calling the Backend's sweeps with a fence should do the same.
 */
export class LeadershipLostError extends TaskQError {
  /** The worker that presented the term. */
  readonly workerId: string;
  /** The term it presented. */
  readonly term: string;

  constructor(workerId: string, term: string) {
    super(
      'TASKQ_LEADERSHIP_LOST',
      `worker ${workerId} no longer holds maintenance leadership term ${term} (its lease expired or ` +
        'another worker took over), so the sweep did nothing; step down and compete again on the next ' +
        'election tick',
    );
    this.workerId = workerId;
    this.term = term;
  }
}
