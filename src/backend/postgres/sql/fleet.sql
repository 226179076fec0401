-- name: observeFleet
-- The fleet gauges' snapshot (Backend.observeFleet), in one statement and one round trip: a single
-- row of three columns, the queues and the reservations as JSON arrays and the live leaders as a
-- count. One row rather than UNION ALL rows of several kinds, because the three parts have
-- different shapes: as rows they would share loosely named, partly null columns that the mapper
-- would have to tell apart by a kind; as JSON each part keeps its own field names. Both arrays are
-- small (one element per queue, per reservation name or keyed base).
--
-- Every time predicate reads one database clock reading (`n.t`). The job counts read only jobs of
-- the live statuses, each through the partial index whose predicate its WHERE repeats, so their
-- cost follows the live jobs, never the finished ones the table also holds: pending jobs by the
-- two dispatch indexes (key-less and keyed: together every pending job, once; each carries queue
-- and scheduled_at, so an index-only scan answers the count and the oldest due time), scheduled
-- jobs by jobs_waiting_idx (below), running jobs by jobs_running_idx. A pending job is due since its
-- scheduled_at (set at enqueue to the creation time when there is no delay, and what dispatch
-- orders by).
--
-- $1 alive window ms (workers), $2 keyed reservation base names (text[])
WITH n AS (
  SELECT clock_timestamp() AS t
),
pending AS (
  SELECT p.queue, sum(p.jobs)::bigint AS jobs, min(p.oldest) AS oldest
  FROM (
    SELECT j.queue, count(*) AS jobs, min(j.scheduled_at) AS oldest
    FROM {schema}.jobs j
    WHERE j.status = 'pending' AND j.fairness_key IS NULL
    GROUP BY j.queue
    UNION ALL
    SELECT j.queue, count(*) AS jobs, min(j.scheduled_at) AS oldest
    FROM {schema}.jobs j
    WHERE j.status = 'pending' AND j.fairness_key IS NOT NULL
    GROUP BY j.queue
  ) p
  GROUP BY p.queue
),
-- Scheduled jobs are the waiting ones (jobs_waiting_idx: pending and scheduled, with the queue)
-- that are not pending: two index-only reads. jobs_scheduled_idx holds no queue, so grouping it by
-- queue read the table row of every scheduled job. Both reads see the statement's one snapshot.
waiting AS (
  SELECT j.queue, count(*) AS jobs
  FROM {schema}.jobs j WHERE j.status IN ('pending', 'scheduled') GROUP BY j.queue
),
scheduled AS (
  SELECT w.queue, w.jobs - coalesce(p.jobs, 0) AS jobs
  FROM waiting w LEFT JOIN pending p ON p.queue = w.queue
  WHERE w.jobs > coalesce(p.jobs, 0)
),
running AS (
  SELECT j.queue, count(*) AS jobs FROM {schema}.jobs j WHERE j.status = 'running' GROUP BY j.queue
),
-- A worker serving a queue twice in its list counts once.
alive AS (
  SELECT q.queue, count(DISTINCT w.id) AS workers
  FROM {schema}.workers w
  CROSS JOIN n
  CROSS JOIN LATERAL unnest(w.queues) AS q(queue)
  WHERE w.last_seen_at >= n.t - $1::float8 * interval '1 millisecond'
  GROUP BY q.queue
),
names AS (
  SELECT queue FROM pending
  UNION SELECT queue FROM scheduled
  UNION SELECT queue FROM running
  UNION SELECT queue FROM alive
  UNION SELECT name FROM {schema}.queues
),
queue_rows AS (
  SELECT nm.queue,
         coalesce(p.jobs, 0)::bigint AS pending,
         coalesce(s.jobs, 0)::bigint AS scheduled,
         coalesce(r.jobs, 0)::bigint AS running,
         -- Never negative: a job enqueued after the clock reading could be due after it.
         CASE WHEN p.oldest IS NULL THEN NULL
              ELSE greatest(0, extract(epoch FROM (n.t - p.oldest)))::float8 END AS oldest_pending_age_seconds,
         coalesce(a.workers, 0)::bigint AS workers_alive
  FROM names nm
  CROSS JOIN n
  LEFT JOIN pending p ON p.queue = nm.queue
  LEFT JOIN scheduled s ON s.queue = nm.queue
  LEFT JOIN running r ON r.queue = nm.queue
  LEFT JOIN alive a ON a.queue = nm.queue
),
-- A keyed slot row `<base>:<key>` is summed under the longest given base that prefixes it (bases
-- may prefix one another: `api` and `api:eu`), else under '(keyed)'. Held is the complement of
-- free as the reservation store decides it (reservation.sql): taken, and the lease not yet past.
reservation_rows AS (
  SELECT CASE WHEN s.keyed THEN coalesce(b.base, '(keyed)') ELSE s.bucket_name END AS name,
         s.keyed,
         count(*)::bigint AS slots,
         count(*) FILTER (
           WHERE s.job_id IS NOT NULL AND (s.lease_expires_at IS NULL OR s.lease_expires_at >= n.t)
         )::bigint AS held
  FROM {schema}.reservation_slots s
  CROSS JOIN n
  LEFT JOIN LATERAL (
    SELECT x.base FROM unnest($2::text[]) AS x(base)
    WHERE s.keyed AND starts_with(s.bucket_name, x.base || ':')
    ORDER BY length(x.base) DESC
    LIMIT 1
  ) b ON true
  GROUP BY 1, 2
)
SELECT
  coalesce((
    SELECT json_agg(json_build_object(
             'queue', q.queue, 'pending', q.pending, 'scheduled', q.scheduled, 'running', q.running,
             'oldest_pending_age_seconds', q.oldest_pending_age_seconds, 'workers_alive', q.workers_alive)
           ORDER BY q.queue COLLATE "C")
    FROM queue_rows q
  ), '[]'::json) AS queues,
  coalesce((
    SELECT json_agg(json_build_object('name', r.name, 'keyed', r.keyed, 'slots', r.slots, 'held', r.held)
           ORDER BY r.name COLLATE "C", r.keyed)
    FROM reservation_rows r
  ), '[]'::json) AS reservations,
  (SELECT count(*) FROM {schema}.maintenance_leader l, n WHERE l.term > 0 AND l.expires_at > n.t)::int AS leaders;

