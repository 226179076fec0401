-- name: settle
-- Writes the outcome of many attempts in one statement. Each item updates its job only while this
-- worker still owns it (status = 'running' AND locked_by_worker = the item's worker): a job that was
-- reclaimed or abandoned meanwhile is left alone (a no-op, not an error). For every job written, the
-- same statement inserts its job_attempts row and its job_events row.
--
-- Item kinds:
--   succeeded   → succeeded; result stored; result_expires_at from the stored actor_config.result_ttl,
--                 else the actor's literal ($5), else the enqueue-time value (database clock).
--   failed      → delay null: failed. Otherwise a retry after delay ms (0 = pending at once),
--                 unless clock_timestamp() + delay passes schedule_to_close: failed, DeadlineExceeded.
--   cancelled   → cancelled.
--   reschedule  → Snooze / RetryAfter / rate-limit denial: like a retry; consume_budget = false
--                 gives the attempt back; a transient job out of attempts fails MaxAttemptsExceeded.
--   release     → worker shutdown: back to pending at once, attempt given back.
-- A cancel requested while the attempt ran wins over any path that would run the job again.
--
-- $1 ids, $2 worker ids, $3 kinds, $4 results (json text), $5 fallback result ttl ms, $6 result sizes,
-- $7 delays ms, $8 consume budget, $9 attempt outcomes, $10 error classes, $11 error messages,
-- $12 error tracebacks, $13 progress seqs, $14 progress states (json text), $15 handler start times
-- (epoch ms), $16 durations ms, $17 heartbeat details (json text)
-- No NOTIFY here: the caller announces finished jobs (done channel) and re-pended ones (wake
-- channel) with the `announce` statement after this one commits. Postgres serialises the commits
-- of all transactions that NOTIFY, WAL flush included, behind one lock; a NOTIFY in a transaction
-- that writes nothing holds it for microseconds.
-- Each column but the ids is an array (one value per item) or, when every item agrees, one value
-- ($18–$33, in the same order): see batch-column.ts.
WITH items AS (
  SELECT t.id,
    coalesce(t.worker_id, $18::uuid) AS worker_id,
    coalesce(t.kind, $19::text) AS kind,
    coalesce(t.result, $20::text) AS result,
    coalesce(t.ttl_ms, $21::float8) AS ttl_ms,
    coalesce(t.result_size, $22::int) AS result_size,
    coalesce(t.delay_ms, $23::float8) AS delay_ms,
    coalesce(t.consume_budget, $24::bool) AS consume_budget,
    coalesce(t.outcome, $25::text) AS outcome,
    coalesce(t.error_class, $26::text) AS error_class,
    coalesce(t.error_message, $27::text) AS error_message,
    coalesce(t.error_traceback, $28::text) AS error_traceback,
    coalesce(t.progress_seq, $29::int) AS progress_seq,
    coalesce(t.progress_state, $30::text) AS progress_state,
    -- Sent as epoch milliseconds: a number is cheaper to make and to read than timestamp text.
    to_timestamp(coalesce(t.handler_started_ms, $31::float8) / 1000) AS handler_started_at,
    coalesce(t.duration_ms, $32::float8) AS duration_ms,
    coalesce(t.heartbeat_details, $33::text) AS heartbeat_details
  FROM unnest(
    $1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::float8[], $6::int[], $7::float8[], $8::bool[],
    $9::text[], $10::text[], $11::text[], $12::text[], $13::int[], $14::text[], $15::float8[], $16::float8[],
    $17::text[]
  ) AS t(id, worker_id, kind, result, ttl_ms, result_size, delay_ms, consume_budget, outcome, error_class,
         error_message, error_traceback, progress_seq, progress_state, handler_started_ms, duration_ms, heartbeat_details)
),
-- What each outcome decides on its own, before the job row is read (the rest is decided in `upd`,
-- against the row it updates: one read of each job, not one to decide and one to write).
--   final_status  the status whatever the row says: succeeded, cancelled, or failed without a retry;
--                 null when the job may run again (a retry, a reschedule, a release).
--   retry_at      when it would run again (clock_timestamp() + delay), checked against
--                 schedule_to_close: past it, the outcome fails with DeadlineExceeded.
--   counts_budget a reschedule that uses an attempt: fails MaxAttemptsExceeded when the job is out of them.
--   give_back     the attempt is given back (a release, a reschedule that uses no budget).
outcome AS (
  SELECT i.*,
    CASE
      WHEN i.kind IN ('succeeded', 'cancelled') THEN i.kind
      WHEN i.kind = 'failed' AND i.delay_ms IS NULL THEN 'failed'
    END AS final_status,
    clock_timestamp() + coalesce(i.delay_ms, 0) * interval '1 millisecond' AS retry_at,
    (i.kind IN ('failed', 'reschedule') AND i.delay_ms IS NOT NULL) AS has_deadline_check,
    (i.kind = 'reschedule' AND i.consume_budget) AS counts_budget,
    (i.kind = 'release' OR (i.kind = 'reschedule' AND NOT i.consume_budget)) AS give_back
  FROM items i
),
upd AS (
  UPDATE {schema}.jobs AS j
  SET status = (CASE
        WHEN o.final_status IS NOT NULL THEN o.final_status
        WHEN o.has_deadline_check AND o.retry_at > j.schedule_to_close THEN 'failed'
        WHEN o.counts_budget AND j.retry_kind = 'transient' AND j.attempt >= j.max_attempts THEN 'failed'
        -- A cancel requested while the attempt ran wins over running the job again.
        WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
        WHEN o.kind = 'release' OR coalesce(o.delay_ms, 0) = 0 THEN 'pending'
        ELSE 'scheduled'
      END)::{schema}.job_status,
      -- A snooze, a denial or an interrupted attempt used no budget, whatever status the job ends in
      -- (a cancel requested meanwhile wins over running it again, but the count stays honest).
      attempt = CASE WHEN o.give_back THEN j.attempt - 1 ELSE j.attempt END,
      -- The next three columns test "the job runs again": none of the first four WHEN branches above.
      scheduled_at = CASE
        WHEN o.final_status IS NULL AND NOT coalesce(o.has_deadline_check AND o.retry_at > j.schedule_to_close, false)
             AND NOT (o.counts_budget AND j.retry_kind = 'transient' AND j.attempt >= j.max_attempts)
             AND j.cancel_requested_at IS NULL
        THEN o.retry_at ELSE j.scheduled_at END,
      finished_at = CASE
        WHEN o.final_status IS NULL AND NOT coalesce(o.has_deadline_check AND o.retry_at > j.schedule_to_close, false)
             AND NOT (o.counts_budget AND j.retry_kind = 'transient' AND j.attempt >= j.max_attempts)
             AND j.cancel_requested_at IS NULL
        THEN NULL ELSE clock_timestamp() END,
      cancel_phase = CASE
        WHEN o.final_status IS NULL AND NOT coalesce(o.has_deadline_check AND o.retry_at > j.schedule_to_close, false)
             AND NOT (o.counts_budget AND j.retry_kind = 'transient' AND j.attempt >= j.max_attempts)
             AND j.cancel_requested_at IS NULL
        THEN 0 ELSE j.cancel_phase END,
      locked_by_worker = NULL,
      lock_expires_at = NULL,
      error_class = CASE
        WHEN o.kind = 'succeeded' THEN NULL
        WHEN o.has_deadline_check AND o.retry_at > j.schedule_to_close THEN 'DeadlineExceeded'
        WHEN o.counts_budget AND j.retry_kind = 'transient' AND j.attempt >= j.max_attempts THEN 'MaxAttemptsExceeded'
        ELSE coalesce(o.error_class, j.error_class)
      END,
      error_message = CASE WHEN o.kind = 'succeeded' THEN NULL ELSE coalesce(o.error_message, j.error_message) END,
      error_traceback = CASE WHEN o.kind = 'succeeded' THEN NULL ELSE coalesce(o.error_traceback, j.error_traceback) END,
      result = CASE WHEN o.kind = 'succeeded' THEN o.result::jsonb ELSE j.result END,
      result_size_bytes = CASE WHEN o.kind = 'succeeded' THEN o.result_size ELSE j.result_size_bytes END,
      result_expires_at = CASE
        WHEN o.kind <> 'succeeded' THEN j.result_expires_at
        ELSE coalesce(
          -- Looked up only while some actor has a stored result_ttl (checked once per statement).
          CASE WHEN (SELECT EXISTS (SELECT 1 FROM {schema}.actor_config WHERE result_ttl IS NOT NULL)) THEN
            (SELECT clock_timestamp() + ac.result_ttl FROM {schema}.actor_config ac
              WHERE ac.actor = j.actor AND ac.result_ttl IS NOT NULL)
          END,
          clock_timestamp() + o.ttl_ms * interval '1 millisecond',
          j.result_expires_at)
      END,
      progress_seq = CASE WHEN o.progress_seq IS NOT NULL AND o.progress_seq > j.progress_seq THEN o.progress_seq ELSE j.progress_seq END,
      progress_state = CASE
        WHEN o.progress_seq IS NOT NULL AND o.progress_seq > j.progress_seq AND o.progress_state IS NOT NULL
        THEN o.progress_state::jsonb ELSE j.progress_state END,
      heartbeat_details = coalesce(o.heartbeat_details::jsonb, j.heartbeat_details)
  FROM outcome o
  -- `status::text` on purpose: it keeps the planner off jobs_running_idx. The prepared statement runs
  -- a generic plan, which expects one running job and ten items; with that index it would scan the
  -- running index and join every running job to every item (a nested loop over the CTE), a cost of
  -- running jobs times items. Without that index the only good path is the primary key, once per
  -- item.
  WHERE j.id = o.id AND j.status::text = 'running' AND j.locked_by_worker = o.worker_id
  -- The item's own fields come back with the row, so the inserts below need no join (a join of
  -- two CTEs is planned as a nested loop when the plan is generic: quadratic in the batch). The
  -- attempt that ran is the stored one plus the attempt given back, if any.
  RETURNING j.id, j.status::text AS status, j.error_class, j.actor,
            o.kind, o.outcome, o.worker_id, j.attempt + CASE WHEN o.give_back THEN 1 ELSE 0 END AS ran_attempt,
            o.handler_started_at, o.duration_ms,
            o.error_class AS item_error_class, o.error_message AS item_error_message,
            o.error_traceback AS item_error_traceback
),
attempts AS (
  INSERT INTO {schema}.job_attempt_log (job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome,
                                     error_class, error_message, error_traceback)
  SELECT u.id, u.ran_attempt, u.worker_id, u.handler_started_at, clock_timestamp(), u.duration_ms,
         CASE u.kind
           WHEN 'succeeded' THEN 'succeeded'
           WHEN 'failed' THEN 'failed'
           WHEN 'cancelled' THEN 'cancelled'
           WHEN 'release' THEN 'interrupted'
           ELSE u.outcome
         END,
         CASE WHEN u.kind = 'succeeded' THEN NULL ELSE u.item_error_class END,
         CASE WHEN u.kind = 'succeeded' THEN NULL ELSE u.item_error_message END,
         CASE WHEN u.kind = 'succeeded' THEN NULL ELSE u.item_error_traceback END
  FROM upd u
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT u.id, 'state_change',
         -- The usual detail (a first attempt succeeded, every item of the batch from one worker: $18)
         -- is built once per statement, not per row (jsonb_build_object is costly per row).
         CASE WHEN u.kind = 'succeeded' AND u.status = 'succeeded' AND u.ran_attempt = 1 AND u.worker_id = $18::uuid
           THEN (SELECT jsonb_build_object('from_state', 'running', 'to_state', 'succeeded', 'reason', 'succeeded',
                                           'worker_id', $18::uuid, 'attempt', 1))
           ELSE jsonb_strip_nulls(jsonb_build_object(
             'from_state', 'running', 'to_state', u.status,
             'reason', CASE u.kind WHEN 'reschedule' THEN u.outcome WHEN 'release' THEN 'worker_shutdown' ELSE u.kind END,
             'worker_id', u.worker_id, 'attempt', u.ran_attempt, 'error_class', u.error_class))
         END
  FROM upd u
),
-- A succeeded item whose row was written ends `succeeded` with no error class, which the caller
-- knows already: those rows come back only when some succeeded item was not written (this worker
-- no longer owned its job), so that the caller can tell which. Every other item comes back with
-- what its row says. One row (id NULL) carries the count of succeeded items written. Otherwise a
-- busy worker would receive a row per job that tells it nothing new.
written AS (
  SELECT count(*) FILTER (WHERE u.kind = 'succeeded')::int AS n FROM upd u
)
-- `attempts` and `events` run although nothing reads them: a data-modifying WITH query always runs
-- to completion.
SELECT u.id, u.status, u.error_class, NULL::int AS succeeded
FROM upd u
WHERE u.kind <> 'succeeded'
   OR (SELECT n FROM written) < (SELECT count(*) FROM items i WHERE i.kind = 'succeeded')
