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

-- Counting happens once per transaction, at its commit, not once per row: a statement that ends a
-- thousand children of one batch would otherwise update its row a thousand times in one
-- transaction, and each update walks the chain of versions the earlier ones left (quadratic). So the
-- row trigger only notes each child that entered or left a terminal status in transaction-local
-- settings: `taskq.batch_ids` lists the batches met (ids joined by commas) and `taskq.batch_codes_<k>`
-- holds one code per change of the k-th (codes below, 0-based k), in the order the transaction made
-- them — short strings, so that noting a thousand children copies little; a deferred trigger folds those notes into the batch rows when the transaction
-- commits, locking them in id order (two transactions meeting the same batches in opposite orders
-- queue up instead of deadlocking). Both fire only for children of a batch with a row: other jobs
-- cost nothing.
--
-- Codes: S F C X A — entered succeeded, failed, cancelled, crashed, abandoned; s f c x a — left it
-- (an admin retry).
CREATE FUNCTION {schema}.batch_child_status_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  was_terminal boolean := OLD.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
  is_terminal  boolean := NEW.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned');
  code         text;
  key          text := NEW.batch_id::text;
  ids          text;
  at           integer;
  k            integer;
BEGIN
  IF was_terminal = is_terminal THEN
    RETURN NULL;
  END IF;
  -- The abort below counts the children it cancels itself.
  IF current_setting('taskq.batch_aborting', true) = NEW.batch_id::text THEN
    RETURN NULL;
  END IF;
  code := CASE WHEN is_terminal THEN
            CASE NEW.status WHEN 'succeeded' THEN 'S' WHEN 'failed' THEN 'F' WHEN 'cancelled' THEN 'C'
                            WHEN 'crashed' THEN 'X' ELSE 'A' END
          ELSE
            CASE OLD.status WHEN 'succeeded' THEN 's' WHEN 'failed' THEN 'f' WHEN 'cancelled' THEN 'c'
                            WHEN 'crashed' THEN 'x' ELSE 'a' END
          END;
  ids := coalesce(current_setting('taskq.batch_ids', true), '');
  at := position(key IN ids);
  IF at = 0 THEN
    -- Each id takes 36 characters and a comma.
    k := (length(ids) + 1) / 37;
    PERFORM set_config('taskq.batch_ids', CASE WHEN ids = '' THEN key ELSE ids || ',' || key END, true);
  ELSE
    k := (at - 1) / 37;
  END IF;
  PERFORM set_config('taskq.batch_codes_' || k,
    coalesce(current_setting('taskq.batch_codes_' || k, true), '') || code, true);
  RETURN NULL;
END
$$;

-- Folds the transaction's notes into the batch rows (the first of its deferred events does it all;
-- the others find no note and return). Entering: the status's counter goes up; `failed`
-- extends the failure streak and `succeeded` ends it (cancelled, crashed and abandoned leave it).
-- At the threshold the batch is aborted: its pending and scheduled children, and those claimed but
-- not started, are cancelled here, in the same transaction (started ones finish), and counted in
-- one step. Leaving (an admin retry): the counter goes down and a complete batch is active again. Then a sealed active batch whose every
-- child is terminal is complete.
CREATE FUNCTION {schema}.batch_outcomes_fold() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  ids    text := current_setting('taskq.batch_ids', true);
  item   record;
  codes  text;
  b      record;
  code   text;
  n      integer;
  i      integer;
  ds integer; df integer; dc integer; dx integer; da integer;
  streak integer;
  left_terminal boolean;
  abort_now boolean;
