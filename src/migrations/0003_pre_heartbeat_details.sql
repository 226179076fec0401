-- Temporal-style heartbeats: the details a handler passed to its last ctx.heartbeat(), shown to the
-- next attempt so it can resume where the previous one stopped.
ALTER TABLE {schema}.jobs ADD COLUMN heartbeat_details jsonb;
ALTER TABLE {schema}.jobs_archive ADD COLUMN heartbeat_details jsonb;
