-- The second half of 0012_pre_batch_index_without_running: a batch's running jobs are read through
-- jobs_running_idx, the others through jobs_batch_not_running_idx, so the index that also held
-- every running version goes. A `post` migration: the previous release's batch filter reads it.
DROP INDEX {schema}.jobs_batch_id_idx;