BEGIN
  IF ids IS NULL OR ids = '' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('taskq.batch_ids', '', true);
  FOR item IN
    SELECT x.id::uuid AS batch_id, (x.ord - 1)::integer AS k
    FROM unnest(string_to_array(ids, ',')) WITH ORDINALITY AS x(id, ord)
    ORDER BY 1
  LOOP
    codes := coalesce(current_setting('taskq.batch_codes_' || item.k, true), '');
    PERFORM set_config('taskq.batch_codes_' || item.k, '', true);
    SELECT * INTO b FROM {schema}.batches WHERE id = item.batch_id FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    ds := 0; df := 0; dc := 0; dx := 0; da := 0;
    streak := b.consecutive_failures;
    left_terminal := false;
    abort_now := false;
    FOR i IN 1 .. length(codes) LOOP
      code := substr(codes, i, 1);
      CASE code
        WHEN 'S' THEN ds := ds + 1; streak := 0;
        WHEN 'F' THEN df := df + 1; streak := streak + 1;
          IF b.status = 'active' AND b.failure_threshold IS NOT NULL AND streak >= b.failure_threshold THEN
            abort_now := true;
          END IF;
        WHEN 'C' THEN dc := dc + 1;
        WHEN 'X' THEN dx := dx + 1;
        WHEN 'A' THEN da := da + 1;
        WHEN 's' THEN ds := ds - 1; left_terminal := true;
        WHEN 'f' THEN df := df - 1; left_terminal := true;
        WHEN 'c' THEN dc := dc - 1; left_terminal := true;
        WHEN 'x' THEN dx := dx - 1; left_terminal := true;
        ELSE da := da - 1; left_terminal := true;
      END CASE;
    END LOOP;
    UPDATE {schema}.batches SET
      succeeded = succeeded + ds, failed = failed + df, cancelled = cancelled + dc,
      crashed = crashed + dx, abandoned = abandoned + da, consecutive_failures = streak,
      status = CASE WHEN status = 'complete' AND left_terminal THEN 'active' ELSE status END,
      completed_at = CASE WHEN status = 'complete' AND left_terminal THEN NULL ELSE completed_at END
    WHERE id = b.id
    RETURNING * INTO b;
    IF abort_now THEN
      PERFORM set_config('taskq.batch_aborting', b.id::text, true);
      -- Children claimed into a worker's local queue but not started (running, started_at null) are
      -- cancelled too, their attempt given back: the worker's markStarted then finds them gone.
      WITH target AS (
        SELECT id, status FROM {schema}.jobs
        WHERE batch_id = b.id
          AND (status IN ('pending', 'scheduled') OR (status = 'running' AND started_at IS NULL))
        FOR UPDATE
      ),
      aborted AS (
        UPDATE {schema}.jobs AS j
        SET status = 'cancelled', finished_at = clock_timestamp(), cancel_requested_at = clock_timestamp(),
            error_class = 'BatchAborted', error_message = 'Batch aborted due to consecutive failures',
            attempt = CASE WHEN j.status = 'running' THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,
            locked_by_worker = NULL, lock_expires_at = NULL
        FROM target t
        WHERE j.id = t.id
          AND (j.status IN ('pending', 'scheduled') OR (j.status = 'running' AND j.started_at IS NULL))
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
    ELSIF b.status = 'active' AND b.sealed
          AND b.succeeded + b.failed + b.cancelled + b.crashed + b.abandoned >= b.expected_size THEN
      UPDATE {schema}.batches SET status = 'complete', completed_at = clock_timestamp() WHERE id = b.id;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

-- Both fire only when a batch child enters or leaves a terminal status (a claim, a retry or a
-- snooze of a child calls neither), and jobs outside a counted batch never do. The fold is a
-- deferred constraint trigger, so it runs at commit, after every note of the transaction; the
-- abort's own cancels queue more of its events, which find no note.
CREATE TRIGGER jobs_batch_child_status
AFTER UPDATE OF status ON {schema}.jobs
FOR EACH ROW
WHEN (NEW.batch_id IS NOT NULL
      AND (OLD.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'))
          <> (NEW.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned')))
EXECUTE FUNCTION {schema}.batch_child_status_changed();

CREATE CONSTRAINT TRIGGER jobs_batch_outcomes_fold
AFTER UPDATE OF status ON {schema}.jobs
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW
WHEN (NEW.batch_id IS NOT NULL
      AND (OLD.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'))
          <> (NEW.status IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned')))
EXECUTE FUNCTION {schema}.batch_outcomes_fold();
