-- name: insertBatch
-- A batch row, open (not sealed) and empty: the children that follow in the same transaction grow
-- it. $1 id, $2 queue, $3 failure threshold, $4 finalizer job id.
INSERT INTO {schema}.batches (id, queue, failure_threshold, finalizer_job_id)
VALUES ($1, $2, $3, $4)
RETURNING *;

-- name: lockBatch
-- The row a later chunk of a streaming enqueue adds to, locked so that no outcome is counted
-- against its size while the chunk grows it.
SELECT * FROM {schema}.batches WHERE id = $1 FOR UPDATE;

-- name: growBatch
-- Counts $2 new children into the batch and, with $3, seals it. A sealed active batch whose every
-- child is already terminal completes here (its last outcome was counted before the seal).
WITH grown AS (
  SELECT id, expected_size + $2::int AS size, sealed OR $3::boolean AS sealed_now,
    succeeded + failed + cancelled + crashed + abandoned AS terminal
  FROM {schema}.batches WHERE id = $1
)
UPDATE {schema}.batches AS b
SET expected_size = g.size, sealed = g.sealed_now,
    status = CASE WHEN b.status = 'active' AND g.sealed_now AND g.terminal >= g.size THEN 'complete' ELSE b.status END,
    completed_at = CASE WHEN b.status = 'active' AND g.sealed_now AND g.terminal >= g.size
                        THEN clock_timestamp() ELSE b.completed_at END
FROM grown g
WHERE b.id = g.id
RETURNING b.*;

-- name: getBatch
SELECT * FROM {schema}.batches WHERE id = $1;

-- name: batchCounts
-- A batch's row with its counters, in one round trip; for a batch without a row, its children
-- counted from the jobs table instead (by status, the job $2 left out). The two arms of the
-- membership test match the partial indexes that hold batch children (see filter-sql.ts).
WITH counted AS (
  SELECT j.status::text AS status, count(*)::int AS n
  FROM {schema}.jobs j
  WHERE NOT EXISTS (SELECT 1 FROM {schema}.batches WHERE id = $1::uuid)
    AND ((j.metadata ? 'batch_id' AND (j.metadata ->> 'batch_id') = $1::text AND j.status <> 'running')
      OR (j.metadata ? 'batch_id' AND (j.metadata ->> 'batch_id') = $1::text AND j.status = 'running'))
    AND ($2::uuid IS NULL OR j.id <> $2::uuid)
  GROUP BY j.status
)
SELECT b.*, (SELECT coalesce(jsonb_object_agg(c.status, c.n), '{}'::jsonb) FROM counted c) AS child_counts
FROM (SELECT 1) AS one
LEFT JOIN {schema}.batches b ON b.id = $1::uuid;

-- name: listBatches
-- Newest first, keyset on (created_at, id). $1 queue or NULL, $2 active (true: active only; false:
-- complete or aborted only) or NULL, $3 batch id or NULL, $4 cursor time (text, microseconds kept)
-- or NULL, $5 cursor id, $6 limit. created_at comes back as text too, for the next cursor.
SELECT b.*, b.created_at::text AS created_at_text
FROM {schema}.batches b
WHERE ($1::text IS NULL OR b.queue = $1)
  AND ($2::boolean IS NULL OR (b.status = 'active') = $2)
  AND ($3::uuid IS NULL OR b.id = $3)
  AND ($4::timestamptz IS NULL OR (b.created_at, b.id) < ($4::timestamptz, $5::uuid))
ORDER BY b.created_at DESC, b.id DESC
LIMIT $6;

-- name: completeStaleBatches
-- The safety net: an active sealed batch with no child left that is not terminal completes. The
-- trigger completes batches as their last child ends; this finds any it could not (none is known).
WITH stale AS (
  SELECT b.id FROM {schema}.batches b
  WHERE b.status = 'active' AND b.sealed
    AND NOT EXISTS (
      SELECT 1 FROM {schema}.jobs j
      WHERE j.batch_id = b.id AND j.status IN ('pending', 'scheduled', 'running')
    )
  ORDER BY b.created_at
  LIMIT $1
  FOR UPDATE OF b SKIP LOCKED
)
UPDATE {schema}.batches AS b
SET status = 'complete', completed_at = clock_timestamp()
FROM stale s
WHERE b.id = s.id
RETURNING b.id;

-- name: pruneBatches
-- Batch rows finished more than $1 ms ago (database clock) whose children have all been pruned
-- (moved to the archive or deleted). At most $2 rows.
WITH doomed AS (
  SELECT b.id FROM {schema}.batches b
  WHERE b.status <> 'active' AND b.completed_at < clock_timestamp() - $1::float8 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.batch_id = b.id)
  ORDER BY b.completed_at
  LIMIT $2
  FOR UPDATE OF b SKIP LOCKED
)
DELETE FROM {schema}.batches AS b USING doomed d WHERE b.id = d.id
RETURNING b.id;
