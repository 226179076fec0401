-- name: gcraAcquire
-- One admission through GCRA window $1 (limit $2 per $3 ms). Emission interval T = $3 / $2 ms; the
-- theoretical arrival time (tat) only moves forward by T per admission. Admitted when the new tat
-- minus the window is not in the future. Lock handling as tokenBucketAcquire ($4 = lock_timeout).
-- debt_ms = new tat - now (ms); prev_tat_ms = the stored tat before this call (epoch ms).
WITH cfg AS MATERIALIZED (
  SELECT set_config('lock_timeout', $4::text, true) AS lock_timeout
),
ins AS (
  INSERT INTO {schema}.rate_limit_buckets AS b
    (bucket_name, kind, capacity, window_ms, tat, backend, keyed, last_used_at, updated_at)
  SELECT $1::text, 'gcra', $2::float8, $3::float8,
         n.t + ($3::float8 / $2::float8) * interval '1 millisecond', $6::text, $5::boolean, n.t, n.t
  FROM cfg, LATERAL (SELECT clock_timestamp() AS t) n
  ON CONFLICT (bucket_name) DO NOTHING
  RETURNING b.tat, b.updated_at
),
cur AS MATERIALIZED (
  SELECT b.tat FROM {schema}.rate_limit_buckets b, cfg
  WHERE b.bucket_name = $1::text
  FOR UPDATE OF b
),
stamped AS MATERIALIZED (
  SELECT c.tat, clock_timestamp() AS t FROM cur c
),
calc AS MATERIALIZED (
  SELECT s.t, s.tat AS prev_tat,
         greatest(coalesce(s.tat, s.t), s.t) + ($3::float8 / $2::float8) * interval '1 millisecond' AS new_tat
  FROM stamped s
),
upd AS (
  UPDATE {schema}.rate_limit_buckets b
  SET tat = calc.new_tat, updated_at = calc.t, last_used_at = calc.t, capacity = $2::float8, window_ms = $3::float8
  FROM calc
  WHERE b.bucket_name = $1::text AND calc.new_tat - $3::float8 * interval '1 millisecond' <= calc.t
  RETURNING b.tat
)
SELECT true AS created, true AS allowed,
       extract(epoch FROM i.tat - i.updated_at)::float8 * 1000 AS debt_ms, NULL::float8 AS prev_tat_ms
FROM ins i
UNION ALL
SELECT false, (u.tat IS NOT NULL),
       extract(epoch FROM c.new_tat - c.t)::float8 * 1000,
       extract(epoch FROM c.prev_tat)::float8 * 1000
FROM calc c LEFT JOIN upd u ON true;

-- name: gcraRefund
-- Gives one emission interval back to GCRA window $1: tat moves back by T, never below now (a
-- refund cannot create credit beyond a full window). Bounded row lock ($4 = lock_timeout).
WITH cfg AS MATERIALIZED (
  SELECT set_config('lock_timeout', $4::text, true) AS lock_timeout
),
cur AS MATERIALIZED (
  SELECT b.tat FROM {schema}.rate_limit_buckets b, cfg
  WHERE b.bucket_name = $1::text
  FOR UPDATE OF b
),
stamped AS MATERIALIZED (
  SELECT c.tat, clock_timestamp() AS t FROM cur c
),
upd AS (
  UPDATE {schema}.rate_limit_buckets b
  SET tat = CASE
              WHEN s.tat IS NULL THEN NULL
              WHEN greatest(s.tat, s.t) - ($3::float8 / $2::float8) * interval '1 millisecond' <= s.t THEN NULL
              ELSE greatest(s.tat, s.t) - ($3::float8 / $2::float8) * interval '1 millisecond'
            END,
      updated_at = s.t
  FROM stamped s
  WHERE b.bucket_name = $1::text
  RETURNING b.tat
)
SELECT count(*)::int AS refunded FROM upd;

-- name: gcraPeek
-- debt_ms of GCRA window $1 now (0 = no debt), without consuming or locking.
SELECT greatest(0::float8, extract(epoch FROM coalesce(b.tat, n.t) - n.t)::float8 * 1000) AS debt_ms
FROM {schema}.rate_limit_buckets b, LATERAL (SELECT clock_timestamp() AS t) n
WHERE b.bucket_name = $1::text;

-- name: slidingLogLock
-- First statement of a log-style admission transaction: creates the window's bucket row if
-- missing and holds its row lock until commit, so admissions to one window serialise. The lock
-- wait is bounded by $6 (lock_timeout, set before the conflict check runs). The count runs in a
-- second statement, whose fresh snapshot sees every admission committed before the lock was won.
INSERT INTO {schema}.rate_limit_buckets AS b (bucket_name, kind, capacity, window_ms, backend, keyed)
SELECT $1::text, 'sliding_log', $2::float8, $3::float8, $5::text, $4::boolean
FROM (SELECT set_config('lock_timeout', $6::text, true) AS lock_timeout) cfg
ON CONFLICT (bucket_name) DO UPDATE
SET capacity = EXCLUDED.capacity, window_ms = EXCLUDED.window_ms, last_used_at = clock_timestamp()
RETURNING b.bucket_name;

