-- name: reservationAcquire
-- Takes one free slot of reservation $1 for job $2 on worker $3 with a lease of $4 ms, in one
-- data-modifying statement: the candidate row is locked with FOR UPDATE SKIP LOCKED (contenders
-- never wait on each other) and re-checked on its latest version, so two acquirers can never hold
-- one slot. A slot is free when it has no holder or its lease has expired (a held row with no
-- lease is treated as held). fence = acquired_at as UTC text with microseconds (tells one lease
-- from the next). On a denial slot_index is NULL, retry_ms is the earliest live lease's remaining
-- time (NULL when none is readable) and total_rows the number of slot rows of the bucket.
WITH n AS MATERIALIZED (
  SELECT clock_timestamp() AS t
),
cand AS (
  SELECT s.slot_index
  FROM {schema}.reservation_slots s, n
  WHERE s.bucket_name = $1::text AND (s.job_id IS NULL OR s.lease_expires_at < n.t)
  ORDER BY s.slot_index
  LIMIT 1
  FOR UPDATE OF s SKIP LOCKED
),
upd AS (
  UPDATE {schema}.reservation_slots s
  SET job_id = $2::uuid, worker_id = $3::uuid, acquired_at = n.t,
      lease_expires_at = n.t + $4::float8 * interval '1 millisecond', last_used_at = n.t
  FROM cand, n
  WHERE s.bucket_name = $1::text AND s.slot_index = cand.slot_index
  RETURNING s.slot_index, s.acquired_at
)
SELECT u.slot_index,
       to_char(u.acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS fence,
       CASE WHEN u.slot_index IS NULL THEN (
         SELECT extract(epoch FROM min(h.lease_expires_at - n.t))::float8 * 1000
         FROM {schema}.reservation_slots h, n
         WHERE h.bucket_name = $1::text AND h.job_id IS NOT NULL AND h.lease_expires_at >= n.t
       ) END AS retry_ms,
       CASE WHEN u.slot_index IS NULL THEN (
         SELECT count(*)::int FROM {schema}.reservation_slots h WHERE h.bucket_name = $1::text
       ) END AS total_rows
FROM (SELECT 1) one LEFT JOIN upd u ON true;

-- name: reservationRelease
-- Frees slot $2 of reservation $1 if worker $3 still holds it and, when a fence $4 is given, only
-- if the row still carries that lease (a zombie attempt whose lease expired and was re-acquired
-- frees nothing). Returns the freed row.
UPDATE {schema}.reservation_slots
SET job_id = NULL, worker_id = NULL, acquired_at = NULL, lease_expires_at = NULL, last_used_at = clock_timestamp()
WHERE bucket_name = $1::text AND slot_index = $2::int AND worker_id = $3::uuid AND job_id IS NOT NULL
  AND ($4::text IS NULL OR acquired_at = $4::text::timestamptz)
RETURNING slot_index;

-- name: reservationExtendLeases
-- Heartbeat: renews, to now + $2 ms, the lease of every slot worker $1 holds (of reservation $3 only
-- when given). Never shortens a lease: a reservation declared with a lease longer than the worker's
-- lock lease keeps it. Returns the renewed rows.
UPDATE {schema}.reservation_slots
SET lease_expires_at = GREATEST(lease_expires_at, clock_timestamp() + $2::float8 * interval '1 millisecond')
WHERE worker_id = $1::uuid AND job_id IS NOT NULL AND ($3::text IS NULL OR bucket_name = $3::text)
RETURNING bucket_name, slot_index;

-- name: reservationEnsureSlots
-- Idempotently creates slots 0..$2-1 of reservation $1 (keyed mark $3) and refreshes last_used_at
-- of the ones that exist, never touching holders or leases. The keyed mark converges to false
-- (never reclaimable): keyed over a static row stays static; a static declaration retires a keyed
-- row. inserted tells new rows from existing ones.
INSERT INTO {schema}.reservation_slots AS s (bucket_name, slot_index, keyed, last_used_at)
SELECT $1::text, i, $3::boolean, clock_timestamp() FROM generate_series(0, $2::int - 1) AS i
ON CONFLICT (bucket_name, slot_index) DO UPDATE
SET last_used_at = clock_timestamp(), keyed = s.keyed AND EXCLUDED.keyed
RETURNING s.slot_index, (s.xmax = 0) AS inserted;

-- name: reservationSlotRowsExist
-- Whether reservation $1 has any slot row.
SELECT EXISTS (SELECT 1 FROM {schema}.reservation_slots WHERE bucket_name = $1::text) AS present;

-- name: reservationPeek
-- Free / held / total slot rows of reservation $1 on the database clock.
SELECT count(*) FILTER (WHERE job_id IS NULL OR lease_expires_at < n.t)::int AS free_count,
       count(*) FILTER (WHERE job_id IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at >= n.t))::int AS held_count,
       count(*)::int AS total_slots
FROM {schema}.reservation_slots, LATERAL (SELECT clock_timestamp() AS t) n
WHERE bucket_name = $1::text;

-- name: reservationSyncHeldExcess
-- Slots of reservation $1 at index >= $2 that a live lease still holds (reported, never deleted).
SELECT slot_index FROM {schema}.reservation_slots
WHERE bucket_name = $1::text AND slot_index >= $2::int
  AND job_id IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at >= clock_timestamp())
ORDER BY slot_index;

-- name: reservationSyncDeleteExcess
-- Deletes the free or lease-expired slots of reservation $1 at index >= $2. A row acquired
-- concurrently is protected by its row lock: the delete waits, re-checks this predicate on the
-- acquired row and skips it.
DELETE FROM {schema}.reservation_slots
WHERE bucket_name = $1::text AND slot_index >= $2::int
  AND (job_id IS NULL OR lease_expires_at < clock_timestamp())
RETURNING slot_index;
