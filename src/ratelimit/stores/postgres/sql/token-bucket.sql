-- name: tokenBucketAcquire
-- Spends $4 tokens of bucket $1 (capacity $2, refill $3 per second) on the database clock.
-- The first statement line sets this statement's lock_timeout ($5) before any row lock is taken, so
-- a contended row lock ends in SQLSTATE 55P03, which the caller turns into a denial (fail closed).
-- A missing row is created full minus this request (the insert is the admission). The row's state
-- is read under FOR UPDATE (the latest committed version) and stamped with clock_timestamp() only
-- after the lock is held. A denial writes nothing. Returns one row, or none when the row appeared
-- concurrently after this statement's snapshot (the caller runs it again).
WITH cfg AS MATERIALIZED (
  SELECT set_config('lock_timeout', $5::text, true) AS lock_timeout
),
ins AS (
  INSERT INTO {schema}.rate_limit_buckets AS b
    (bucket_name, kind, capacity, refill_per_second, tokens, backend, keyed, last_used_at, updated_at)
  SELECT $1::text, 'token_bucket', $2::float8, $3::float8,
         CASE WHEN $4::float8 <= $2::float8 THEN $2::float8 - $4::float8 ELSE $2::float8 END,
         $7::text, $6::boolean, n.t, n.t
  FROM cfg, LATERAL (SELECT clock_timestamp() AS t) n
  ON CONFLICT (bucket_name) DO NOTHING
  RETURNING b.tokens
),
cur AS MATERIALIZED (
  SELECT b.tokens, b.updated_at
  FROM {schema}.rate_limit_buckets b, cfg
  WHERE b.bucket_name = $1::text
  FOR UPDATE OF b
),
stamped AS MATERIALIZED (
  SELECT c.tokens, c.updated_at, clock_timestamp() AS t FROM cur c
),
calc AS MATERIALIZED (
  SELECT s.t, s.tokens AS prev_tokens,
         least($2::float8,
               coalesce(s.tokens, $2::float8)
               + greatest(0::float8, extract(epoch FROM s.t - s.updated_at)::float8) * $3::float8) AS avail
  FROM stamped s
),
upd AS (
  UPDATE {schema}.rate_limit_buckets b
  SET tokens = calc.avail - $4::float8, updated_at = calc.t, last_used_at = calc.t,
      capacity = $2::float8, refill_per_second = $3::float8
  FROM calc
  WHERE b.bucket_name = $1::text AND calc.avail >= $4::float8
  RETURNING b.tokens
)
SELECT true AS created, i.tokens AS tokens, $2::float8 AS avail, NULL::float8 AS prev_tokens,
       ($4::float8 <= $2::float8) AS allowed
FROM ins i
UNION ALL
SELECT false, coalesce(u.tokens, c.avail), c.avail, c.prev_tokens, (u.tokens IS NOT NULL)
FROM calc c LEFT JOIN upd u ON true;

-- name: tokenBucketRefund
-- Gives $4 tokens back to bucket $1 (capped at capacity $2), under the same bounded row lock as an
-- acquire ($5 = lock_timeout). No row means the bucket is full already: nothing to return.
WITH cfg AS MATERIALIZED (
  SELECT set_config('lock_timeout', $5::text, true) AS lock_timeout
),
cur AS MATERIALIZED (
  SELECT b.tokens, b.updated_at
  FROM {schema}.rate_limit_buckets b, cfg
  WHERE b.bucket_name = $1::text
  FOR UPDATE OF b
),
stamped AS MATERIALIZED (
  SELECT c.tokens, c.updated_at, clock_timestamp() AS t FROM cur c
),
upd AS (
  UPDATE {schema}.rate_limit_buckets b
  SET tokens = least($2::float8,
                     coalesce(s.tokens, $2::float8)
                     + greatest(0::float8, extract(epoch FROM s.t - s.updated_at)::float8) * $3::float8
                     + $4::float8),
      updated_at = s.t
  FROM stamped s
  WHERE b.bucket_name = $1::text
  RETURNING b.tokens
)
SELECT u.tokens FROM upd u;

-- name: tokenBucketPeek
-- Tokens available now in bucket $1 (capacity $2, refill $3), without consuming or locking.
SELECT least($2::float8,
             coalesce(b.tokens, $2::float8)
             + greatest(0::float8, extract(epoch FROM n.t - b.updated_at)::float8) * $3::float8) AS avail
FROM {schema}.rate_limit_buckets b, LATERAL (SELECT clock_timestamp() AS t) n
WHERE b.bucket_name = $1::text;
