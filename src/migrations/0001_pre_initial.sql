-- TaskQ schema: jobs and their history, the archive, queue and actor configuration, the worker
-- registry, the maintenance leader and rate-limit state. Every object lives in the schema the
-- runner renders in place of the placeholder.

CREATE TYPE {schema}.job_status AS ENUM (
  'pending', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'
);

-- Columns an index holds or a partial index's predicate names come first, fixed-width and never
-- null before the rest: Postgres reads a column at a cached offset only while every column before
-- it is fixed-width and not null, and every update of a job reads each indexed column of its old
-- and new version. The payload, the widest, is last. No statement depends on this order (each
-- names its columns).
CREATE TABLE {schema}.jobs (
  -- Indexed, fixed-width, never null.
  id                 uuid PRIMARY KEY,
  created_at         timestamptz NOT NULL DEFAULT now(),
  scheduled_at       timestamptz NOT NULL,
  status             {schema}.job_status NOT NULL,
  priority           integer NOT NULL DEFAULT 0,
  -- Indexed, variable-width, never null.
  actor              text NOT NULL,
  queue              text NOT NULL,
  idempotency_scope  text NOT NULL DEFAULT '',
  metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
  tags               text[] NOT NULL DEFAULT '{}'::text[],
  -- Indexed, nullable.
  -- No foreign key to workers(id): it would take FOR KEY SHARE on the worker row at every claim.
  locked_by_worker   uuid,
  finished_at        timestamptz,
  result_expires_at  timestamptz,
  schedule_to_close  timestamptz,
  identity_key       text,
  fairness_key       text,
  idempotency_key    text,
  result             jsonb,
  -- No index reads the rest.
  attempt            integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  max_attempts       integer NOT NULL CHECK (max_attempts >= 1),
  payload_schema_ver integer NOT NULL DEFAULT 1,
  progress_seq       integer NOT NULL DEFAULT 0,
  cancel_phase       smallint NOT NULL DEFAULT 0 CHECK (cancel_phase BETWEEN 0 AND 2),
  started_at         timestamptz,
  last_heartbeat_at  timestamptz,
  lock_expires_at    timestamptz,
  cancel_requested_at timestamptz,
  result_size_bytes  integer,
  start_to_close     interval,
  heartbeat_timeout  interval,
  -- The reference's names; the TypeScript API spells the last one `nonRetryable` (row-mapper.ts).
  retry_kind         text NOT NULL CHECK (retry_kind IN ('transient', 'indefinite', 'non_retryable')),
  error_class        text,
  error_message      text,
  error_traceback    text,
  progress_state     jsonb NOT NULL DEFAULT '{}'::jsonb,
  trace_id           text,
  span_id            text,
  -- The details a handler passed to its last ctx.heartbeat(), shown to the next attempt.
  heartbeat_details  jsonb,
  payload            jsonb NOT NULL
);

-- A status change is never a HOT update (status is indexed), so every index over all rows would
-- get an entry for each version of a job. The indexes are partial wherever a question only concerns
-- some statuses: claiming work costs the same with ten thousand or ten million finished jobs.

-- Dispatch over pending jobs, split by whether the job has a fairness key, so a job without one has
-- a single entry: strict FIFO claims merge the key-less and keyed orders; round-robin claims walk
-- the keys of the per-key index (one probe per key) and the key-less group.
CREATE INDEX jobs_keyless_dispatch_idx ON {schema}.jobs (queue, actor, priority DESC, scheduled_at, id)
  WHERE status = 'pending' AND fairness_key IS NULL;
CREATE INDEX jobs_keyed_dispatch_idx ON {schema}.jobs (queue, actor, priority DESC, scheduled_at, id)
  WHERE status = 'pending' AND fairness_key IS NOT NULL;
CREATE INDEX jobs_keyed_fair_dispatch_idx ON {schema}.jobs (queue, actor, fairness_key, priority DESC, scheduled_at, id)
  WHERE status = 'pending' AND fairness_key IS NOT NULL;