-- name: slidingLogAdmit
-- Second statement (row lock held): drops entries of window $1 that left the window, counts the
-- live ones and, below limit $2, logs request $4 at the database clock. retry_ms is when the entry
-- that must leave for one more request to fit does so.
WITH n AS MATERIALIZED (
  SELECT clock_timestamp() AS t
),
expired AS (
  DELETE FROM {schema}.rate_limit_window_entries e
  USING n
  WHERE e.bucket_name = $1::text AND e.admitted_at <= n.t - $3::float8 * interval '1 millisecond'
),
live AS MATERIALIZED (
  SELECT count(*)::int AS cnt
  FROM {schema}.rate_limit_window_entries e, n
  WHERE e.bucket_name = $1::text AND e.admitted_at > n.t - $3::float8 * interval '1 millisecond'
),
ins AS (
  INSERT INTO {schema}.rate_limit_window_entries (bucket_name, request_id, admitted_at)
  SELECT $1::text, $4::uuid, n.t FROM n, live WHERE live.cnt < $2::int
  RETURNING 1
),
nth AS (
  SELECT extract(epoch FROM e.admitted_at + $3::float8 * interval '1 millisecond' - n.t)::float8 * 1000 AS retry_ms
  FROM {schema}.rate_limit_window_entries e, n, live
  WHERE e.bucket_name = $1::text AND e.admitted_at > n.t - $3::float8 * interval '1 millisecond'
    AND live.cnt >= $2::int
  ORDER BY e.admitted_at
  OFFSET greatest((SELECT cnt FROM live) - $2::int, 0)
  LIMIT 1
)
SELECT live.cnt AS live, (SELECT count(*) FROM ins)::int AS admitted, (SELECT retry_ms FROM nth) AS retry_ms
FROM live;

-- name: slidingLogPeek
-- Live entries of window $1 (limit $2, window $3 ms) and the retry hint, without writing.
WITH n AS MATERIALIZED (
  SELECT clock_timestamp() AS t
),
live AS MATERIALIZED (
  SELECT count(*)::int AS cnt
  FROM {schema}.rate_limit_window_entries e, n
  WHERE e.bucket_name = $1::text AND e.admitted_at > n.t - $3::float8 * interval '1 millisecond'
),
nth AS (
  SELECT extract(epoch FROM e.admitted_at + $3::float8 * interval '1 millisecond' - n.t)::float8 * 1000 AS retry_ms
  FROM {schema}.rate_limit_window_entries e, n, live
  WHERE e.bucket_name = $1::text AND e.admitted_at > n.t - $3::float8 * interval '1 millisecond'
    AND live.cnt >= $2::int
  ORDER BY e.admitted_at
  OFFSET greatest((SELECT cnt FROM live) - $2::int, 0)
  LIMIT 1
)
SELECT live.cnt AS live, (SELECT retry_ms FROM nth) AS retry_ms FROM live;

-- name: slidingLogRefund
-- Removes request $2 from window $1 (rollback of that admission).
DELETE FROM {schema}.rate_limit_window_entries WHERE bucket_name = $1::text AND request_id = $2::uuid;

-- name: bucketReset
-- Resets rate-limit bucket $1 to full: clears the token / tat state and the window log, keeping the
-- row (and its admin metadata and keyed mark). Idempotent; no row is fine.
WITH cleared AS (
  UPDATE {schema}.rate_limit_buckets
  SET tokens = NULL, tat = NULL, updated_at = clock_timestamp()
  WHERE bucket_name = $1::text
  RETURNING 1
),
entries AS (
  DELETE FROM {schema}.rate_limit_window_entries WHERE bucket_name = $1::text RETURNING 1
)
SELECT (SELECT count(*) FROM cleared)::int AS buckets, (SELECT count(*) FROM entries)::int AS entries;

-- name: publishBucket
-- Publishes rate limit $1 to rate_limit_buckets for the admin UI (kind $2, capacity or limit $3,
-- refill $4, window $5 ms, configured store $6, keyed $7). Never touches the state columns. The
-- keyed mark only ever converges to false: a static declaration retires a keyed row, and a keyed
-- materialisation over a static row leaves it static.
INSERT INTO {schema}.rate_limit_buckets AS b
  (bucket_name, kind, capacity, refill_per_second, window_ms, backend, keyed)
VALUES ($1::text, $2::text, $3::float8, $4::float8, $5::float8, $6::text, $7::boolean)
ON CONFLICT (bucket_name) DO UPDATE
SET kind = EXCLUDED.kind, capacity = EXCLUDED.capacity, refill_per_second = EXCLUDED.refill_per_second,
    window_ms = EXCLUDED.window_ms, backend = EXCLUDED.backend, keyed = b.keyed AND EXCLUDED.keyed,
    last_used_at = clock_timestamp();
