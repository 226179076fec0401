import { TaskQError } from './taskq-error.js';

/** `cancelWhere` or `retryWhere` was called with a filter that matches every job. */
export class EmptyFilterError extends TaskQError {
  /** @param method the bulk call refused (default `cancelWhere`) */
  constructor(method: 'cancelWhere' | 'retryWhere' = 'cancelWhere') {
    super(
      'TASKQ_EMPTY_FILTER',
      `${method}() needs at least one predicate (queue, status, actor, identityKey, batchId, tags or active); ` +
        `pass { allowEmptyFilter: true } to ${method === 'cancelWhere' ? 'cancel' : 'retry'} every job on purpose`,
    );
  }
}

/** An object was used in a state that does not allow the call (closed client, handle without client, …). */
export class TaskQStateError extends TaskQError {
  constructor(message: string) {
    super('TASKQ_INVALID_STATE', message);
  }
}
