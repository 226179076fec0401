-- name: getJob
SELECT {job_columns} FROM {schema}.jobs j WHERE j.id = $1;

-- name: getJobByIdempotencyKey
-- $1 key, $2 scope: one probe of jobs_idempotency_scope_key_uniq.
SELECT {job_columns} FROM {schema}.jobs j
WHERE j.idempotency_scope = $2 AND j.idempotency_key = $1;

-- name: countPendingJobs
SELECT actor, count(*)::int AS n FROM {schema}.jobs
WHERE actor = ANY ($1::text[]) AND status IN ('pending', 'scheduled')
GROUP BY actor;

-- name: countActiveJobs
-- Waiting jobs through jobs_waiting_idx, whose leading column is the actor: the distinct actors
-- with waiting jobs are found first, one index descent each (a loose index scan: there are few
-- actors, however many jobs), then each actor's (actor, queue) entries are counted. Running ones
-- through jobs_running_idx (the running set is small; no per-queue index holds it).
WITH RECURSIVE actors AS (
  (SELECT actor FROM {schema}.jobs WHERE status IN ('pending', 'scheduled') ORDER BY actor LIMIT 1)
  UNION ALL
  SELECT (SELECT j.actor FROM {schema}.jobs j
          WHERE j.status IN ('pending', 'scheduled') AND j.actor > a.actor
          ORDER BY j.actor LIMIT 1)
  FROM actors a WHERE a.actor IS NOT NULL
)
SELECT (SELECT coalesce(sum(w.n), 0) FROM actors a,
          LATERAL (SELECT count(*) AS n FROM {schema}.jobs j
                   WHERE j.actor = a.actor AND j.queue = ANY ($1::text[])
                     AND j.status IN ('pending', 'scheduled')) w)::int
     + (SELECT count(*) FROM {schema}.jobs
        WHERE queue = ANY ($1::text[]) AND status = 'running')::int AS n;

-- name: getActorMaxPending
SELECT actor, max_pending FROM {schema}.actor_config;

-- name: getAttempts
SELECT job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome, error_class,
  error_message, error_traceback
FROM {schema}.job_attempts WHERE job_id = $1 ORDER BY id;

-- name: getEvents
SELECT id::text AS event_id, job_id, occurred_at, kind, detail
FROM {schema}.job_events WHERE job_id = $1 ORDER BY id;

-- name: writeAttempt
INSERT INTO {schema}.job_attempt_log (job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome,
  error_class, error_message, error_traceback)
VALUES ($1, $2, $3, $4, coalesce($5, clock_timestamp()), $6, $7, $8, $9, $10);

-- name: getArchivedJob
-- A job sweep 5 moved to jobs_archive, with the same columns as getJob, plus when it was archived
-- and when sweep 6 deletes it (epoch milliseconds, as the job's own times).
SELECT {job_columns},
  floor(extract(epoch FROM j.archived_at) * 1000)::float8 AS archived_at,
  floor(extract(epoch FROM j.expire_at) * 1000)::float8 AS expire_at
FROM {schema}.jobs_archive j WHERE j.id = $1;

-- name: getArchivedAttempts
SELECT job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome, error_class,
  error_message, error_traceback
FROM {schema}.job_attempts_archive WHERE job_id = $1 ORDER BY id;
