-- Maintenance: the archive that retention pruning moves terminal jobs into, and the indexes the
-- leader's sweeps read.

CREATE TABLE {schema}.jobs_archive (LIKE {schema}.jobs INCLUDING DEFAULTS);
ALTER TABLE {schema}.jobs_archive
  ADD COLUMN archived_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  ADD COLUMN expire_at timestamptz NOT NULL,
  ADD PRIMARY KEY (id);
CREATE INDEX jobs_archive_expire_idx ON {schema}.jobs_archive (expire_at);
CREATE INDEX jobs_archive_actor_idx ON {schema}.jobs_archive (actor, finished_at);

CREATE TABLE {schema}.job_attempts_archive (LIKE {schema}.job_attempts INCLUDING DEFAULTS);
ALTER TABLE {schema}.job_attempts_archive
  ALTER COLUMN id DROP DEFAULT,
  ADD PRIMARY KEY (id),
  ADD FOREIGN KEY (job_id) REFERENCES {schema}.jobs_archive (id) ON DELETE CASCADE;
CREATE INDEX job_attempts_archive_job_idx ON {schema}.job_attempts_archive (job_id, id);

-- Sweep 2 (deadlines): only active jobs that carry a deadline.
CREATE INDEX jobs_deadline_idx ON {schema}.jobs (schedule_to_close)
  WHERE status IN ('pending', 'scheduled') AND schedule_to_close IS NOT NULL;
-- Result expiry: only stored results with a TTL.
CREATE INDEX jobs_result_expiry_idx ON {schema}.jobs (result_expires_at)
  WHERE result IS NOT NULL AND result_expires_at IS NOT NULL;
-- Sweep 1 (reclaim): running jobs by lease expiry.
CREATE INDEX jobs_lease_expiry_idx ON {schema}.jobs (lock_expires_at) WHERE status = 'running';
