import type { EnqueueArgs, JobRow } from './types.js';

/** What the store decided when it inserted a job; everything else comes from the caller's arguments. */
export interface InsertDecision {
  status: JobRow['status'];
  createdAt: Date;
  scheduledAt: Date;
  /** The deadline, with a `timeBudget` anchored at insert time. */
  scheduleToClose: Date | null;
}

/**
 * The row of a freshly inserted job, built from its enqueue arguments and the store's decisions —
 * the same values a read-back returns. Both backends use it, so their rows cannot drift apart.
 */
export function newJobRow(a: EnqueueArgs, d: InsertDecision): JobRow {
  return {
    id: a.id,
    actor: a.actor,
    queue: a.queue,
    identityKey: a.identityKey,
    fairnessKey: a.fairnessKey,
    payload: JSON.parse(a.payloadJson) as unknown,
    payloadSchemaVer: a.payloadSchemaVer,
    status: d.status,
    priority: a.priority,
    attempt: 0,
    maxAttempts: a.maxAttempts,
    retryKind: a.retryKind,
    scheduleToClose: d.scheduleToClose,
    startToCloseMs: a.startToCloseMs,
    heartbeatTimeoutMs: a.heartbeatTimeoutMs,
    createdAt: d.createdAt,
    scheduledAt: d.scheduledAt,
    startedAt: null,
    finishedAt: null,
    lastHeartbeatAt: null,
    lockedByWorker: null,
    lockExpiresAt: null,
    cancelRequestedAt: null,
    cancelPhase: 0,
    errorClass: null,
    errorMessage: null,
    errorTraceback: null,
    progressState: {},
    progressSeq: 0,
    result: null,
    resultSizeBytes: null,
    resultExpiresAt: null,
    idempotencyKey: a.idempotencyKey,
    idempotencyScope: a.idempotencyScope,
    traceId: a.traceId,
    spanId: a.spanId,
    metadata: { ...a.metadata },
    tags: [...a.tags],
    heartbeatDetails: null,
  };
}
