-- name: writeCancelRequest
-- Pending and scheduled jobs end cancelled at once. A running job is flagged (cancel_phase 1) and
-- the worker holding it is returned, for the caller to announce the request once this commits (the
-- worker's heartbeat also finds the flag). Each change writes its job_events row.
-- $1 job id, $2 reason
WITH target AS (
  SELECT id, status, locked_by_worker FROM {schema}.jobs WHERE id = $1 FOR UPDATE
),
direct AS (
  UPDATE {schema}.jobs AS j
  SET status = 'cancelled', finished_at = clock_timestamp(), cancel_requested_at = clock_timestamp(),
      error_class = 'CancelRequested', error_message = coalesce($2, 'cancelled by request')
  FROM target t
  WHERE j.id = t.id AND t.status IN ('pending', 'scheduled')
  RETURNING j.id, t.status::text AS from_status
),
flag AS (
  UPDATE {schema}.jobs AS j
  SET cancel_requested_at = clock_timestamp(), cancel_phase = 1
  FROM target t
  WHERE j.id = t.id AND t.status = 'running' AND j.cancel_requested_at IS NULL
  RETURNING j.id, j.locked_by_worker
),
ev AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change',
    jsonb_build_object('from_state', from_status, 'to_state', 'cancelled', 'reason', 'cancel_requested', 'message', $2)
  FROM direct
  UNION ALL
  SELECT id, 'cancel_request', jsonb_build_object('phase', 1, 'message', $2, 'worker_id', locked_by_worker)
  FROM flag
  RETURNING 1
)
SELECT (SELECT count(*) FROM direct)::int AS cancelled,
       (SELECT count(*) FROM flag)::int AS requested,
       (SELECT locked_by_worker::text FROM flag) AS requested_worker,
       (SELECT count(*) FROM ev)::int AS events;

-- name: retryJob
-- Admin retry: a failed, crashed, cancelled or abandoned job goes back to pending with a fresh
-- attempt budget; error, result and cancel state are cleared. The deadline is kept.
WITH target AS (
  SELECT id, status FROM {schema}.jobs
  WHERE id = $1 AND status IN ('failed', 'crashed', 'cancelled', 'abandoned')
  FOR UPDATE
),
upd AS (
  UPDATE {schema}.jobs AS j
  SET status = 'pending', attempt = 0, scheduled_at = clock_timestamp(), started_at = NULL, finished_at = NULL,
      last_heartbeat_at = NULL, locked_by_worker = NULL, lock_expires_at = NULL, cancel_requested_at = NULL,
      cancel_phase = 0, error_class = NULL, error_message = NULL, error_traceback = NULL, result = NULL,
      result_size_bytes = NULL, result_expires_at = NULL
  FROM target t
  WHERE j.id = t.id
  RETURNING j.id, t.status::text AS from_status
),
ev AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change', jsonb_build_object('from_state', from_status, 'to_state', 'pending', 'reason', 'admin_retry')
  FROM upd
  RETURNING 1
),
notify AS (
  SELECT pg_notify($2, '') FROM upd
)
SELECT (SELECT count(*) FROM upd)::int AS retried, (SELECT count(*) FROM ev)::int AS events,
       (SELECT count(*) FROM notify)::int AS notified;

-- name: retryWhere
-- Set-based admin retry: every failed, crashed, cancelled or abandoned job matching the filter goes
-- back to pending as `retryJob` sends one (the filter placeholder is replaced by the predicate list,
-- whose values are bound parameters from $1 on). The ids reach the lock as one array and the lock
-- rechecks the status, for the reason cancelWhere gives. A singleton job that would make a second
-- active job of its actor fails the statement on the singleton index: nothing is retried.
WITH matching AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE {filter_conditions} AND j.status IN ('failed', 'crashed', 'cancelled', 'abandoned')
),
target AS (
  SELECT j.id, j.status FROM {schema}.jobs j
  WHERE j.id = ANY (ARRAY(SELECT id FROM matching)) AND j.status IN ('failed', 'crashed', 'cancelled', 'abandoned')
  FOR UPDATE
),
upd AS (
  UPDATE {schema}.jobs AS j
  SET status = 'pending', attempt = 0, scheduled_at = clock_timestamp(), started_at = NULL, finished_at = NULL,
      last_heartbeat_at = NULL, locked_by_worker = NULL, lock_expires_at = NULL, cancel_requested_at = NULL,
      cancel_phase = 0, error_class = NULL, error_message = NULL, error_traceback = NULL, result = NULL,
      result_size_bytes = NULL, result_expires_at = NULL
  FROM target t
  WHERE j.id = t.id
  RETURNING j.id, t.status::text AS from_status
),
ev AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change', jsonb_build_object('from_state', from_status, 'to_state', 'pending', 'reason', 'admin_retry')
  FROM upd
  RETURNING 1
)
SELECT coalesce((SELECT array_agg(id::text ORDER BY id) FROM upd), '{}') AS retried_ids,
       (SELECT count(*) FROM ev)::int AS events;

