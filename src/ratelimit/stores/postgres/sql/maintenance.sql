-- name: sweepIdleKeyedBuckets
-- Leader sweep: deletes up to $2 keyed rate-limit rows not used for $1 ms, and their window log.
-- Consumed-quota veto: a fixed-quota token bucket (refill 0) that has spent part of its quota is
-- kept, or its next materialisation would start full again. A row an acquirer holds is waited on
-- and re-checked (its fresh last_used_at then spares it).
WITH n AS MATERIALIZED (
  SELECT clock_timestamp() AS t
),
victims AS (
  SELECT b.bucket_name
  FROM {schema}.rate_limit_buckets b, n
  WHERE b.keyed AND b.last_used_at < n.t - $1::float8 * interval '1 millisecond'
    AND NOT (b.kind = 'token_bucket' AND b.refill_per_second = 0 AND b.tokens IS NOT NULL AND b.tokens < b.capacity)
  ORDER BY b.last_used_at
  LIMIT $2::int
),
gone AS (
  DELETE FROM {schema}.rate_limit_buckets b
  USING victims v, n
  WHERE b.bucket_name = v.bucket_name AND b.keyed
    AND b.last_used_at < n.t - $1::float8 * interval '1 millisecond'
    AND NOT (b.kind = 'token_bucket' AND b.refill_per_second = 0 AND b.tokens IS NOT NULL AND b.tokens < b.capacity)
  RETURNING b.bucket_name
),
entries AS (
  DELETE FROM {schema}.rate_limit_window_entries e USING gone g WHERE e.bucket_name = g.bucket_name
)
SELECT count(*)::int AS deleted FROM gone;

-- name: sweepIdleKeyedSlots
-- Leader sweep: deletes the slot rows of up to $2 keyed reservations whose every slot is free or
-- lease-expired and none used for $1 ms. The row predicate is re-checked on delete, so a slot
-- acquired meanwhile survives (the registry re-creates the missing rows on its next denial).
WITH n AS MATERIALIZED (
  SELECT clock_timestamp() AS t
),
idle AS (
  SELECT s.bucket_name
  FROM {schema}.reservation_slots s, n
  WHERE s.keyed
  GROUP BY s.bucket_name, n.t
  HAVING bool_and(s.job_id IS NULL OR s.lease_expires_at < n.t)
     AND max(s.last_used_at) < n.t - $1::float8 * interval '1 millisecond'
  LIMIT $2::int
),
gone AS (
  DELETE FROM {schema}.reservation_slots s
  USING idle i, n
  WHERE s.bucket_name = i.bucket_name AND s.keyed AND (s.job_id IS NULL OR s.lease_expires_at < n.t)
    AND s.last_used_at < n.t - $1::float8 * interval '1 millisecond'
  RETURNING s.bucket_name
)
SELECT count(DISTINCT bucket_name)::int AS buckets, count(*)::int AS rows FROM gone;