-- The running set (at most the fleet's concurrency): lease renewal, reclaim, running counts, and
-- the running jobs of every question the waiting and batch indexes leave out.
CREATE INDEX jobs_running_idx ON {schema}.jobs (locked_by_worker) WHERE status = 'running';
-- Waiting jobs per actor (the singleton and maxPending gates, counts, cancelWhere) and per queue
-- (a loose index scan over the few actors first, then each (actor, queue) prefix): one entry per
-- enqueued job answers both.
CREATE INDEX jobs_waiting_idx ON {schema}.jobs (actor, queue)
  WHERE status IN ('pending', 'scheduled');
-- Identity serialisation: at most one running job per (actor, identity_key), enforced by the
-- database. Two producers racing for the same identity cannot both win; the loser retries.
CREATE UNIQUE INDEX jobs_running_identity_uniq ON {schema}.jobs (actor, identity_key)
  WHERE status = 'running' AND identity_key IS NOT NULL;
-- Scheduled-to-pending promotion.
CREATE INDEX jobs_scheduled_idx ON {schema}.jobs (scheduled_at) WHERE status = 'scheduled';
-- Idempotency: unique within a scope, until the row leaves the table.
CREATE UNIQUE INDEX jobs_idempotency_scope_key_uniq ON {schema}.jobs (idempotency_scope, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- Singleton actors: at most one active job. Catches the race the enqueue pre-flight cannot.
CREATE UNIQUE INDEX jobs_singleton_active_uniq ON {schema}.jobs (actor)
  WHERE (metadata ->> 'singleton') = 'true' AND status IN ('pending', 'scheduled', 'running');
-- uniqueFor dedup and "latest run by business key" listings.
CREATE INDEX jobs_actor_identity_idx ON {schema}.jobs (actor, identity_key, created_at)
  WHERE identity_key IS NOT NULL;
-- finished_at_desc listings, listings of finished jobs by actor or queue, and retention pruning.
CREATE INDEX jobs_finished_at_idx ON {schema}.jobs (finished_at, id) WHERE finished_at IS NOT NULL;
-- Batch membership (enqueueBatch stamps metadata.batch_id): an expression index over the rows that
-- have one, cheaper to maintain than a GIN index over every row's metadata. Running versions are
-- left out; a batch filter reads those through jobs_running_idx (see filter-sql.ts).
CREATE INDEX jobs_batch_not_running_idx ON {schema}.jobs ((metadata ->> 'batch_id'))
  WHERE metadata ? 'batch_id' AND status <> 'running';
-- Tag filters ("carries all of these tags"), only over tagged rows.
CREATE INDEX jobs_tags_idx ON {schema}.jobs USING gin (tags) WHERE tags <> '{}'::text[];
-- Deadline sweep: only waiting jobs that carry a deadline.
CREATE INDEX jobs_deadline_idx ON {schema}.jobs (schedule_to_close)
  WHERE status IN ('pending', 'scheduled') AND schedule_to_close IS NOT NULL;
-- Result expiry: only stored results with a TTL.
CREATE INDEX jobs_result_expiry_idx ON {schema}.jobs (result_expires_at)
  WHERE result IS NOT NULL AND result_expires_at IS NOT NULL;

-- Job history. No foreign key to jobs: Postgres checks one with a query and a row lock on the job
-- for every inserted row, and these rows are only inserted by statements that have just updated
-- (and so locked) their job. Deleting or truncating jobs still removes their history, through the
-- statement-level triggers below. One primary key on (job_id, id) serves the reads by job and keeps
-- id unique.
CREATE TABLE {schema}.job_attempts (
  id              bigserial,
  job_id          uuid NOT NULL,
  attempt         integer NOT NULL,
  worker_id       uuid,
  started_at      timestamptz,
  finished_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  duration_ms     double precision,
  outcome         text NOT NULL CHECK (outcome IN (
                    'succeeded', 'failed', 'cancelled', 'crashed', 'abandoned',
                    'snoozed', 'retry_after', 'rate_limit_denied', 'reservation_denied', 'interrupted')),
  error_class     text,
  error_message   text,
  error_traceback text,
  PRIMARY KEY (job_id, id)
);

CREATE TABLE {schema}.job_events (
  id          bigserial,
  job_id      uuid NOT NULL,
  -- Stamped by the same INSERT as the id, so ids and times are co-monotonic (the reclaim feed's
  -- visibility-delay watermark relies on it).
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind        text NOT NULL CHECK (kind IN ('state_change', 'cancel_request')),
  detail      jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (job_id, id)
);
-- The crash-reclaim outbox: watchReclaims() pages through these rows by id.
CREATE INDEX job_events_reclaim_idx ON {schema}.job_events (id)
  WHERE kind = 'state_change' AND (detail ->> 'reason') = 'lock_expired';

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

CREATE TABLE {schema}.queues (
  name           text PRIMARY KEY,
  mode           text NOT NULL DEFAULT 'strict_fifo' CHECK (mode IN ('strict_fifo', 'round_robin')),
  max_concurrent integer CHECK (max_concurrent >= 1),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {schema}.actor_config (
  actor          text PRIMARY KEY,
  queue          text NOT NULL,
  max_concurrent integer CHECK (max_concurrent >= 0),
  max_pending    integer CHECK (max_pending >= 0),
  result_ttl     interval,
  metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {schema}.workers (
  id              uuid PRIMARY KEY,
  hostname        text NOT NULL,
  pid             integer NOT NULL,
  worker_label    text,
  queues          text[] NOT NULL DEFAULT '{}'::text[],
  max_concurrency integer NOT NULL DEFAULT 0,
  taskq_version   text,
  started_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One row describing the current maintenance leader. The advisory lock is the authority; this row
-- exists for operators and the admin UI.
CREATE TABLE {schema}.maintenance_leader (
  id           boolean PRIMARY KEY DEFAULT true CHECK (id),
  worker_id    uuid NOT NULL,
  hostname     text,
  acquired_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The archive that retention pruning moves terminal jobs into: every column of jobs, plus when the
-- row was archived and when it expires. Rows are copied by naming their columns, so the order here
-- need not follow jobs'.
CREATE TABLE {schema}.jobs_archive (
  id                 uuid PRIMARY KEY,
  actor              text NOT NULL,
  queue              text NOT NULL,
  identity_key       text,
  fairness_key       text,
  payload            jsonb NOT NULL,
  payload_schema_ver integer NOT NULL DEFAULT 1,
  status             {schema}.job_status NOT NULL,
  priority           integer NOT NULL DEFAULT 0,
  attempt            integer NOT NULL DEFAULT 0,
  max_attempts       integer NOT NULL,
  retry_kind         text NOT NULL,
  schedule_to_close  timestamptz,
  start_to_close     interval,
  heartbeat_timeout  interval,
  created_at         timestamptz NOT NULL DEFAULT now(),
  scheduled_at       timestamptz NOT NULL,
  started_at         timestamptz,
  finished_at        timestamptz,
  last_heartbeat_at  timestamptz,
  locked_by_worker   uuid,
  lock_expires_at    timestamptz,
  cancel_requested_at timestamptz,
  cancel_phase       smallint NOT NULL DEFAULT 0,
  error_class        text,
  error_message      text,
  error_traceback    text,
  progress_state     jsonb NOT NULL DEFAULT '{}'::jsonb,
  progress_seq       integer NOT NULL DEFAULT 0,
  result             jsonb,
  result_size_bytes  integer,
  result_expires_at  timestamptz,
  idempotency_key    text,
  idempotency_scope  text NOT NULL DEFAULT '',
  trace_id           text,
  span_id            text,
  metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
  tags               text[] NOT NULL DEFAULT '{}'::text[],
  archived_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  expire_at          timestamptz NOT NULL,
  heartbeat_details  jsonb
);
-- Hard deletion of expired rows.
CREATE INDEX jobs_archive_expire_idx ON {schema}.jobs_archive (expire_at);
CREATE INDEX jobs_archive_actor_idx ON {schema}.jobs_archive (actor, finished_at);

-- The attempts of archived jobs, with the ids they had in job_attempts.
CREATE TABLE {schema}.job_attempts_archive (
  id              bigint PRIMARY KEY,
  job_id          uuid NOT NULL REFERENCES {schema}.jobs_archive (id) ON DELETE CASCADE,
  attempt         integer NOT NULL,
  worker_id       uuid,
  started_at      timestamptz,
  finished_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  duration_ms     double precision,
  outcome         text NOT NULL,
  error_class     text,
  error_message   text,
  error_traceback text
);
CREATE INDEX job_attempts_archive_job_idx ON {schema}.job_attempts_archive (job_id, id);

-- Rate limiting (taskq/ratelimit): Postgres state of token buckets and GCRA windows, the log of
-- log-style sliding windows, and the pre-allocated slot rows of concurrency reservations.
-- Every time predicate on these tables uses clock_timestamp() (the database clock is the arbiter).

-- One row per rate-limit bucket name. Holds the Postgres state of `postgres`-backed buckets (and of
-- `redis`-backed ones while they fall back to Postgres), plus the metadata the admin UI lists.
-- A NULL state column means "full" (never used, or reset).
CREATE TABLE {schema}.rate_limit_buckets (
  bucket_name       text PRIMARY KEY,
  kind              text NOT NULL CHECK (kind IN ('token_bucket', 'gcra', 'sliding_log')),
  -- Token bucket: capacity. Sliding window (gcra, log): limit.
  capacity          double precision NOT NULL CHECK (capacity > 0),
  -- Token bucket only: tokens per second (0 = fixed quota that never refills).
  refill_per_second double precision CHECK (refill_per_second >= 0),
  -- Sliding window only: the window length in milliseconds.
  window_ms         double precision CHECK (window_ms > 0),
  -- Token bucket state: tokens left at updated_at (NULL = full).
  tokens            double precision,
  -- GCRA state: the theoretical arrival time (NULL = no debt).
  tat               timestamptz,
  -- The configured store of the primitive ('redis' or 'postgres'), for the admin UI.
  backend           text NOT NULL DEFAULT 'postgres' CHECK (backend IN ('redis', 'postgres')),
  -- Materialised from a keyed ref: the leader may reclaim the row once idle. Static declarations
  -- retire the mark to false (never reclaimed).
  keyed             boolean NOT NULL DEFAULT false,
  last_used_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Leader sweep of idle keyed rows.
CREATE INDEX rate_limit_buckets_keyed_idle_idx ON {schema}.rate_limit_buckets (last_used_at) WHERE keyed;

-- Log-style sliding windows on Postgres: one row per admitted request inside the window.
CREATE TABLE {schema}.rate_limit_window_entries (
  bucket_name text NOT NULL,
  request_id  uuid NOT NULL,
  admitted_at timestamptz NOT NULL,
  PRIMARY KEY (bucket_name, request_id)
);
CREATE INDEX rate_limit_window_entries_time_idx ON {schema}.rate_limit_window_entries (bucket_name, admitted_at);

-- Concurrency reservations: `slots` pre-allocated rows per bucket. A row is free when job_id is
-- NULL or its lease has expired; acquired_at is the fence that tells one lease from the next.
CREATE TABLE {schema}.reservation_slots (
  bucket_name      text NOT NULL,
  slot_index       integer NOT NULL CHECK (slot_index >= 0),
  job_id           uuid,
  worker_id        uuid,
  acquired_at      timestamptz,
  lease_expires_at timestamptz,
  keyed            boolean NOT NULL DEFAULT false,
  last_used_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (bucket_name, slot_index)
);
-- Heartbeat lease renewal: the slots a worker holds.
CREATE INDEX reservation_slots_worker_idx ON {schema}.reservation_slots (worker_id) WHERE job_id IS NOT NULL;
-- Leader sweep of idle keyed rows.
CREATE INDEX reservation_slots_keyed_idle_idx ON {schema}.reservation_slots (last_used_at) WHERE keyed;
