-- name: listQueues
SELECT name, mode, max_concurrent, updated_at FROM {schema}.queues ORDER BY name;

-- name: upsertQueueMode
-- Nothing in TaskQ creates queue rows, so configuration is an upsert (a plain UPDATE would do nothing).
INSERT INTO {schema}.queues (name, mode) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET mode = EXCLUDED.mode, updated_at = now()
RETURNING name, mode, max_concurrent, updated_at;

-- name: upsertQueueMaxConcurrent
INSERT INTO {schema}.queues (name, max_concurrent) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET max_concurrent = EXCLUDED.max_concurrent, updated_at = now()
RETURNING name, mode, max_concurrent, updated_at;

-- name: setActorCapacity
-- $2..$4 new values; $5..$7 whether each is to be changed (unchanged fields keep their value).
UPDATE {schema}.actor_config
SET max_concurrent = CASE WHEN $5 THEN $2::int ELSE max_concurrent END,
    max_pending = CASE WHEN $6 THEN $3::int ELSE max_pending END,
    result_ttl = CASE WHEN $7 THEN $4::float8 * interval '1 millisecond' ELSE result_ttl END,
    updated_at = now()
WHERE actor = $1
RETURNING actor, queue, max_concurrent, max_pending, (extract(epoch FROM result_ttl) * 1000)::float8 AS result_ttl_ms,
          metadata, updated_at;
