-- Batches with a failure policy or a finalizer. A batch without either has no row: its children only
-- carry metadata.batch_id. A batch with a row counts its children's outcomes in the row, and those
-- counters change in the transaction that changes a child's status, whichever statement does it
-- (an outcome write, a bulk cancel, a sweep, an admin retry): the trigger below is the one place
-- that keeps them, so no crash between a terminal write and its accounting can lose an update, and
-- a writer added later cannot forget it. Adding a table, a nullable column and a trigger is safe
-- while workers of the previous version run (their jobs have no batches row).
CREATE TABLE {schema}.batches (
  id                   uuid PRIMARY KEY,
  -- The first child's queue (a batch may span queues: a filter on it is approximate).
  queue                text NOT NULL,
  status               text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'complete', 'aborted')),
  -- Children written so far (new rows only: an idempotency hit on another job is not a child).
  expected_size        integer NOT NULL DEFAULT 0 CHECK (expected_size >= 0),
  -- False while a streaming enqueue may still add children: an open batch never completes.
  sealed               boolean NOT NULL DEFAULT false,
  consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  -- AbortBatchAfter(n): abort at n consecutive failed children. NULL: never abort.
  failure_threshold    integer CHECK (failure_threshold IS NULL OR failure_threshold >= 1),
  finalizer_job_id     uuid,
  -- Reserved (the reference keeps it NULL).
  originating_actor    text,
  -- Children by terminal status: the trigger keeps them equal to the jobs table.
  succeeded            integer NOT NULL DEFAULT 0,
  failed               integer NOT NULL DEFAULT 0,
  cancelled            integer NOT NULL DEFAULT 0,
  crashed              integer NOT NULL DEFAULT 0,
  abandoned            integer NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  completed_at         timestamptz,
  metadata             jsonb NOT NULL DEFAULT '{}'::jsonb
);
-- listBatches' keyset order.
CREATE INDEX batches_created_idx ON {schema}.batches (created_at DESC, id DESC);
-- The safety-net sweep and prune look at active batches and finished ones by age.
CREATE INDEX batches_active_idx ON {schema}.batches (created_at) WHERE status = 'active';

-- The batches row a job counts toward: set only for children of a batch that has a row (every
-- batch child keeps metadata.batch_id too). Appended last, as ADD COLUMN must: only the trigger's
-- condition and the batch statements read it.
ALTER TABLE {schema}.jobs ADD COLUMN batch_id uuid;
CREATE INDEX jobs_batch_id_idx ON {schema}.jobs (batch_id, status) WHERE batch_id IS NOT NULL;

-- A child entered or left a terminal status: count it. Entering: its status's counter goes up;
-- `failed` extends the failure streak and `succeeded` ends it (cancelled, crashed and abandoned
-- leave it). At the threshold the batch is aborted: its pending and scheduled children are
-- cancelled here, in the same transaction (running ones finish), and counted in one step (the
-- trigger skips the rows the abort itself changes). A sealed active batch whose every child is
-- terminal is complete. Leaving (an admin retry): the counter goes down and a complete batch is
-- active again. The batches row lock orders concurrent outcomes, so the streak is the order in
-- which the outcomes' transactions counted them.
CREATE FUNCTION {schema}.batch_child_status_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  was_terminal boolean := OLD.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
  is_terminal  boolean := NEW.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
  b            record;
  n            integer;
BEGIN
  IF was_terminal = is_terminal THEN
    RETURN NULL;
  END IF;
  IF current_setting('taskq.batch_aborting', true) = NEW.batch_id::text THEN
    RETURN NULL;
  END IF;
  UPDATE {schema}.batches SET
    succeeded = succeeded + (CASE WHEN is_terminal AND NEW.status = 'succeeded' THEN 1 WHEN was_terminal AND OLD.status = 'succeeded' THEN -1 ELSE 0 END),
    failed    = failed    + (CASE WHEN is_terminal AND NEW.status = 'failed'    THEN 1 WHEN was_terminal AND OLD.status = 'failed'    THEN -1 ELSE 0 END),
    cancelled = cancelled + (CASE WHEN is_terminal AND NEW.status = 'cancelled' THEN 1 WHEN was_terminal AND OLD.status = 'cancelled' THEN -1 ELSE 0 END),
    crashed   = crashed   + (CASE WHEN is_terminal AND NEW.status = 'crashed'   THEN 1 WHEN was_terminal AND OLD.status = 'crashed'   THEN -1 ELSE 0 END),
    abandoned = abandoned + (CASE WHEN is_terminal AND NEW.status = 'abandoned' THEN 1 WHEN was_terminal AND OLD.status = 'abandoned' THEN -1 ELSE 0 END),
    consecutive_failures = CASE
      WHEN is_terminal AND NEW.status = 'failed' THEN consecutive_failures + 1
      WHEN is_terminal AND NEW.status = 'succeeded' THEN 0
      ELSE consecutive_failures END
  WHERE id = NEW.batch_id
  RETURNING * INTO b;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;

  IF b.status = 'active' AND is_terminal AND NEW.status = 'failed'
     AND b.failure_threshold IS NOT NULL AND b.consecutive_failures >= b.failure_threshold THEN
    PERFORM set_config('taskq.batch_aborting', b.id::text, true);
    WITH target AS (
      SELECT id, status FROM {schema}.jobs
      WHERE batch_id = b.id AND status IN ('pending', 'scheduled')
      FOR UPDATE
    ),
    aborted AS (
      UPDATE {schema}.jobs AS j
      SET status = 'cancelled', finished_at = clock_timestamp(), cancel_requested_at = clock_timestamp(),
          error_class = 'BatchAborted', error_message = 'Batch aborted due to consecutive failures'
      FROM target t
      WHERE j.id = t.id AND j.status IN ('pending', 'scheduled')
      RETURNING j.id, t.status::text AS from_status
    ),
    ev AS (
      INSERT INTO {schema}.job_events (job_id, kind, detail)
      SELECT id, 'state_change',
        jsonb_build_object('from_state', from_status, 'to_state', 'cancelled', 'reason', 'batch_aborted',
                           'batch_id', b.id)
      FROM aborted
      RETURNING 1
    )
    SELECT count(*)::integer INTO n FROM aborted;
    PERFORM set_config('taskq.batch_aborting', '', true);
    UPDATE {schema}.batches SET status = 'aborted', completed_at = clock_timestamp(), cancelled = cancelled + n
    WHERE id = b.id;
  ELSIF b.status = 'active' AND is_terminal AND b.sealed
        AND b.succeeded + b.failed + b.cancelled + b.crashed + b.abandoned >= b.expected_size THEN
    UPDATE {schema}.batches SET status = 'complete', completed_at = clock_timestamp() WHERE id = b.id;
  ELSIF b.status = 'complete' AND NOT is_terminal THEN
    UPDATE {schema}.batches SET status = 'active', completed_at = NULL WHERE id = b.id;
  END IF;
  RETURN NULL;
END
$$;

-- Fires only when a statement sets status on a batch child whose status changes: dispatch of a
-- child calls the function (it returns at once); jobs outside a counted batch never do.
CREATE TRIGGER jobs_batch_child_status
AFTER UPDATE OF status ON {schema}.jobs
FOR EACH ROW
WHEN (NEW.batch_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION {schema}.batch_child_status_changed();
