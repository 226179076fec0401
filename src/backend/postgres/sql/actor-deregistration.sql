-- The statements of an actor's deregistration (pg-actor-deregistration.ts), run in this order in
-- one transaction. Locks are taken in one order — schedules, the actor's enqueue lock, the
-- actor_config row, the actor's waiting jobs — and a cron fire takes its schedules before the
-- enqueue lock too, so the two queue up instead of deadlocking.

-- name: deregisterLockSchedules
-- Every schedule of the actor, locked: a cron fire that locked them first has committed (its jobs
-- are then counted below); one that comes later finds them disabled, if force disabled them.
SELECT id::text AS id, enabled FROM {schema}.cron_schedules WHERE actor = $1 ORDER BY id FOR UPDATE;

-- name: deregisterLockActor
-- The actor's enqueue lock, exclusively: every insert into jobs holds it shared until its
-- transaction ends (see actorLockKey). Once this returns, every enqueue of the actor has either
-- committed (and the next statements see its job) or waits until this transaction has ended.
-- $1 the lock key
SELECT pg_advisory_xact_lock(hashtextextended($1, 0)) IS NULL AS locked;

-- name: deregisterLockConfig
-- The actor_config row, locked against a concurrent capacity change or deregistration.
SELECT actor, queue FROM {schema}.actor_config WHERE actor = $1 FOR UPDATE;

-- name: deregisterLockWaiting
-- With force: the actor's pending and scheduled jobs, locked, so that no worker claims one (claims
-- skip locked rows) between the count of running jobs and their cancellation.
SELECT count(*)::int AS locked FROM (
  SELECT j.id FROM {schema}.jobs j
  WHERE j.actor = $1 AND j.status IN ('pending', 'scheduled')
  ORDER BY j.id
  FOR UPDATE
) w;

-- name: deregisterCountJobs
-- The actor's non-terminal jobs by status, read after the locks (a fresh snapshot).
SELECT j.status::text AS status, count(*)::int AS n FROM {schema}.jobs j
WHERE j.actor = $1 AND j.status IN ('pending', 'scheduled', 'running')
GROUP BY j.status;

-- name: deregisterDisableSchedules
-- With force: the actor's enabled schedules stop firing (they stay, disabled, for an operator to
-- delete or re-enable).
UPDATE {schema}.cron_schedules SET enabled = false, updated_at = clock_timestamp()
WHERE actor = $1 AND enabled
RETURNING id::text AS id;

-- name: deregisterDeleteConfig
DELETE FROM {schema}.actor_config WHERE actor = $1 RETURNING queue;

-- name: deregisterPurgeQueue
-- The queue's row goes only when nothing uses the queue any more: no actor_config row names it and
-- no job of any actor waits or runs in it. $1 queue
DELETE FROM {schema}.queues q
WHERE q.name = $1
  AND NOT EXISTS (SELECT 1 FROM {schema}.actor_config c WHERE c.queue = $1)
  AND NOT EXISTS (
    SELECT 1 FROM {schema}.jobs j WHERE j.queue = $1 AND j.status IN ('pending', 'scheduled', 'running')
  )
RETURNING q.name;

-- name: deregisterCountTerminal
-- The actor's history left behind (retention removes it in time).
SELECT count(*)::int AS n FROM {schema}.jobs j
WHERE j.actor = $1 AND j.status NOT IN ('pending', 'scheduled', 'running');
