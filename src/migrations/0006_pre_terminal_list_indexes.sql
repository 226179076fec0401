-- Listings over a table that is mostly finished jobs (the admin UI's jobs list, `list()` without a
-- status or with a terminal one): `created_at_desc` and the default dispatch order had no index and
-- sorted every row that matched (a million rows: a fraction of a second to seconds per page). These
-- two hold only jobs in a terminal status, which no enqueue and no claim writes: a job takes its
-- entries when it finishes (the write that already adds its jobs_finished_at_idx entry), and keeps
-- them until it is retried or pruned. They lead with the status: a listing reads one ordered range
-- per terminal status and merges them (list-sql.ts), so a rare status (crashed, abandoned) reads only
-- its own entries. They include the queue, actor and tags, the filters a listing walks them with,
-- so the walk is index-only: a filter that matches one job in a hundred passes over a hundred
-- entries per row it keeps, without reading those jobs' rows. Live jobs are listed through the
-- indexes the worker keeps for them.
--
-- Like every bundled migration this runs in a transaction, and building an index blocks writes to
-- jobs while it lasts (seconds per million rows). On a large table, build them beforehand without
-- blocking, with the same statements as CREATE INDEX CONCURRENTLY IF NOT EXISTS (docs/migrations.md);
-- this migration then finds them and skips them.
CREATE INDEX IF NOT EXISTS jobs_terminal_created_idx ON {schema}.jobs (status, created_at, id)
  INCLUDE (queue, actor, tags)
  WHERE status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
CREATE INDEX IF NOT EXISTS jobs_terminal_dispatch_order_idx ON {schema}.jobs (status, priority DESC, scheduled_at, id)
  INCLUDE (queue, actor, tags)
  WHERE status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
