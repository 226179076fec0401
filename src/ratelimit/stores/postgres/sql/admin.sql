-- name: listRateLimitBuckets
-- Published rate limits (Redis- and Postgres-backed; memory ones live in one process only), all or
-- the one named by $1.
SELECT bucket_name, kind, capacity, refill_per_second, window_ms, backend, keyed, last_used_at
FROM {schema}.rate_limit_buckets
WHERE ($1::text IS NULL OR bucket_name = $1::text)
ORDER BY bucket_name;

-- name: listReservations
-- Every reservation with slot rows (or the one named by $1): slots, live holders (an expired lease
-- is free), keyed mark.
SELECT bucket_name,
       count(*)::int AS slots,
       count(*) FILTER (WHERE job_id IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at >= clock_timestamp()))::int AS held,
       bool_and(keyed) AS keyed,
       max(last_used_at) AS last_used_at
FROM {schema}.reservation_slots
WHERE ($1::text IS NULL OR bucket_name = $1::text)
GROUP BY bucket_name ORDER BY bucket_name;
