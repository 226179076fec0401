-- Two index entries fewer per claimed job.
--
-- jobs_actor_active_idx and jobs_queue_active_idx held every pending, scheduled and running job, so a
-- claim (pending → running: a new row version, never a HOT update) inserted an entry into each of
-- them for the running version — with the primary key and jobs_running_idx, four of the claim's
-- index inserts (~1 µs of server time and ~70 bytes of WAL each, measured). Running jobs are few
-- (at most the fleet's concurrency) and jobs_running_idx already holds every one of them, so the
-- questions about running jobs (running counts per actor, the singleton gate, countActiveJobs,
-- cancelWhere) read that index, and these two only hold the waiting jobs (pending and scheduled).
--
-- This file only adds; 0011_post_drop_active_status_indexes drops the two it replaces, after every
-- worker and client runs statements that no longer need them.
CREATE INDEX jobs_actor_waiting_idx ON {schema}.jobs (actor, status)
  WHERE status IN ('pending', 'scheduled');
CREATE INDEX jobs_queue_waiting_idx ON {schema}.jobs (queue, status)
  WHERE status IN ('pending', 'scheduled');