-- name: observeActors
-- Every actor_config row with its live jobs and the alive workers serving its queue
-- (Backend.observeActors), in one statement. The job counts are read index-only, so their cost
-- follows the actors' live jobs, never the finished ones: the (actor, queue) pairs that have
-- waiting jobs are found by a loose scan of jobs_waiting_idx (actor, queue) — one index descent
-- per pair, however many jobs — then per pair the waiting jobs are counted in that index and the
-- pending ones in the two pending dispatch indexes, whose (queue, actor) prefix the pair gives.
-- Scheduled = waiting − pending: both counts see the statement's one snapshot, so this is exact.
-- Running jobs through jobs_running_idx (the running set is small).
--   $1 alive window ms (workers)
WITH RECURSIVE n AS (
  SELECT clock_timestamp() AS t
),
pairs AS (
  SELECT ac.actor,
         (SELECT j.queue FROM {schema}.jobs j
          WHERE j.actor = ac.actor AND j.status IN ('pending', 'scheduled')
          ORDER BY j.queue LIMIT 1) AS queue
  FROM {schema}.actor_config ac
  UNION ALL
  SELECT p.actor,
         (SELECT j.queue FROM {schema}.jobs j
          WHERE j.actor = p.actor AND j.status IN ('pending', 'scheduled') AND j.queue > p.queue
          ORDER BY j.queue LIMIT 1)
  FROM pairs p
  WHERE p.queue IS NOT NULL
),
waiting AS (
  SELECT p.actor,
         sum((SELECT count(*) FROM {schema}.jobs j
              WHERE j.actor = p.actor AND j.queue = p.queue
                AND j.status IN ('pending', 'scheduled')))::bigint AS waiting,
         sum((SELECT count(*) FROM {schema}.jobs j
              WHERE j.queue = p.queue AND j.actor = p.actor
                AND j.status = 'pending' AND j.fairness_key IS NULL)
           + (SELECT count(*) FROM {schema}.jobs j
              WHERE j.queue = p.queue AND j.actor = p.actor
                AND j.status = 'pending' AND j.fairness_key IS NOT NULL))::bigint AS pending
  FROM pairs p
  WHERE p.queue IS NOT NULL
  GROUP BY p.actor
),
running AS (
  SELECT j.actor, count(*)::bigint AS jobs FROM {schema}.jobs j WHERE j.status = 'running' GROUP BY j.actor
),
-- A worker serving a queue twice in its list counts once.
alive AS (
  SELECT q.queue, count(DISTINCT w.id)::bigint AS workers
  FROM {schema}.workers w
  CROSS JOIN n
  CROSS JOIN LATERAL unnest(w.queues) AS q(queue)
  WHERE w.last_seen_at >= n.t - $1::float8 * interval '1 millisecond'
  GROUP BY q.queue
)
SELECT ac.actor, ac.queue,
       coalesce(w.pending, 0)::int AS pending,
       coalesce(w.waiting - w.pending, 0)::int AS scheduled,
       coalesce(r.jobs, 0)::int AS running,
       coalesce(a.workers, 0)::int AS workers_alive
