-- name: getJob
SELECT {job_columns} FROM {schema}.jobs j WHERE j.id = $1;

-- name: countPendingJobs
SELECT actor, count(*)::int AS n FROM {schema}.jobs
WHERE actor = ANY ($1::text[]) AND status IN ('pending', 'scheduled')
GROUP BY actor;

-- name: countActiveJobs
-- Waiting jobs through the per-queue waiting index, running ones through jobs_running_idx (the
-- running set is small; no per-queue index holds it).
SELECT (SELECT count(*) FROM {schema}.jobs
        WHERE queue = ANY ($1::text[]) AND status IN ('pending', 'scheduled'))::int
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
INSERT INTO {schema}.job_attempts (job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome,
  error_class, error_message, error_traceback)
VALUES ($1, $2, $3, $4, coalesce($5, clock_timestamp()), $6, $7, $8, $9, $10);
