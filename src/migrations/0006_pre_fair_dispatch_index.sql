-- Round-robin claims without reading the whole backlog. The claim used to rank every pending job
-- of a round-robin (queue, actor) by fairness key on each call (700 ms per claim with 500k pending
-- jobs); it now walks the distinct keys of this index (one probe per key, the key-less group last)
-- and reads a few jobs per key in index order. Every pending job has an entry (one more per job):
-- a queue's mode can change at any time, so the key-less group must be readable here too.
CREATE INDEX jobs_fair_dispatch_idx ON {schema}.jobs (queue, actor, fairness_key, priority DESC, scheduled_at, id)
  WHERE status = 'pending';
