-- One index entry fewer per enqueued job.
--
-- Every waiting (pending or scheduled) job had an entry in jobs_actor_waiting_idx (actor, status)
-- and one in jobs_queue_waiting_idx (queue, status). A batch insert's index entries are most of its
-- cost after the rows themselves (measured: dropping one of the two made `enqueueBatch` of 1,000
-- jobs ~5 % faster). One index on (actor, queue) answers both questions:
--   - per actor (the singleton and maxPending gates of `enqueue`, countPendingJobs, cancelWhere by
--     actor): the leading column;
--   - per queue (countActiveJobs, cancelWhere by queue): the few distinct actors are walked first
--     (a loose index scan, see countActiveJobs in jobs-read.sql), then each (actor, queue) prefix.
-- The status is not part of the key: nothing asks for pending apart from scheduled through it.
--
-- This file only adds; 0015_post_drop_split_waiting_indexes drops the two it replaces, after every
-- client runs statements that no longer need them.
CREATE INDEX jobs_waiting_idx ON {schema}.jobs (actor, queue)
  WHERE status IN ('pending', 'scheduled');