UNION ALL
SELECT NULL, NULL, NULL, (SELECT n FROM written);

-- name: settleSucceeded
-- `settle` for a batch of successes only, none carrying a progress snapshot or heartbeat details:
-- a busy worker's usual batch. It records what `settle` records for such items (the job succeeded,
-- its result and result_expires_at, its attempt, its running → succeeded event) under the same
-- ownership guard, and returns the same rows, with a plan a fraction of the size: no outcome to
-- decide, and an UPDATE that sets its columns to known values instead of computing twenty with
-- CASE. The attempt and the event are not inserted: the job row carries them (`success_*`, with
-- ids from the history tables' sequences) and the `job_attempts` and `job_events` views read them
-- from there (migration 0007), so a success costs one row version instead of three rows.
--
-- $1 ids, $2 worker ids, $3 results (json text), $4 fallback result ttl ms, $5 result sizes,
-- $6 handler start times (epoch ms), $7 durations ms; $8–$13 the same columns' values when every
-- item agrees (batch-column.ts).
WITH items AS (
  SELECT t.id,
    coalesce(t.worker_id, $8::uuid) AS worker_id,
    coalesce(t.result, $9::text) AS result,
    coalesce(t.ttl_ms, $10::float8) AS ttl_ms,
    coalesce(t.result_size, $11::int) AS result_size,
    to_timestamp(coalesce(t.handler_started_ms, $12::float8) / 1000) AS handler_started_at,
    coalesce(t.duration_ms, $13::float8) AS duration_ms
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::float8[], $5::int[], $6::float8[], $7::float8[])
    AS t(id, worker_id, result, ttl_ms, result_size, handler_started_ms, duration_ms)
),
upd AS (
  UPDATE {schema}.jobs AS j
  SET status = 'succeeded',
      finished_at = clock_timestamp(),
      locked_by_worker = NULL,
      lock_expires_at = NULL,
      error_class = NULL,
      error_message = NULL,
      error_traceback = NULL,
      result = i.result::jsonb,
      result_size_bytes = i.result_size,
      success_attempt_id = nextval('{schema}.job_attempt_log_id_seq'::regclass),
      success_event_id = nextval('{schema}.job_event_log_id_seq'::regclass),
      success_worker_id = i.worker_id,
      success_started_at = i.handler_started_at,
      success_duration_ms = i.duration_ms,
      -- As in `settle`: the stored actor_config.result_ttl, else the actor's literal, else the
      -- enqueue-time value.
      result_expires_at = coalesce(
        CASE WHEN (SELECT EXISTS (SELECT 1 FROM {schema}.actor_config WHERE result_ttl IS NOT NULL)) THEN
          (SELECT clock_timestamp() + ac.result_ttl FROM {schema}.actor_config ac
            WHERE ac.actor = j.actor AND ac.result_ttl IS NOT NULL)
        END,
        clock_timestamp() + i.ttl_ms * interval '1 millisecond',
        j.result_expires_at)
  FROM items i
  -- `status::text`: see `settle` (keeps the generic plan on the primary key).
  WHERE j.id = i.id AND j.status::text = 'running' AND j.locked_by_worker = i.worker_id
  RETURNING j.id
),
written AS (
  SELECT count(*)::int AS n FROM upd
)
-- The rows `settle` would return for these items: the count row, and each written item's row only
-- when some item was not written.
SELECT u.id, 'succeeded'::text AS status, NULL::text AS error_class, NULL::int AS succeeded
FROM upd u
WHERE (SELECT n FROM written) < (SELECT count(*) FROM items)
UNION ALL
SELECT NULL, NULL, NULL, (SELECT n FROM written);
