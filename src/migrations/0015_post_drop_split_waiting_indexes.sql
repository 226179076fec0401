-- The second half of 0014_pre_waiting_index: waiting jobs are read through jobs_waiting_idx, per
-- actor and per queue. A `post` migration: the previous release's countActiveJobs reads
-- jobs_queue_waiting_idx.
DROP INDEX {schema}.jobs_actor_waiting_idx;
DROP INDEX {schema}.jobs_queue_waiting_idx;
