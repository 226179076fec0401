-- Job history without a foreign-key check per history row.
--
-- Every attempt and event row referenced jobs(id) with ON DELETE CASCADE. Postgres checks such a
-- reference with a query and a row lock (FOR KEY SHARE on the job) for every inserted row: three
-- checks per job on the hot path (one attempt, two events), measured at ~22 % of a worker's
-- throughput on two cores. The rows are only ever inserted by statements that have just updated (and
-- so locked) the job they belong to, so the check never finds anything wrong.
--
-- The cascade is kept: deleting jobs (retention, an operator's DELETE or TRUNCATE) still deletes
-- their attempts and events, through statement-level triggers that cost nothing on insert.
ALTER TABLE {schema}.job_attempts DROP CONSTRAINT job_attempts_job_id_fkey;
ALTER TABLE {schema}.job_events DROP CONSTRAINT job_events_job_id_fkey;

-- Both tables are read by job (`attempts()`, `events()`, the cascade) and, for events, by id through
-- the partial reclaim index. One primary key on (job_id, id) serves the reads by job and keeps id
-- unique, where a key on id plus an index on (job_id, id) cost two index entries per row.
ALTER TABLE {schema}.job_attempts DROP CONSTRAINT job_attempts_pkey;
DROP INDEX {schema}.job_attempts_job_idx;
ALTER TABLE {schema}.job_attempts ADD CONSTRAINT job_attempts_pkey PRIMARY KEY (job_id, id);

ALTER TABLE {schema}.job_events DROP CONSTRAINT job_events_pkey;
DROP INDEX {schema}.job_events_job_idx;
ALTER TABLE {schema}.job_events ADD CONSTRAINT job_events_pkey PRIMARY KEY (job_id, id);

CREATE FUNCTION {schema}.jobs_delete_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id;
  DELETE FROM {schema}.job_events e USING gone g WHERE e.job_id = g.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER jobs_delete_history
  AFTER DELETE ON {schema}.jobs
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_delete_history();

CREATE FUNCTION {schema}.jobs_truncate_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE {schema}.job_attempts, {schema}.job_events;
  RETURN NULL;
END
$$;

CREATE TRIGGER jobs_truncate_history
  AFTER TRUNCATE ON {schema}.jobs
  FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_truncate_history();
