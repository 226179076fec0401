-- One index entry fewer per claimed job of a batch.
--
-- jobs_batch_id_idx held every version of a job enqueued by `enqueueBatch` (every such job carries
-- metadata.batch_id), so a claim (pending → running: a new row version, never a HOT update) paid an
-- entry in it for the running version, which the outcome write makes dead moments later. Running
-- jobs are few (at most the fleet's concurrency) and jobs_running_idx holds every one of them, so a
-- batch filter reads the batch's other jobs through this index and its running ones through
-- jobs_running_idx (a BitmapOr of the two; see filter-sql.ts).
--
-- This file only adds; 0013_post_drop_batch_index_with_running drops the index it replaces, after
-- every client runs the filter that no longer needs it.
CREATE INDEX jobs_batch_not_running_idx ON {schema}.jobs ((metadata ->> 'batch_id'))
  WHERE metadata ? 'batch_id' AND status <> 'running';
