/**
 * Attribute keys of TaskQ's spans. The `messaging.*` keys follow the OpenTelemetry messaging
 * semantic conventions, so a tracing backend groups TaskQ with other queues; what they do not
 * name (actor, attempt, outcome) is under `taskq.*`.
 */
export const SPAN_ATTRIBUTES = {
  /** Always `taskq`. */
  system: 'messaging.system',
  /** `send` (enqueue), `receive` (dispatch) or `process` (an attempt). */
  operationType: 'messaging.operation.type',
  /** `send`, `dispatch` or `process`. */
  operationName: 'messaging.operation.name',
  /** The queue. */
  destination: 'messaging.destination.name',
  /** The job id. */
  messageId: 'messaging.message.id',
  /** Jobs in a batch enqueue, or claimed by a dispatch. */
  batchCount: 'messaging.batch.message_count',
  /** The actor's name. */
  actor: 'taskq.job.actor',
  /** The attempt's number (1-based). */
  attempt: 'taskq.job.attempt',
  /** How the attempt ended: `succeeded`, `retry`, `failed`, `cancelled`, `snoozed`, ... */
  outcome: 'taskq.job.outcome',
  /** True when an enqueue returned an existing job (idempotency key, `uniqueFor`). */
  existing: 'taskq.job.existing',
  /** The batch id of a batch enqueue. */
  batchId: 'taskq.batch.id',
  /** The worker's id. */
  workerId: 'taskq.worker.id',
  /** Most jobs a dispatch asked for. */
  dispatchLimit: 'taskq.dispatch.limit',
} as const;

/** The value of `messaging.system` on every TaskQ span. */
export const MESSAGING_SYSTEM = 'taskq';
