-- The database clock for `enqueueBatchFast`, read once inside the COPY's transaction. COPY cannot
-- evaluate expressions, so the caller derives every job's times from this one reading with the
-- arithmetic `enqueueBatch` does in SQL (run time, pending or scheduled, schedule-to-close
-- deadline). The text form is written back verbatim as `created_at` (microseconds kept); the
-- milliseconds are for the arithmetic.
SELECT c.ts::text AS now_text, (extract(epoch FROM c.ts) * 1000)::float8 AS now_ms
FROM (SELECT clock_timestamp() AS ts) c;
