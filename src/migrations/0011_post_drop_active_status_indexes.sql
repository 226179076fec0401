-- The second half of 0010_pre_waiting_status_indexes: running jobs are read through
-- jobs_running_idx, waiting ones through the new per-actor and per-queue indexes, so the two that
-- also held every running job go. A `post` migration: the previous release's singleton gate and
-- countActiveJobs still read them.
DROP INDEX {schema}.jobs_actor_active_idx;
DROP INDEX {schema}.jobs_queue_active_idx;