-- name: previewRetryWhere
-- The dry run of retryWhere: how many jobs it would retry now, counted without changing or locking
-- anything. The filter placeholder is replaced as in retryWhere, its values bound from $1 on.
SELECT count(*)::int AS retried FROM {schema}.jobs j
WHERE {filter_conditions} AND j.status IN ('failed', 'crashed', 'cancelled', 'abandoned');

-- name: cancelWhere
-- Set-based cancel of every active job matching the filter (the filter placeholder below is replaced by
-- the predicate list, whose values are bound parameters from $2 on). Pending and scheduled jobs end
-- cancelled at once; running jobs are flagged (phase 1) and returned with their workers, for the
-- caller to announce once this commits. One event row per job. $1 reason.
-- The matching ids are collected per status group (waiting jobs through jobs_waiting_idx, running
-- ones through jobs_running_idx: no index holds both), then locked. The ids reach the lock as one
-- array (an init plan), not as `id IN (SELECT id FROM matching)`: a row that a heartbeat or a claim
-- changed after this statement's snapshot is locked in its newest version and rechecked, and when
-- the planner had made the IN a join driven by the de-duplicated ids, the recheck lost the row (the
-- job was neither cancelled nor flagged). Against a fixed array the recheck is the status test.
WITH matching AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE {filter_conditions} AND j.status IN ('pending', 'scheduled')
  UNION ALL
  SELECT j.id FROM {schema}.jobs j
  WHERE {filter_conditions} AND j.status = 'running'
),
target AS (
  SELECT j.id, j.status, j.locked_by_worker FROM {schema}.jobs j
  WHERE j.id = ANY (ARRAY(SELECT id FROM matching)) AND j.status IN ('pending', 'scheduled', 'running')
  FOR UPDATE
),
direct AS (
  UPDATE {schema}.jobs AS j
  SET status = 'cancelled', finished_at = clock_timestamp(), cancel_requested_at = clock_timestamp(),
      error_class = 'CancelRequested', error_message = coalesce($1, 'cancelled by request')
  FROM target t
  WHERE j.id = t.id AND t.status IN ('pending', 'scheduled')
  RETURNING j.id, t.status::text AS from_status
),
flag AS (
  UPDATE {schema}.jobs AS j
  SET cancel_requested_at = clock_timestamp(), cancel_phase = 1
  FROM target t
  WHERE j.id = t.id AND t.status = 'running' AND j.cancel_requested_at IS NULL
  RETURNING j.id, j.locked_by_worker
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change',
    jsonb_build_object('from_state', from_status, 'to_state', 'cancelled', 'reason', 'cancel_requested', 'message', $1::text)
  FROM direct
  UNION ALL
  SELECT id, 'cancel_request', jsonb_build_object('phase', 1, 'message', $1::text, 'worker_id', locked_by_worker)
  FROM flag
  RETURNING 1
)
SELECT coalesce((SELECT array_agg(id::text) FROM direct), '{}') AS cancelled_ids,
       coalesce((SELECT array_agg(id::text ORDER BY id) FROM flag), '{}') AS requested_ids,
       coalesce((SELECT array_agg(locked_by_worker::text ORDER BY id) FROM flag), '{}') AS requested_workers,
       (SELECT count(*) FROM events)::int AS events;

-- name: previewCancelWhere
-- The dry run of cancelWhere: what it would change now, counted without changing or locking
-- anything. The filter placeholder is replaced as in cancelWhere, its values bound from $1 on;
-- waiting jobs are counted through jobs_waiting_idx, running ones through jobs_running_idx.
SELECT
  (SELECT count(*) FROM {schema}.jobs j
   WHERE {filter_conditions} AND j.status IN ('pending', 'scheduled'))::int AS cancelled_directly,
  (SELECT count(*) FROM {schema}.jobs j
   WHERE {filter_conditions} AND j.status = 'running' AND j.cancel_requested_at IS NULL)::int AS cancel_requested;