FROM {schema}.actor_config ac
LEFT JOIN waiting w ON w.actor = ac.actor
LEFT JOIN running r ON r.actor = ac.actor
LEFT JOIN alive a ON a.queue = ac.queue
ORDER BY ac.actor COLLATE "C";

-- name: observeActivity
-- The admin overview's workers and recent outcomes (Backend.observeActivity), in one round trip:
-- every workers row with its age on the database clock, and the newest finished jobs within the
-- window counted per queue and status. The finished jobs are read newest first through
-- jobs_finished_at_idx (whose predicate the WHERE repeats) and cut at $3 rows, so a busy fleet
-- costs at most $3 index entries and rows, never a scan of the window; `counted` tells the caller
-- whether the cut was reached.
-- $1 alive window ms, $2 finished window ms, $3 most finished jobs counted
WITH n AS (
  SELECT clock_timestamp() AS t
),
-- The bound is a scalar subquery (an InitPlan), not a join with n: only a value known before the
-- scan can bound the index scan; as a join filter it walked every finished job (300 ms at 1M).
recent AS (
  SELECT j.queue, j.status
  FROM {schema}.jobs j
  WHERE j.finished_at IS NOT NULL
    AND j.finished_at >= (SELECT n.t FROM n) - $2::float8 * interval '1 millisecond'
  ORDER BY j.finished_at DESC, j.id DESC
  LIMIT $3
)
SELECT
  (SELECT coalesce(json_agg(json_build_object(
      'worker_id', w.id, 'hostname', w.hostname, 'pid', w.pid, 'label', w.worker_label,
      'queues', w.queues, 'max_concurrency', w.max_concurrency, 'version', w.taskq_version,
      'started_at', w.started_at, 'last_seen_at', w.last_seen_at,
      'age_seconds', greatest(0, extract(epoch FROM (n.t - w.last_seen_at)))::float8,
      'alive', w.last_seen_at >= n.t - $1::float8 * interval '1 millisecond')), '[]'::json)
   FROM {schema}.workers w CROSS JOIN n) AS workers,
  (SELECT coalesce(json_agg(json_build_object(
      'queue', f.queue, 'succeeded', f.succeeded, 'failed', f.failed, 'other', f.other)
      ORDER BY f.queue), '[]'::json)
   FROM (
     SELECT r.queue,
            count(*) FILTER (WHERE r.status = 'succeeded') AS succeeded,
            count(*) FILTER (WHERE r.status = 'failed') AS failed,
            count(*) FILTER (WHERE r.status NOT IN ('succeeded', 'failed')) AS other
     FROM recent r GROUP BY r.queue
   ) f) AS finished,
  (SELECT count(*) FROM recent)::int AS counted;
