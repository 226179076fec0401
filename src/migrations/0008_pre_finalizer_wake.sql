-- A batch's finalizer that snoozed while its children ran (`waitForBatch` in snooze mode) runs again
-- as soon as its batch ends, instead of when its snooze runs out (10 s by default). Every path that
-- ends a batch changes its row in the transaction that ends it: the fold of its last child's
-- outcome, the abort and the outcomes of the children that were still running, the write that seals
-- a streaming batch, the stale-batch sweep. A trigger on that change makes the finalizer pending
-- and wakes the producers, so one place serves them all, and a path added later cannot forget it.
--
-- A batch has ended when the row says `complete`, or when it is sealed and counts every child it
-- expects as terminal (an aborted batch, once the children it could not cancel have finished). The
-- finalizer is moved only when it is `scheduled` and its last attempt snoozed: one waiting out a
-- retry backoff after a failure keeps its backoff. A finalizer that has not run yet is already
-- pending, and one running now finds the batch ended when it reads it, or, if it read the batch just
-- before it ended and snoozes, runs again when that snooze runs out.
--
-- The NOTIFY goes out with the transaction that ends the batch: once per batch, so holding the
-- server's notify lock through that one commit costs nothing worth avoiding. Adding a function and
-- a trigger is safe while workers of the previous version run: they read nothing new.
CREATE FUNCTION {schema}.batch_ended_wakes_finalizer() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  WITH woken AS (
    UPDATE {schema}.jobs AS j
    SET status = 'pending', scheduled_at = clock_timestamp()
    WHERE j.id = NEW.finalizer_job_id AND j.status = 'scheduled'
      AND (SELECT a.outcome FROM {schema}.job_attempt_log a
           WHERE a.job_id = j.id ORDER BY a.id DESC LIMIT 1) = 'snoozed'
    RETURNING j.id
  )
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT id, 'state_change',
    jsonb_build_object('from_state', 'scheduled', 'to_state', 'pending', 'reason', 'batch_ended',
                       'batch_id', NEW.id)
  FROM woken;
  IF FOUND THEN
    PERFORM pg_notify({wake_channel}, '');
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER batches_ended_wake_finalizer
AFTER UPDATE ON {schema}.batches
FOR EACH ROW
WHEN (NEW.finalizer_job_id IS NOT NULL
      AND (NEW.status = 'complete'
           OR (NEW.sealed AND NEW.succeeded + NEW.failed + NEW.cancelled + NEW.crashed + NEW.abandoned
                              >= NEW.expected_size))
      AND NOT (OLD.status = 'complete'
               OR (OLD.sealed AND OLD.succeeded + OLD.failed + OLD.cancelled + OLD.crashed + OLD.abandoned
                                  >= OLD.expected_size)))
EXECUTE FUNCTION {schema}.batch_ended_wakes_finalizer();
