-- name: databaseNow
-- The database clock: a new schedule's first slot, and a changed expression's next, are computed
-- from it, so no client's clock ever sets a chain's phase.
SELECT clock_timestamp() AS now;

-- name: insertSchedule
-- $1 id, $2 actor, $3 name, $4 expression, $5 zone, $6 strategy, $7 payload factory, $8 static
-- payload (JSON text or NULL), $9 identity key, $10 enabled, $11 first slot.
INSERT INTO {schema}.cron_schedules (id, actor, name, cron_expr, timezone, dst_strategy, payload_factory,
                                     metadata, identity_key, enabled, next_fire_at)
VALUES ($1, $2, $3, $4, $5, $6, $7,
        CASE WHEN $8::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('static_payload', $8::jsonb) END,
        $9, $10, $11)
RETURNING *;

-- name: insertScheduleIfAbsent
-- A declared schedule: created once, an existing (actor, name) left as it is (the row comes back
-- empty; the caller then reads the stored one to compare).
INSERT INTO {schema}.cron_schedules (id, actor, name, cron_expr, timezone, dst_strategy, payload_factory,
                                     metadata, identity_key, enabled, next_fire_at)
VALUES ($1, $2, $3, $4, $5, $6, $7,
        CASE WHEN $8::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('static_payload', $8::jsonb) END,
        $9, $10, $11)
ON CONFLICT (actor, name) DO NOTHING
RETURNING *;

-- name: getSchedule
SELECT * FROM {schema}.cron_schedules WHERE id = $1;

-- name: getScheduleByName
SELECT * FROM {schema}.cron_schedules WHERE actor = $1 AND name = $2;

-- name: lockSchedule
SELECT * FROM {schema}.cron_schedules WHERE id = $1 FOR UPDATE;

-- name: listSchedules
-- $1 actor or NULL, $2 enabled or NULL. Ordered by code point ("C"), not by the database's
-- collation, so that every database (and the in-memory backend) lists in the same order.
SELECT * FROM {schema}.cron_schedules
WHERE ($1::text IS NULL OR actor = $1) AND ($2::boolean IS NULL OR enabled = $2)
ORDER BY actor COLLATE "C", name COLLATE "C", id;

-- name: updateSchedule
-- Each field changes only when its flag says so. Enabling a schedule clears its failures and last
-- error. $1 id, $2 expression, $3 enabled, $4 payload factory, $5 static payload (JSON text or
-- NULL), $6 next slot; $7..$11 whether the expression, enabled, factory, static payload, next slot
-- change.
UPDATE {schema}.cron_schedules
SET cron_expr = CASE WHEN $7 THEN $2 ELSE cron_expr END,
    enabled = CASE WHEN $8 THEN $3 ELSE enabled END,
    consecutive_failures = CASE WHEN $8 AND $3 THEN 0 ELSE consecutive_failures END,
    last_fire_error = CASE WHEN $8 AND $3 THEN NULL ELSE last_fire_error END,
    payload_factory = CASE WHEN $9 THEN $4 ELSE payload_factory END,
    metadata = CASE WHEN NOT $10 THEN metadata
                    WHEN $5::text IS NULL THEN metadata - 'static_payload'
                    ELSE metadata || jsonb_build_object('static_payload', $5::jsonb) END,
    next_fire_at = CASE WHEN $11 THEN $6 ELSE next_fire_at END,
    updated_at = clock_timestamp()
WHERE id = $1
RETURNING *;

-- name: deleteSchedule
WITH gone AS (
  DELETE FROM {schema}.cron_schedules WHERE id = $1 RETURNING id
),
fires AS (
  DELETE FROM {schema}.cron_fires f USING gone WHERE f.schedule_id = gone.id
)
SELECT count(*)::int AS deleted FROM gone;

