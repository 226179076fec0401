-- name: reclaimExpiredLocks
-- Sweep 1: running jobs whose lease expired (database clock) — their worker died or lost its
-- connection. A job being cancelled gets extra headroom (cancel grace + cleanup grace + 60 s) so a
-- slow cancel is not mistaken for a crash. What happens to each (in this order):
--   a cancel was requested → cancelled, whatever attempts remain (beyond the reference, which retried
--     such a job: with its worker dead the cancel could never be honoured again, and the job ran again)
--   its handler never started (started_at IS NULL: claimed into the worker's local queue and not yet
--     marked started, see dispatch.sql) → pending, attempt given back, as drain at shutdown does
--   attempts left (transient with attempt < max_attempts, or indefinite) → pending, cancel state cleared
--   none left → crashed
-- A job whose handler started gets a 'crashed' attempt row; an unstarted one gets none (no attempt
-- ran) and keeps its error fields. Every reclaimed job gets a job_events row (the reclaim feed's
-- outbox; `handler_started: false` for an unstarted one) in this statement; one wake NOTIFY per sweep
-- that reclaimed anything. The jobs that ended come back for the caller to announce on the done
-- channel.
-- $1 cancel grace ms, $2 cleanup grace ms, $3 limit, $4 wake channel
WITH expired AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.status = 'running' AND j.lock_expires_at < clock_timestamp()
    AND (j.cancel_requested_at IS NULL
         OR j.lock_expires_at + ($1::float8 + $2::float8 + 60000) * interval '1 millisecond' < clock_timestamp())
  ORDER BY j.lock_expires_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED
),
decided AS (
  SELECT j.id, j.locked_by_worker, j.attempt, j.started_at, j.started_at IS NOT NULL AS started,
    CASE
      WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
      WHEN j.started_at IS NULL THEN 'pending'
      WHEN j.retry_kind = 'indefinite' OR (j.retry_kind = 'transient' AND j.attempt < j.max_attempts) THEN 'pending'
      ELSE 'crashed'
    END AS to_state
  FROM {schema}.jobs j JOIN expired e ON e.id = j.id
),
upd AS (
  UPDATE {schema}.jobs AS j
  SET status = d.to_state::{schema}.job_status,
      -- An attempt that never started used no budget, whatever status the job ends in.
      attempt = CASE WHEN d.started THEN j.attempt ELSE greatest(j.attempt - 1, 0) END,
      locked_by_worker = NULL,
      lock_expires_at = NULL,
      finished_at = CASE WHEN d.to_state = 'pending' THEN NULL ELSE clock_timestamp() END,
      scheduled_at = CASE WHEN d.to_state = 'pending' THEN clock_timestamp() ELSE j.scheduled_at END,
      cancel_requested_at = CASE WHEN d.to_state = 'pending' THEN NULL ELSE j.cancel_requested_at END,
      cancel_phase = CASE WHEN d.to_state = 'pending' THEN 0 ELSE j.cancel_phase END,
      error_class = CASE
        WHEN d.started THEN 'WorkerCrashed'
        WHEN d.to_state = 'cancelled' THEN 'CancelRequested'
        ELSE j.error_class END,
      error_message = CASE
        WHEN d.started THEN 'the worker holding the job stopped renewing its lease (it crashed or lost its connection)'
        WHEN d.to_state = 'cancelled' THEN 'cancelled by request before its handler started'
        ELSE j.error_message END,
      error_traceback = CASE WHEN d.started OR d.to_state = 'cancelled' THEN NULL ELSE j.error_traceback END
  FROM decided d
  WHERE j.id = d.id AND j.status = 'running'
  RETURNING j.id, d.to_state, d.locked_by_worker, d.attempt, d.started_at, d.started
),
attempts AS (
  INSERT INTO {schema}.job_attempt_log (job_id, attempt, worker_id, started_at, finished_at, outcome, error_class, error_message)
  SELECT u.id, u.attempt, u.locked_by_worker, u.started_at, clock_timestamp(), 'crashed', 'WorkerCrashed',
         'the worker holding the job stopped renewing its lease'
  FROM upd u
  WHERE u.started
  RETURNING 1
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT u.id, 'state_change',
         jsonb_build_object('from_state', 'running', 'to_state', u.to_state, 'reason', 'lock_expired',
                            'worker_id', u.locked_by_worker, 'attempt', u.attempt)
           || CASE WHEN u.started THEN '{}'::jsonb ELSE '{"handler_started": false}'::jsonb END
  FROM upd u
  RETURNING 1
),
wake AS (
  SELECT pg_notify($4, '') FROM upd HAVING count(*) > 0
)
SELECT (SELECT count(*) FROM upd)::int AS reclaimed,
       (SELECT count(*) FROM upd WHERE to_state = 'pending')::int AS retried,
       coalesce((SELECT array_agg(id::text) FROM upd WHERE to_state <> 'pending'), '{}') AS ended_ids,
       (SELECT count(*) FROM attempts)::int AS attempts,
       (SELECT count(*) FROM events)::int AS events,
       (SELECT count(*) FROM wake)::int AS woke;

