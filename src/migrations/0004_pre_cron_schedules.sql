-- Cron schedules. A schedule fires its actor on every slot of its expression, read as wall-clock
-- time in its zone. `next_fire_at` is the next slot to fire (database clock): the leader fires a
-- due slot and moves it forward in one transaction, computing the next slot from the stored one so
-- the chain keeps its phase. `(actor, name)` is unique: the declarations in code are created once
-- and never overwritten. Adding tables is safe while workers of the previous version run.
CREATE TABLE {schema}.cron_schedules (
  id                   uuid PRIMARY KEY,
  actor                text NOT NULL,
  name                 text NOT NULL DEFAULT '',
  cron_expr            text NOT NULL,
  timezone             text NOT NULL DEFAULT 'UTC',
  dst_strategy         text NOT NULL DEFAULT 'skip' CHECK (dst_strategy IN ('skip', 'firstof', 'allof')),
  -- A payload factory's registered name; a static payload lives in metadata.static_payload.
  payload_factory      text,
  identity_key         text,
  enabled              boolean NOT NULL DEFAULT true,
  -- NULL: the expression has no slot left (never for expressions TaskQ accepts).
  next_fire_at         timestamptz,
  last_fired_at        timestamptz,
  last_fire_error      text,
  consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  metadata             jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (actor, name)
);
-- The leader's due check: enabled schedules by their next slot.
CREATE INDEX cron_schedules_due_idx ON {schema}.cron_schedules (next_fire_at) WHERE enabled;

-- Every slot a schedule fired, with the job it made. The primary key is the last line of the
-- exactly-once guarantee: one slot of one schedule can be written once, whatever two leaders do.
-- The leader keeps the most recent rows per schedule (CRON_FIRE_HISTORY) and deletes the rest.
CREATE TABLE {schema}.cron_fires (
  schedule_id uuid NOT NULL,
  fire_at     timestamptz NOT NULL,
  job_id      uuid NOT NULL,
  fired_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (schedule_id, fire_at)
);
