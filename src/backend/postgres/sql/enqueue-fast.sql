-- name: enqueueFastStage
-- The staging table of `enqueueBatchFast`: COPY writes the items here, `enqueueFastInsert` moves
-- them into `jobs`. A temporary table lives in the session (created once per connection, no WAL,
-- no other session sees it); its columns are the raw items, so one table serves every schema.
-- Rows never outlive the call: the insert deletes what it moves, and a failed call rolls back.
CREATE TEMP TABLE IF NOT EXISTS taskq_fast_stage (
  id uuid NOT NULL,
  actor text NOT NULL,
  queue text NOT NULL,
  identity_key text,
  fairness_key text,
  payload text NOT NULL,
  payload_schema_ver int NOT NULL,
  priority int NOT NULL,
  max_attempts int NOT NULL,
  retry_kind text NOT NULL,
  scheduled_at timestamptz,
  delay_ms float8,
  schedule_to_close timestamptz,
  stc_interval_ms float8,
  start_to_close_ms float8,
  heartbeat_timeout_ms float8,
  idempotency_key text,
  idempotency_scope text NOT NULL,
  trace_id text,
  span_id text,
  metadata text NOT NULL,
  tags text NOT NULL
);

-- name: enqueueFastInsert
-- The second statement of `enqueueBatchFast`, in the COPY's transaction: moves the staged items
-- into `jobs`, deciding from the database clock what COPY cannot compute — pending or scheduled,
-- the run time, the deadline of a schedule-to-close interval (anchored now, at enqueue) — as
-- `enqueueBatch` does. No ON CONFLICT: a repeated idempotency key (stored, or twice in the batch)
-- violates the unique index and aborts the whole batch; nothing is written.
--   $1 wake channel (NULL: no NOTIFY)
WITH now_ AS (
  SELECT clock_timestamp() AS ts
),
staged AS (
  DELETE FROM pg_temp.taskq_fast_stage RETURNING *
),
timed AS (
  SELECT s.*, greatest(coalesce(s.scheduled_at, now_.ts + coalesce(s.delay_ms, 0) * interval '1 millisecond'), now_.ts) AS run_at
  FROM staged s, now_
),
ins AS (
  INSERT INTO {schema}.jobs AS j (
    id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, status, priority,
    max_attempts, retry_kind, schedule_to_close, start_to_close, heartbeat_timeout, created_at,
    scheduled_at, idempotency_key, idempotency_scope, trace_id, span_id, metadata, tags
  )
  SELECT i.id, i.actor, i.queue, i.identity_key, i.fairness_key, i.payload::jsonb, i.payload_schema_ver,
    (CASE WHEN i.run_at > now_.ts THEN 'scheduled' ELSE 'pending' END)::{schema}.job_status,
    i.priority, i.max_attempts, i.retry_kind,
    CASE
      WHEN i.stc_interval_ms IS NULL THEN i.schedule_to_close
      WHEN i.schedule_to_close IS NULL THEN now_.ts + i.stc_interval_ms * interval '1 millisecond'
      ELSE least(i.schedule_to_close, now_.ts + i.stc_interval_ms * interval '1 millisecond')
    END,
    i.start_to_close_ms * interval '1 millisecond', i.heartbeat_timeout_ms * interval '1 millisecond', now_.ts,
    i.run_at, i.idempotency_key, i.idempotency_scope,
    i.trace_id, i.span_id, i.metadata::jsonb,
    CASE WHEN i.tags = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)) END
  FROM timed i, now_
  RETURNING 1
),
notify AS (
  SELECT pg_notify($1, '') WHERE $1::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
)
SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT count(*) FROM notify)::int AS notified;
