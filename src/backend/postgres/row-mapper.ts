import type {
  ActorConfigRow,
  AttemptOutcome,
  AttemptRow,
  CancelPhase,
  ClaimedJob,
  EventKind,
  EventRow,
  JobRow,
  JobStatus,
  QueueConfigRow,
  QueueMode,
  RetryKind,
} from '../types.js';

type Raw = Record<string, unknown>;

// Job timestamps arrive as epoch milliseconds (JOB_COLUMNS); attempt and event rows as the driver's
// Date (node-postgres) or text.
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(v as number | string));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
// Drivers parse jsonb themselves (a JSON string value arrives as a JS string, not as JSON text).
const json = (v: unknown): unknown => v;

/**
 * `jobs.retry_kind` as stored: the reference schema's names (`non_retryable`), where the API spells
 * the kind in camel case. Every Postgres write of a retry kind goes through here.
 */
export function toStoredRetryKind(kind: RetryKind): string {
  return kind === 'nonRetryable' ? 'non_retryable' : kind;
}

/** The API's {@link RetryKind} of a stored `jobs.retry_kind` (the inverse of {@link toStoredRetryKind}). */
function retryKindOf(stored: unknown): RetryKind {
  return stored === 'non_retryable' ? 'nonRetryable' : (stored as RetryKind);
}

/** Maps a row selected with `JOB_COLUMNS` to a {@link JobRow}: a claimed job's fields and the rest. */
export function toJobRow(r: Raw): JobRow {
  return {
    ...toClaimedJob(r),
    identityKey: strOrNull(r.identity_key),
    fairnessKey: strOrNull(r.fairness_key),
    status: r.status as JobStatus,
    maxAttempts: Number(r.max_attempts),
    retryKind: retryKindOf(r.retry_kind),
    scheduleToClose: dateOrNull(r.schedule_to_close),
    createdAt: date(r.created_at),
    scheduledAt: date(r.scheduled_at),
    startedAt: dateOrNull(r.started_at),
    finishedAt: dateOrNull(r.finished_at),
    lastHeartbeatAt: dateOrNull(r.last_heartbeat_at),
    lockedByWorker: strOrNull(r.locked_by_worker),
    lockExpiresAt: dateOrNull(r.lock_expires_at),
    cancelRequestedAt: dateOrNull(r.cancel_requested_at),
    cancelPhase: Number(r.cancel_phase) as CancelPhase,
    errorClass: strOrNull(r.error_class),
    errorMessage: strOrNull(r.error_message),
    errorTraceback: strOrNull(r.error_traceback),
    result: r.result === undefined ? null : json(r.result),
    resultSizeBytes: numOrNull(r.result_size_bytes),
    resultExpiresAt: dateOrNull(r.result_expires_at),
    idempotencyKey: strOrNull(r.idempotency_key),
    idempotencyScope: (r.idempotency_scope as string | null) ?? '',
    traceId: strOrNull(r.trace_id),
    spanId: strOrNull(r.span_id),
    metadata: (json(r.metadata) ?? {}) as Record<string, unknown>,
    tags: (r.tags as string[] | null) ?? [],
  };
}

/** Maps a row selected with `CLAIM_COLUMNS` to a {@link ClaimedJob}. */
export function toClaimedJob(r: Raw): ClaimedJob {
  return {
    id: r.id as string,
    actor: r.actor as string,
    queue: r.queue as string,
    payload: json(r.payload),
    payloadSchemaVer: Number(r.payload_schema_ver),
    priority: Number(r.priority),
    attempt: Number(r.attempt),
    startToCloseMs: numOrNull(r.start_to_close_ms),
    heartbeatTimeoutMs: numOrNull(r.heartbeat_timeout_ms),
    progressState: (json(r.progress_state) ?? {}) as Record<string, unknown>,
    progressSeq: Number(r.progress_seq),
    heartbeatDetails: r.heartbeat_details === undefined ? null : json(r.heartbeat_details),
    traceId: strOrNull(r.trace_id),
    spanId: strOrNull(r.span_id),
  };
}

/** Maps a `job_attempts` row. */
export function toAttemptRow(r: Raw): AttemptRow {
  return {
    jobId: r.job_id as string,
    attempt: Number(r.attempt),
    workerId: strOrNull(r.worker_id),
    startedAt: dateOrNull(r.started_at),
    finishedAt: date(r.finished_at),
    durationMs: numOrNull(r.duration_ms),
    outcome: r.outcome as AttemptOutcome,
    errorClass: strOrNull(r.error_class),
    errorMessage: strOrNull(r.error_message),
    errorTraceback: strOrNull(r.error_traceback),
  };
}

/** Maps a `job_events` row (id selected as text). */
export function toEventRow(r: Raw): EventRow {
  return {
    eventId: String(r.event_id),
    jobId: r.job_id as string,
    occurredAt: date(r.occurred_at),
    kind: r.kind as EventKind,
    detail: (json(r.detail) ?? {}) as Record<string, unknown>,
  };
}

/** Maps an `actor_config` row (result TTL selected as milliseconds). */
export function toActorConfigRow(r: Raw): ActorConfigRow {
  return {
    actor: r.actor as string,
    queue: r.queue as string,
    maxConcurrent: numOrNull(r.max_concurrent),
    maxPending: numOrNull(r.max_pending),
    resultTtlMs: numOrNull(r.result_ttl_ms),
    metadata: (json(r.metadata) ?? {}) as Record<string, unknown>,
    updatedAt: date(r.updated_at),
  };
}

/** Maps a `queues` row. */
export function toQueueConfigRow(r: Raw): QueueConfigRow {
  return {
    name: r.name as string,
    mode: r.mode as QueueMode,
    maxConcurrent: numOrNull(r.max_concurrent),
    updatedAt: date(r.updated_at),
  };
}