-- name: dueSchedules
-- Enabled schedules whose next slot is due on the database clock, oldest first, with the clock's
-- reading (one row with NULL columns when none is due, so the reading always comes back).
-- $1 limit
WITH n AS (
  SELECT clock_timestamp() AS now
)
SELECT s.*, n.now AS db_now
FROM n
LEFT JOIN LATERAL (
  SELECT * FROM {schema}.cron_schedules c
  WHERE c.enabled AND c.next_fire_at <= n.now
  ORDER BY c.next_fire_at
  LIMIT $1
) s ON true;

-- name: lockDueForFire
-- The schedules of a fire batch, locked until the batch commits, with the slot each one is at:
-- a decision is written only where that slot is still the one it was made for.
SELECT id, next_fire_at, enabled FROM {schema}.cron_schedules WHERE id = ANY($1::uuid[]) FOR UPDATE;

-- name: insertFires
-- $1 schedule ids, $2 slots, $3 job ids (parallel arrays). A slot already written fails the batch:
-- that is the exactly-once guarantee's last line, never expected past the lock above.
INSERT INTO {schema}.cron_fires (schedule_id, fire_at, job_id)
SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::uuid[]);

-- name: advanceSchedules
-- Moves each schedule of a batch to its next slot and records the outcome: a slot fired resets the
-- failure count (a decision that fired nothing, its slots all skipped, leaves it), a failure adds
-- one and keeps its message, and reaching $5 failures in a row disables the schedule. $1 ids, $2 next slots, $3 fired (bool), $4 failures (text or NULL),
-- $5 auto-disable threshold.
UPDATE {schema}.cron_schedules AS s
SET next_fire_at = u.next_fire_at,
    last_fired_at = CASE WHEN u.fired THEN clock_timestamp() ELSE s.last_fired_at END,
    consecutive_failures = CASE WHEN u.failure IS NOT NULL THEN s.consecutive_failures + 1
                                WHEN u.fired THEN 0 ELSE s.consecutive_failures END,
    last_fire_error = CASE WHEN u.failure IS NULL THEN s.last_fire_error ELSE u.failure END,
    enabled = CASE WHEN u.failure IS NOT NULL AND s.consecutive_failures + 1 >= $5 THEN false ELSE s.enabled END,
    updated_at = clock_timestamp()
FROM unnest($1::uuid[], $2::timestamptz[], $3::boolean[], $4::text[]) AS u(id, next_fire_at, fired, failure)
-- The ANY lets the planner fetch the batch's rows by primary key instead of hashing the table.
WHERE s.id = u.id AND s.id = ANY ($1::uuid[])
RETURNING s.id, s.enabled;

-- name: trimFires
-- Keeps the most recent $2 fires of each schedule of $1. Each schedule's older fires are found by
-- walking its primary-key range newest first (skipping the $2 kept) and deleted by row address, so
-- the work grows with the history kept per schedule, never with the table: a join against the
-- whole table, planned on statistics that lag the table's growth, scanned every fire of every
-- schedule once per batch.
DELETE FROM {schema}.cron_fires
WHERE ctid = ANY (ARRAY(
  SELECT old.ctid
  FROM unnest($1::uuid[]) AS s(id)
  CROSS JOIN LATERAL (
    SELECT f.ctid FROM {schema}.cron_fires f
    WHERE f.schedule_id = s.id
    ORDER BY f.fire_at DESC
    OFFSET $2
  ) old
));

-- name: listFires
SELECT schedule_id, fire_at, job_id, fired_at FROM {schema}.cron_fires
WHERE schedule_id = $1
ORDER BY fire_at DESC
LIMIT $2;

-- name: skipScheduleFire
-- Moves a schedule (locked by lockSchedule in the same transaction) past its next slot without
-- firing it: no job, no cron_fires row, failures and last error untouched. $1 id, $2 the slot after.
UPDATE {schema}.cron_schedules
SET next_fire_at = $2, updated_at = clock_timestamp()
WHERE id = $1
RETURNING *;
