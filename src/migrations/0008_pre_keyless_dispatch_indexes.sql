-- One dispatch index entry for a job without a fairness key, where there were two.
--
-- Every pending job had an entry in jobs_dispatch_idx (the claim's order) and in
-- jobs_fair_dispatch_idx (the round-robin claim's per-key order), although most jobs carry no
-- fairness key and most queues are strict FIFO. An index entry is the largest cost of an insert
-- after the row itself (~1 µs of server time and ~80 bytes of WAL each, measured on a 1,000-job
-- batch). The pending jobs are now split by whether they have a key:
--   - jobs_keyless_dispatch_idx: jobs without a key, in claim order (strict FIFO claims and the
--     key-less group of a round-robin claim);
--   - jobs_keyed_dispatch_idx: jobs with a key, in claim order (strict FIFO claims merge it with
--     the key-less index);
--   - jobs_keyed_fair_dispatch_idx: jobs with a key, per key (round-robin claims).
-- A job without a key now has one entry, a job with one two (as before).
--
-- This file only adds; the two indexes it replaces are dropped by 0009_post_drop_shared_dispatch_indexes,
-- after every worker runs the claim statements that read the new ones.
CREATE INDEX jobs_keyless_dispatch_idx ON {schema}.jobs (queue, actor, priority DESC, scheduled_at, id)
  WHERE status = 'pending' AND fairness_key IS NULL;
CREATE INDEX jobs_keyed_dispatch_idx ON {schema}.jobs (queue, actor, priority DESC, scheduled_at, id)
  WHERE status = 'pending' AND fairness_key IS NOT NULL;
CREATE INDEX jobs_keyed_fair_dispatch_idx ON {schema}.jobs (queue, actor, fairness_key, priority DESC, scheduled_at, id)
  WHERE status = 'pending' AND fairness_key IS NOT NULL;
