-- name: explainJob
-- The facts `tq.explain(jobId)` decides from (Backend.explainJob), in one statement and one round
-- trip: one row for the job (none when it does not exist) with each fact beside it; the lists are
-- arrays bounded by $3. Every time predicate reads one database clock reading (`n.t`), the one
-- the job's `scheduled_at` is compared with. Nothing is locked: the answer is a snapshot.
-- The running jobs are read through jobs_running_idx (the running set is small); the jobs ahead
-- through the two pending dispatch indexes, at most 1001 of them (EXPLAIN_AHEAD_COUNT_CAP + 1 in
-- explain-facts.ts: a literal, so that the generic plan knows the bound) so that a deep backlog
-- costs a bounded scan (see `ahead`).
--   $1 job id, $2 alive window ms (workers), $3 longest id list
WITH n AS (
  SELECT clock_timestamp() AS t
),
target AS (
  SELECT t.id, t.queue, t.actor, t.status, t.priority, t.scheduled_at FROM {schema}.jobs t WHERE t.id = $1
),
-- The jobs ahead in dispatch order: higher priority, or the same priority and an earlier
-- (scheduled_at, id). Only for a pending job (a scheduled one is not in line yet). Four branches,
-- each bounded by the index order of one pending dispatch index (key-less or keyed: together every
-- pending job once) so that each reads only the rows it returns — a single OR over both would be a
-- filter, read through the whole backlog behind the job. The job's values are scalar subqueries,
-- not a join: joined, the index order would not reach the ORDER BY (a nested loop keeps the outer
-- side's order), and the planner chose to read every matching row through a bitmap and sort them.
ahead AS (
  SELECT u.id, u.priority, u.scheduled_at FROM (
    (SELECT a.id, a.priority, a.scheduled_at FROM {schema}.jobs a
     WHERE (SELECT status FROM target) = 'pending'
       AND a.queue = (SELECT queue FROM target) AND a.actor = (SELECT actor FROM target)
       AND a.status = 'pending' AND a.fairness_key IS NULL
       AND a.priority > (SELECT priority FROM target)
       AND a.scheduled_at <= (SELECT t FROM n)
     ORDER BY a.priority DESC, a.scheduled_at, a.id LIMIT 1001)
    UNION ALL
    (SELECT a.id, a.priority, a.scheduled_at FROM {schema}.jobs a
     WHERE (SELECT status FROM target) = 'pending'
       AND a.queue = (SELECT queue FROM target) AND a.actor = (SELECT actor FROM target)
       AND a.status = 'pending' AND a.fairness_key IS NOT NULL
       AND a.priority > (SELECT priority FROM target)
       AND a.scheduled_at <= (SELECT t FROM n)
     ORDER BY a.priority DESC, a.scheduled_at, a.id LIMIT 1001)
    UNION ALL
    (SELECT a.id, a.priority, a.scheduled_at FROM {schema}.jobs a
     WHERE (SELECT status FROM target) = 'pending'
       AND a.queue = (SELECT queue FROM target) AND a.actor = (SELECT actor FROM target)
       AND a.status = 'pending' AND a.fairness_key IS NULL
       AND a.priority = (SELECT priority FROM target)
       AND (a.scheduled_at, a.id) < ((SELECT scheduled_at FROM target), (SELECT id FROM target))
       AND a.scheduled_at <= (SELECT t FROM n)
     ORDER BY a.priority DESC, a.scheduled_at, a.id LIMIT 1001)
    UNION ALL
    (SELECT a.id, a.priority, a.scheduled_at FROM {schema}.jobs a
     WHERE (SELECT status FROM target) = 'pending'
       AND a.queue = (SELECT queue FROM target) AND a.actor = (SELECT actor FROM target)
       AND a.status = 'pending' AND a.fairness_key IS NOT NULL
       AND a.priority = (SELECT priority FROM target)
       AND (a.scheduled_at, a.id) < ((SELECT scheduled_at FROM target), (SELECT id FROM target))
       AND a.scheduled_at <= (SELECT t FROM n)
     ORDER BY a.priority DESC, a.scheduled_at, a.id LIMIT 1001)
  ) u
  ORDER BY u.priority DESC, u.scheduled_at, u.id
  LIMIT 1001
)
SELECT
  floor(extract(epoch FROM n.t) * 1000)::float8 AS now_ms,
  j.id, j.actor, j.queue, j.status::text AS status, j.priority, j.identity_key,
  floor(extract(epoch FROM j.created_at) * 1000)::float8 AS created_at,
  floor(extract(epoch FROM j.scheduled_at) * 1000)::float8 AS scheduled_at,
  floor(extract(epoch FROM j.started_at) * 1000)::float8 AS started_at,
  floor(extract(epoch FROM j.finished_at) * 1000)::float8 AS finished_at,
  j.locked_by_worker,
  floor(extract(epoch FROM j.lock_expires_at) * 1000)::float8 AS lock_expires_at,
  floor(extract(epoch FROM j.cancel_requested_at) * 1000)::float8 AS cancel_requested_at,
  j.attempt, j.max_attempts,
  ac.actor IS NOT NULL AS actor_configured,
  ac.max_concurrent AS actor_max_concurrent,
  qc.name IS NOT NULL AS queue_configured,
  coalesce(qc.mode, 'strict_fifo') AS queue_mode,
  qc.max_concurrent AS queue_max_concurrent,
  -- A worker serving the queue twice in its list counts once.
  (SELECT count(DISTINCT w.id) FROM {schema}.workers w
   WHERE j.queue = ANY (w.queues) AND w.last_seen_at >= n.t - $2::float8 * interval '1 millisecond')::int
    AS workers_alive,
  (SELECT floor(extract(epoch FROM max(w.last_seen_at)) * 1000)::float8 FROM {schema}.workers w
   WHERE j.queue = ANY (w.queues)) AS workers_last_seen_at,
  lh.id AS holder_id,
  lh.hostname AS holder_hostname,
  floor(extract(epoch FROM lh.last_seen_at) * 1000)::float8 AS holder_last_seen_at,
  (lh.last_seen_at >= n.t - $2::float8 * interval '1 millisecond') AS holder_alive,
  (SELECT count(*) FROM {schema}.jobs r WHERE r.status = 'running' AND r.actor = j.actor)::int
    AS actor_running,
  ARRAY(SELECT r.id::text FROM {schema}.jobs r WHERE r.status = 'running' AND r.actor = j.actor
        ORDER BY r.started_at NULLS LAST, r.id LIMIT $3::int) AS actor_running_ids,
  (SELECT count(*) FROM {schema}.jobs r WHERE r.status = 'running' AND r.queue = j.queue)::int
    AS queue_running,
  ARRAY(SELECT r.id::text FROM {schema}.jobs r WHERE r.status = 'running' AND r.queue = j.queue
        ORDER BY r.started_at NULLS LAST, r.id LIMIT $3::int) AS queue_running_ids,
  (SELECT r.id::text FROM {schema}.jobs r
   WHERE j.identity_key IS NOT NULL AND r.status = 'running' AND r.actor = j.actor
     AND r.identity_key = j.identity_key AND r.id <> j.id
   LIMIT 1) AS identity_holder,
  (SELECT count(*) FROM ahead)::int AS ahead,
  ARRAY(SELECT a.id::text FROM ahead a ORDER BY a.priority DESC, a.scheduled_at, a.id LIMIT $3::int)
    AS ahead_ids,
  la.outcome AS last_outcome,
  la.error_message AS last_error_message,
  floor(extract(epoch FROM la.finished_at) * 1000)::float8 AS last_finished_at,
  EXISTS (SELECT 1 FROM {schema}.maintenance_leader l WHERE l.term > 0 AND l.expires_at > n.t)
    AS leader_alive
FROM n
JOIN {schema}.jobs j ON j.id = $1
LEFT JOIN {schema}.actor_config ac ON ac.actor = j.actor
LEFT JOIN {schema}.queues qc ON qc.name = j.queue
LEFT JOIN {schema}.workers lh ON lh.id = j.locked_by_worker
LEFT JOIN LATERAL (
  SELECT a.outcome, a.error_message, a.finished_at FROM {schema}.job_attempts a
  WHERE a.job_id = j.id ORDER BY a.id DESC LIMIT 1
) la ON true;
