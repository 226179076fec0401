-- The database clock for `enqueueBatchFast`, read once inside the COPY's transaction. COPY cannot
-- evaluate expressions, so the caller derives every job's times from this one reading with the
-- arithmetic `enqueueBatch` does in SQL (run time, pending or scheduled, schedule-to-close
-- deadline). The text form is written back verbatim as `created_at` (microseconds kept); the
-- milliseconds are for the arithmetic.
-- First it takes the enqueue locks of the batch's actors ($1, see actorLockKey), shared, held until
-- the transaction ends, as `enqueueBatch` does.
SELECT c.ts::text AS now_text, (extract(epoch FROM c.ts) * 1000)::float8 AS now_ms, c.actor_locks
FROM (
  SELECT (SELECT count(*) FROM (
            SELECT pg_advisory_xact_lock_shared(l.k)
            FROM (SELECT DISTINCT hashtextextended(x, 0) AS k FROM unnest($1::text[]) AS x ORDER BY 1) l
          ) held) AS actor_locks,
         clock_timestamp() AS ts
) c;
