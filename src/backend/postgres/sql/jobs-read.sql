-- name: getJob
SELECT {job_columns} FROM {schema}.jobs j WHERE j.id = $1;

-- name: countPendingJobs
SELECT actor, count(*)::int AS n FROM {schema}.jobs
WHERE actor = ANY ($1::text[]) AND status IN ('pending', 'scheduled')
GROUP BY actor;

-- name: countActiveJobs
SELECT count(*)::int AS n FROM {schema}.jobs
WHERE queue = ANY ($1::text[]) AND status IN ('pending', 'scheduled', 'running');

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
INSERT INTO {schema}.job_attempts (job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome,
  error_class, error_message, error_traceback)
VALUES ($1, $2, $3, $4, coalesce($5, clock_timestamp()), $6, $7, $8, $9, $10);
