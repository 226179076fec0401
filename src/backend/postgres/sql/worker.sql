-- name: heartbeatJobs
-- Renews the leases of the given jobs while this worker still owns them, storing each handler's
-- latest heartbeat details when it sent any; returns the ids renewed and those skipped (a missing
-- id means the job was reclaimed or finished elsewhere). A row another transaction holds is
-- skipped, not waited for, and returned when the statement's snapshot has it owned. The holder is
-- most often this worker's own outcome write (a finished job keeps its lease until its outcome
-- lands), which the heartbeat must neither wait for nor deadlock with, or a batch's abort. Waiting
-- would hold every other lease of the worker behind that one row; the next tick renews it.
WITH mine AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.id = ANY($2::uuid[]) AND j.status = 'running' AND j.locked_by_worker = $1
),
free AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.id IN (SELECT id FROM mine)
  FOR UPDATE SKIP LOCKED
),
renewed AS (
  UPDATE {schema}.jobs AS j
  SET lock_expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond',
      last_heartbeat_at = clock_timestamp(),
      heartbeat_details = coalesce(h.details::jsonb, j.heartbeat_details)
  FROM free f JOIN unnest($2::uuid[], $4::text[]) AS h(id, details) ON h.id = f.id
  WHERE j.id = f.id AND j.status = 'running' AND j.locked_by_worker = $1
  RETURNING j.id
)
SELECT id FROM renewed
UNION ALL
SELECT id FROM mine WHERE id NOT IN (SELECT id FROM free);

-- name: pollCancelFlags
-- Running jobs of this worker with a cancel requested, and the phase stored for each.
SELECT j.id, j.cancel_phase FROM {schema}.jobs j
WHERE j.locked_by_worker = $1 AND j.status = 'running' AND j.cancel_requested_at IS NOT NULL;

-- name: writeCancelEscalation
-- Phase 2 of a cancel: recorded (with its event) before the worker acts on it. $3 = 'shutdown' is
-- the worker's own escalation at shutdown (FORCING), which may start from phase 0 (no caller's
-- cancel); it leaves cancel_requested_at alone, so reclaim and settle do not mistake it for one.
WITH cur AS (
  SELECT j.id, j.cancel_phase AS from_phase FROM {schema}.jobs j
  WHERE j.id = $1 AND j.locked_by_worker = $2 AND j.status = 'running'
    AND (j.cancel_phase = 1 OR ($3::text = 'shutdown' AND j.cancel_phase = 0))
),
upd AS (
  UPDATE {schema}.jobs AS j SET cancel_phase = 2
  FROM cur
  WHERE j.id = cur.id AND j.locked_by_worker = $2 AND j.status = 'running' AND j.cancel_phase = cur.from_phase
  RETURNING j.id, cur.from_phase
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change',
         jsonb_build_object('from_state', 'running', 'to_state', 'running',
                            'reason', CASE WHEN $3::text = 'shutdown' THEN 'shutdown_escalated' ELSE 'cancel_escalated' END,
                            'from_phase', from_phase, 'to_phase', 2, 'worker_id', $2::uuid)
  FROM upd
  RETURNING 1
)
SELECT (SELECT count(*) FROM upd)::int AS escalated, (SELECT count(*) FROM events)::int AS events;

