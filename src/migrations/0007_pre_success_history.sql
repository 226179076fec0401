-- A plain success keeps its history in its job row. The outcome write of a batch of plain
-- successes (`settleSucceeded`) inserted two history rows per job, a job_attempts row and a
-- job_events row, each with its primary-key entry: most of what the server spent on a no-op job
-- after claiming it. Those two rows hold nothing the job row cannot: the attempt's worker, handler
-- start and duration, and two ids. The job row now carries them (the `success_*` columns, set by
-- that one UPDATE), and `job_attempts` and `job_events` become views that read the stored rows and
-- the rows a job implies, under the names and with the columns they always had:
--   - `job_attempt_log` and `job_event_log` are the tables (renamed with their sequences; their
--     rows, keys and the reclaim feed's index stay as they were). Every other outcome, and every event of
--     other kinds, is stored there as before.
--   - A job whose `success_attempt_id` is set adds one attempt row (`succeeded`) and one event row
--     (running → succeeded) to the views, with ids drawn from the tables' own sequences when the
--     job succeeded, so ids stay unique and ordered with the stored rows. A succeeded job never
--     changes status again (an admin retry takes only failed, crashed, cancelled or abandoned
--     jobs), so its implied rows never need storing; archiving copies them like stored rows.
-- The views take inserts (INSTEAD OF triggers write the tables), so SQL that wrote history through
-- the old names keeps working; TaskQ's own statements write the tables.
ALTER TABLE {schema}.jobs
  ADD COLUMN success_attempt_id  bigint,
  ADD COLUMN success_event_id    bigint,
  ADD COLUMN success_worker_id   uuid,
  ADD COLUMN success_started_at  timestamptz,
  ADD COLUMN success_duration_ms double precision;

ALTER TABLE {schema}.job_attempts RENAME TO job_attempt_log;
ALTER TABLE {schema}.job_events RENAME TO job_event_log;
ALTER SEQUENCE {schema}.job_attempts_id_seq RENAME TO job_attempt_log_id_seq;
ALTER SEQUENCE {schema}.job_events_id_seq RENAME TO job_event_log_id_seq;

CREATE VIEW {schema}.job_attempts AS
  SELECT a.id, a.job_id, a.attempt, a.worker_id, a.started_at, a.finished_at, a.duration_ms, a.outcome,
         a.error_class, a.error_message, a.error_traceback
  FROM {schema}.job_attempt_log a
  UNION ALL
  SELECT j.success_attempt_id, j.id, j.attempt, j.success_worker_id, j.success_started_at, j.finished_at,
         j.success_duration_ms, 'succeeded'::text, NULL::text, NULL::text, NULL::text
  FROM {schema}.jobs j
  WHERE j.success_attempt_id IS NOT NULL;

CREATE VIEW {schema}.job_events AS
  SELECT e.id, e.job_id, e.occurred_at, e.kind, e.detail
  FROM {schema}.job_event_log e
  UNION ALL
  SELECT j.success_event_id, j.id, j.finished_at, 'state_change'::text,
         jsonb_build_object('from_state', 'running', 'to_state', 'succeeded', 'reason', 'succeeded',
                            'worker_id', j.success_worker_id, 'attempt', j.attempt)
  FROM {schema}.jobs j
  WHERE j.success_attempt_id IS NOT NULL;

CREATE FUNCTION {schema}.job_attempts_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {schema}.job_attempt_log (job_id, attempt, worker_id, started_at, finished_at, duration_ms, outcome,
    error_class, error_message, error_traceback)
  VALUES (NEW.job_id, NEW.attempt, NEW.worker_id, NEW.started_at, coalesce(NEW.finished_at, clock_timestamp()),
    NEW.duration_ms, NEW.outcome, NEW.error_class, NEW.error_message, NEW.error_traceback)
  RETURNING id, finished_at INTO NEW.id, NEW.finished_at;
  RETURN NEW;
END
$$;

CREATE TRIGGER job_attempts_insert
  INSTEAD OF INSERT ON {schema}.job_attempts
  FOR EACH ROW EXECUTE FUNCTION {schema}.job_attempts_insert();

CREATE FUNCTION {schema}.job_events_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {schema}.job_event_log (job_id, occurred_at, kind, detail)
  VALUES (NEW.job_id, coalesce(NEW.occurred_at, clock_timestamp()), NEW.kind, coalesce(NEW.detail, '{}'::jsonb))
  RETURNING id, occurred_at, detail INTO NEW.id, NEW.occurred_at, NEW.detail;
  RETURN NEW;
END
$$;

CREATE TRIGGER job_events_insert
  INSTEAD OF INSERT ON {schema}.job_events
  FOR EACH ROW EXECUTE FUNCTION {schema}.job_events_insert();

-- The history cascade (0001) names the tables; a job's implied rows go with its row.
CREATE OR REPLACE FUNCTION {schema}.jobs_delete_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {schema}.job_attempt_log a USING gone g WHERE a.job_id = g.id;
  DELETE FROM {schema}.job_event_log e USING gone g WHERE e.job_id = g.id;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {schema}.jobs_truncate_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE {schema}.job_attempt_log, {schema}.job_event_log;
  RETURN NULL;
END
$$;