-- name: deadlineSweep
-- Sweep 2: pending and scheduled jobs past their deadline fail with DeadlineExceeded (database
-- clock). Running jobs are not touched: their next retry is refused instead. The failed jobs come back
-- for the caller to announce on the done channel.
-- $1 limit
WITH due AS (
  SELECT j.id, j.status::text AS from_state FROM {schema}.jobs j
  WHERE j.status IN ('pending', 'scheduled') AND j.schedule_to_close IS NOT NULL
    AND j.schedule_to_close < clock_timestamp()
  ORDER BY j.schedule_to_close
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
upd AS (
  UPDATE {schema}.jobs AS j
  SET status = 'failed', finished_at = clock_timestamp(), error_class = 'DeadlineExceeded',
      error_message = 'the job did not finish before its deadline (schedule_to_close)', error_traceback = NULL
  FROM due d
  WHERE j.id = d.id AND j.status IN ('pending', 'scheduled')
  RETURNING j.id, d.from_state
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change', jsonb_build_object('from_state', from_state, 'to_state', 'failed', 'reason', 'deadline_exceeded')
  FROM upd
  RETURNING 1
)
SELECT coalesce((SELECT array_agg(id::text) FROM upd), '{}') AS failed_ids,
       (SELECT count(*) FROM events)::int AS events;

-- name: sweepExpiredResults
-- Drops stored results past result_expires_at (the jobs stay; wait() then reports ResultUnavailable).
WITH due AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.result IS NOT NULL AND j.result_expires_at IS NOT NULL AND j.result_expires_at < clock_timestamp()
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobs AS j SET result = NULL, result_size_bytes = NULL
FROM due WHERE j.id = due.id;

-- name: cleanupStaleWorkers
DELETE FROM {schema}.workers WHERE last_seen_at < clock_timestamp() - $1::float8 * interval '1 millisecond';

-- name: strandedActors
-- Actors with pending or scheduled jobs but no actor_config row: no worker has ever registered
-- them (or they were removed), so their jobs will never be claimed.
SELECT j.actor, count(*)::int AS jobs
FROM {schema}.jobs j
WHERE j.status IN ('pending', 'scheduled')
  AND NOT EXISTS (SELECT 1 FROM {schema}.actor_config ac WHERE ac.actor = j.actor)
GROUP BY j.actor
ORDER BY j.actor;

-- name: pruneJobs
-- Sweep 5: moves up to $1 terminal jobs past their status's retention from jobs to jobs_archive,
-- with their attempts (to job_attempts_archive), in one statement. Their events are deleted with
-- them (not archived). $2..$6 retention ms of succeeded, failed, cancelled, abandoned (also crashed),
-- $7 archive retention ms.
WITH doomed AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.finished_at IS NOT NULL
    AND j.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned')
    AND j.finished_at < clock_timestamp() - (CASE j.status
          WHEN 'succeeded' THEN $2::float8
          WHEN 'failed' THEN $3::float8
          WHEN 'cancelled' THEN $4::float8
          ELSE $5::float8
        END) * interval '1 millisecond'
  ORDER BY j.finished_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
old_attempts AS (
  SELECT a.* FROM {schema}.job_attempts a JOIN doomed d ON d.id = a.job_id
),
removed AS (
  DELETE FROM {schema}.jobs j USING doomed d WHERE j.id = d.id
  RETURNING j.*
),
archived AS (
  INSERT INTO {schema}.jobs_archive (
    id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, status, priority, attempt,
    max_attempts, retry_kind, schedule_to_close, start_to_close, heartbeat_timeout, created_at, scheduled_at,
    started_at, finished_at, last_heartbeat_at, locked_by_worker, lock_expires_at, cancel_requested_at,
    cancel_phase, error_class, error_message, error_traceback, progress_state, progress_seq, result,
    result_size_bytes, result_expires_at, idempotency_key, idempotency_scope, trace_id, span_id, metadata, tags,
    heartbeat_details, archived_at, expire_at)
  SELECT id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, status, priority, attempt,
    max_attempts, retry_kind, schedule_to_close, start_to_close, heartbeat_timeout, created_at, scheduled_at,
    started_at, finished_at, last_heartbeat_at, locked_by_worker, lock_expires_at, cancel_requested_at,
    cancel_phase, error_class, error_message, error_traceback, progress_state, progress_seq, result,
    result_size_bytes, result_expires_at, idempotency_key, idempotency_scope, trace_id, span_id, metadata, tags,
    heartbeat_details, clock_timestamp(), clock_timestamp() + $6::float8 * interval '1 millisecond'
  FROM removed
  RETURNING 1
),
archived_attempts AS (
  INSERT INTO {schema}.job_attempts_archive (id, job_id, attempt, worker_id, started_at, finished_at, duration_ms,
    outcome, error_class, error_message, error_traceback)
  SELECT id, job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome, error_class, error_message,
    error_traceback
  FROM old_attempts
  RETURNING 1
)
SELECT (SELECT count(*) FROM archived)::int AS archived, (SELECT count(*) FROM archived_attempts)::int AS attempts;

-- name: expireArchive
-- Sweep 6: hard-deletes archived jobs past expire_at (their archived attempts cascade).
WITH doomed AS (
  SELECT a.id FROM {schema}.jobs_archive a WHERE a.expire_at < clock_timestamp() ORDER BY a.expire_at LIMIT $1
)
DELETE FROM {schema}.jobs_archive a USING doomed d WHERE a.id = d.id;

-- name: pollReclaimEvents
-- The crash-reclaim feed: events after the cursor, older than the visibility delay (a trailing
-- watermark: a transaction still holding a lower id has had that long to commit).
SELECT e.id::text AS event_id, e.job_id, e.occurred_at, e.kind, e.detail
FROM {schema}.job_event_log e
WHERE e.id > $1::bigint AND e.kind = 'state_change' AND (e.detail ->> 'reason') = 'lock_expired'
  AND e.occurred_at < clock_timestamp() - $3::float8 * interval '1 millisecond'
ORDER BY e.id
LIMIT $2;

-- name: reclaimVisibilityRisk
-- Transactions holding job_event_log open (write lock) for longer than the margin: a reclaim event
-- they insert could commit behind an advanced cursor. A proxy signal, not proof.
SELECT a.pid, a.application_name, a.state, a.xact_start,
       (extract(epoch FROM (clock_timestamp() - a.xact_start)) * 1000)::float8 AS open_ms,
       left(a.query, 200) AS query
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.relation = to_regclass($1)
  AND l.mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
  AND a.pid <> pg_backend_pid()
  AND a.xact_start < clock_timestamp() - $2::float8 * interval '1 millisecond';

-- name: statisticsRefreshLock
-- Held for the rest of the transaction by the one session refreshing `jobs` statistics ($1 the
-- lock's name): the workers of a fleet start together, and each found the statistics stale.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0));

-- name: jobsStatisticsStale
-- True when the planner has no usable statistics for `jobs`: never analyzed (reltuples < 0) or
-- analyzed while empty (0: an ANALYZE of an empty table stores no column statistics) yet more than
-- 20 pages on disk, or ten times the pages it had at the last analyze or vacuum. Fresh tables
-- filled in a burst are the case: with default selectivities the claim statement sorts the whole
-- backlog instead of walking the dispatch index, so each claim costs in proportion to the backlog
-- and a worker behind a growing one falls further behind with every claim. File size is read live,
-- unlike the cumulative statistics.
SELECT (c.reltuples <= 0 AND p.pages > 20) OR p.pages > 10 * greatest(c.relpages, 20) AS stale
FROM pg_class c
CROSS JOIN LATERAL (
  SELECT pg_relation_size(c.oid) / current_setting('block_size')::int AS pages
) p
WHERE c.oid = '{schema}.jobs'::regclass;