-- name: markAbandoned
-- Phase 3 of a cancel: the handler ignored both graces; the job ends abandoned (only from phase 2).
-- $5 = 'shutdown' when the worker gave the handler up at shutdown (ABANDONING) rather than after a cancel.
-- $3 / $4 the handler's last progress (seq, state JSON) when newer than the stored one. The caller
-- announces the job on the done channel once this commits.
WITH upd AS (
  UPDATE {schema}.jobs AS j
  SET status = 'abandoned', finished_at = clock_timestamp(), locked_by_worker = NULL, lock_expires_at = NULL,
      error_class = 'Abandoned',
      error_message = CASE WHEN $5::text = 'shutdown'
        THEN 'the handler did not stop when the worker shut down, through the cancellation and cleanup graces'
        ELSE 'the handler did not stop after the cancel request, through the cancellation and cleanup graces' END,
      progress_seq = CASE WHEN $3::int IS NOT NULL AND $3::int > j.progress_seq THEN $3::int ELSE j.progress_seq END,
      progress_state = CASE WHEN $3::int IS NOT NULL AND $3::int > j.progress_seq AND $4::text IS NOT NULL
                            THEN $4::jsonb ELSE j.progress_state END
  WHERE j.id = $1 AND j.locked_by_worker = $2 AND j.status = 'running' AND j.cancel_phase = 2
  RETURNING j.id, j.attempt, j.started_at
),
attempts AS (
  INSERT INTO {schema}.job_attempt_log (job_id, attempt, worker_id, started_at, finished_at, outcome, error_class, error_message)
  SELECT id, attempt, $2::uuid, started_at, clock_timestamp(), 'abandoned', 'Abandoned',
         CASE WHEN $5::text = 'shutdown' THEN 'the handler ignored the worker''s shutdown'
              ELSE 'the handler ignored the cancel request' END
  FROM upd
  RETURNING 1
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change',
         jsonb_build_object('from_state', 'running', 'to_state', 'abandoned',
                            'reason', CASE WHEN $5::text = 'shutdown' THEN 'shutdown_abandoned' ELSE 'cancel_abandoned' END,
                            'worker_id', $2::uuid, 'attempt', attempt)
  FROM upd
  RETURNING 1
)
SELECT (SELECT count(*) FROM upd)::int AS abandoned, (SELECT count(*) FROM attempts)::int AS attempts,
       (SELECT count(*) FROM events)::int AS events;

-- name: flushProgress
-- Writes coalesced progress of running jobs this worker owns (never moving seq backwards) and returns
-- the jobs written, for the caller to announce on the progress channel once this commits.
WITH upd AS (
  UPDATE {schema}.jobs AS j
  SET progress_seq = p.seq, progress_state = p.state::jsonb
  FROM unnest($2::uuid[], $3::int[], $4::text[]) AS p(id, seq, state)
  WHERE j.id = p.id AND j.status = 'running' AND j.locked_by_worker = $1 AND j.progress_seq < p.seq
  RETURNING j.id
)
SELECT coalesce(array_agg(id::text), '{}') AS flushed_ids FROM upd;

-- name: repend
-- Puts jobs this worker claimed but never started back to pending, giving the attempt back
-- (graceful shutdown). A job whose cancel was requested meanwhile ends cancelled instead (its
-- attempt given back too): as the reclaim sweep does with an unstarted job of a dead worker. One
-- event row per job, no attempt row (no attempt ran). The cancelled ones come back for the caller to
-- announce on the done channel.
WITH upd AS (
  UPDATE {schema}.jobs AS j
  SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END::{schema}.job_status,
      attempt = greatest(j.attempt - 1, 0), locked_by_worker = NULL, lock_expires_at = NULL,
      started_at = NULL,
      scheduled_at = CASE WHEN j.cancel_requested_at IS NULL THEN clock_timestamp() ELSE j.scheduled_at END,
      finished_at = CASE WHEN j.cancel_requested_at IS NULL THEN NULL ELSE clock_timestamp() END,
      error_class = CASE WHEN j.cancel_requested_at IS NULL THEN j.error_class ELSE 'CancelRequested' END,
      error_message = CASE WHEN j.cancel_requested_at IS NULL THEN j.error_message
                           ELSE 'cancelled by request before its handler started' END,
      error_traceback = CASE WHEN j.cancel_requested_at IS NULL THEN j.error_traceback END
  WHERE j.id = ANY ($2::uuid[]) AND j.status = 'running' AND j.locked_by_worker = $1
  RETURNING j.id, j.status::text AS status
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change', jsonb_build_object('from_state', 'running', 'to_state', status, 'reason', 'drained', 'worker_id', $1::uuid)
  FROM upd
  RETURNING 1
),
wake AS (
  SELECT pg_notify($3, '') FROM upd WHERE status = 'pending' HAVING count(*) > 0
)
SELECT (SELECT count(*) FROM upd)::int AS repended, (SELECT count(*) FROM events)::int AS events,
       coalesce((SELECT array_agg(id::text) FROM upd WHERE status = 'cancelled'), '{}') AS cancelled_ids,
       (SELECT count(*) FROM wake)::int AS woke;

