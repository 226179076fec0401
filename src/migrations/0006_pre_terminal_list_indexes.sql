-- taskq:no-transaction
-- Listings over a table that is mostly finished jobs (the admin UI's jobs list, `list()` without a
-- status): `created_at_desc` and the default dispatch order had no index and sorted every row that
-- matched (a million rows, seconds per page). These two hold only jobs in a terminal status, which
-- no enqueue and no claim writes: a job takes its entries when it finishes (the write that already
-- adds its jobs_finished_at_idx entry), and keeps them until it is retried or pruned. Live jobs are
-- listed through the indexes the worker keeps for them (list-sql.ts). The predicate is repeated word
-- for word by the listing statements, so the planner can prove it.
--
-- CONCURRENTLY, outside a transaction: building an index over a large jobs table must not block
-- enqueues and claims for the length of the build. A build that fails midway leaves an invalid
-- index of that name; drop it and migrate again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_terminal_created_idx ON {schema}.jobs (created_at, id)
  WHERE status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_terminal_dispatch_order_idx ON {schema}.jobs (priority DESC, scheduled_at, id)
  WHERE status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
