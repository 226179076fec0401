/**
 * A timestamp column as epoch milliseconds (`float8`, whole milliseconds: a JS `Date`'s precision,
 * floored as the driver's own parser truncates). The driver turns a `float8` into a number with
 * `parseFloat`; a `timestamptz` it parses as text with a regular expression and a `Date` per
 * column, a cost per claimed job that shows in a worker's profile; and the server's numeric
 * arithmetic costs less than formatting the timestamp as text.
 */
function epochMs(column: string): string {
  return `floor(extract(epoch FROM j.${column}) * 1000)::float8 AS ${column}`;
}

/**
 * The select list every statement returning jobs uses, with alias `j`. Intervals and timestamps
 * are converted to milliseconds in SQL so row mapping never depends on a driver's date or interval
 * parser ({@link toJobRow} makes the `Date`s).
 */
export const JOB_COLUMNS = [
  'j.id',
  'j.actor',
  'j.queue',
  'j.identity_key',
  'j.fairness_key',
  'j.payload',
  'j.payload_schema_ver',
  'j.status::text AS status',
  'j.priority',
  'j.attempt',
  'j.max_attempts',
  'j.retry_kind',
  epochMs('schedule_to_close'),
  '(extract(epoch FROM j.start_to_close) * 1000)::float8 AS start_to_close_ms',
  '(extract(epoch FROM j.heartbeat_timeout) * 1000)::float8 AS heartbeat_timeout_ms',
  epochMs('created_at'),
  epochMs('scheduled_at'),
  epochMs('started_at'),
  epochMs('finished_at'),
  epochMs('last_heartbeat_at'),
  'j.locked_by_worker',
  epochMs('lock_expires_at'),
  epochMs('cancel_requested_at'),
  'j.cancel_phase',
  'j.error_class',
  'j.error_message',
  'j.error_traceback',
  'j.progress_state',
  'j.progress_seq',
  'j.result',
  'j.result_size_bytes',
  epochMs('result_expires_at'),
  'j.idempotency_key',
  'j.idempotency_scope',
  'j.trace_id',
  'j.span_id',
  'j.metadata',
  'j.tags',
  'j.heartbeat_details',
].join(', ');

/**
 * The select list of the claim statements (`{claim_columns}`): the fields of a `ClaimedJob`
 * and nothing else. A claimed job's other columns are known to the worker (status, lease) or not
 * needed to run it; not selecting them spares the server their output functions and the worker
 * their parsing, a sizeable share of a claim's round trip.
 */
export const CLAIM_COLUMNS = [
  'j.id',
  'j.actor',
  'j.queue',
  'j.payload',
  'j.payload_schema_ver',
  'j.priority',
  'j.attempt',
  '(extract(epoch FROM j.start_to_close) * 1000)::float8 AS start_to_close_ms',
  '(extract(epoch FROM j.heartbeat_timeout) * 1000)::float8 AS heartbeat_timeout_ms',
  'j.progress_state',
  'j.progress_seq',
  'j.heartbeat_details',
  // The enqueue's trace context: the attempt's span links to it, and its trace id is on the lines
  // logged about the attempt (docs/logging.md).
  'j.trace_id',
  'j.span_id',
].join(', ');