-- name: registerWorker
INSERT INTO {schema}.workers (id, hostname, pid, worker_label, queues, max_concurrency, taskq_version)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET last_seen_at = clock_timestamp();

-- name: touchWorker
UPDATE {schema}.workers SET last_seen_at = clock_timestamp() WHERE id = $1;

-- name: deregisterWorker
DELETE FROM {schema}.workers WHERE id = $1;

-- name: insertActorConfigs
-- Creates missing actor_config rows. Capacity columns start NULL: the code literal applies until an
-- operator stores a value, and stored values are never overwritten by a worker.
-- Returns the created rows whose actor has finished jobs: it ran before, so its row existed (a
-- worker creates it before running anything) and was removed since — deregistered. Only created
-- rows are checked, so this read runs once per new actor, not at every start.
WITH created AS (
  INSERT INTO {schema}.actor_config (actor, queue, metadata)
  SELECT a.actor, a.queue, a.metadata::jsonb
  FROM unnest($1::text[], $2::text[], $3::text[]) AS a(actor, queue, metadata)
  ON CONFLICT (actor) DO NOTHING
  RETURNING actor
)
SELECT c.actor FROM created c
WHERE EXISTS (
  SELECT 1 FROM {schema}.jobs j
  WHERE j.actor = c.actor AND j.status NOT IN ('pending', 'scheduled', 'running')
);

-- name: getActorConfigs
SELECT actor, queue, max_concurrent, max_pending, (extract(epoch FROM result_ttl) * 1000)::float8 AS result_ttl_ms,
       metadata, updated_at
FROM {schema}.actor_config
WHERE $1::text[] IS NULL OR actor = ANY ($1::text[])
ORDER BY actor;

-- name: updateActorConfigStructure
UPDATE {schema}.actor_config
SET queue = $2, metadata = $3::jsonb, updated_at = clock_timestamp()
WHERE actor = $1;

-- name: scheduledToPending
-- Sweep 3: promotes due scheduled jobs (database clock), wakes producers, and reports when the next
-- scheduled job is due so the leader can sleep exactly that long (short retry delays stay short).
WITH due AS (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.status = 'scheduled' AND j.scheduled_at <= clock_timestamp()
  ORDER BY j.scheduled_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
upd AS (
  UPDATE {schema}.jobs AS j SET status = 'pending'
  FROM due WHERE j.id = due.id AND j.status = 'scheduled'
  RETURNING j.id
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change', '{"from_state": "scheduled", "to_state": "pending", "reason": "due"}'::jsonb FROM upd
  RETURNING 1
),
wake AS (
  SELECT pg_notify($2, '') FROM upd HAVING count(*) > 0
)
SELECT (SELECT count(*) FROM upd)::int AS promoted,
       (SELECT count(*) FROM events)::int AS events,
       (SELECT count(*) FROM wake)::int AS woke,
       (SELECT (extract(epoch FROM (min(s.scheduled_at) - clock_timestamp())) * 1000)::float8
          FROM {schema}.jobs s WHERE s.status = 'scheduled' AND s.scheduled_at > clock_timestamp()) AS next_due_ms;

-- name: announce
-- Sends NOTIFYs ($1 channels, $2 payloads, pairwise) in a transaction that writes nothing, after the
-- write they announce has committed: a reader woken by one sees that write. (A NOTIFY inside a
-- writing transaction holds the server-wide notify lock through that transaction's WAL flush.)
SELECT count(pg_notify(n.channel, n.payload))::int AS sent
FROM unnest($1::text[], $2::text[]) AS n(channel, payload);
