-- TaskQ initial schema: jobs and their history, queue and actor configuration, worker registry,
-- leader row. Every object lives in the schema the runner renders in place of the placeholder.

CREATE TYPE {schema}.job_status AS ENUM (
  'pending', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'
);

CREATE TABLE {schema}.jobs (
  id                 uuid PRIMARY KEY,
  actor              text NOT NULL,
  queue              text NOT NULL,
  identity_key       text,
  fairness_key       text,
  payload            jsonb NOT NULL,
  payload_schema_ver integer NOT NULL DEFAULT 1,
  status             {schema}.job_status NOT NULL,
  priority           integer NOT NULL DEFAULT 0,
  attempt            integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  max_attempts       integer NOT NULL CHECK (max_attempts >= 1),
  retry_kind         text NOT NULL CHECK (retry_kind IN ('transient', 'indefinite', 'nonRetryable')),
  schedule_to_close  timestamptz,
  start_to_close     interval,
  heartbeat_timeout  interval,
  created_at         timestamptz NOT NULL DEFAULT now(),
  scheduled_at       timestamptz NOT NULL,
  started_at         timestamptz,
  finished_at        timestamptz,
  last_heartbeat_at  timestamptz,
  -- No foreign key to workers(id): it would take FOR KEY SHARE on the worker row at every claim.
  locked_by_worker   uuid,
  lock_expires_at    timestamptz,
  cancel_requested_at timestamptz,
  cancel_phase       smallint NOT NULL DEFAULT 0 CHECK (cancel_phase BETWEEN 0 AND 2),
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
  tags               text[] NOT NULL DEFAULT '{}'::text[]
);

-- Dispatch: one ordered probe per (queue, actor) over pending jobs only, so the index holds the
-- queue backlog and never the (much larger) history.
CREATE INDEX jobs_dispatch_idx ON {schema}.jobs (queue, actor, priority DESC, scheduled_at, id)
  WHERE status = 'pending';
-- Running set: lease renewal, reclaim, running-per-actor counts.
CREATE INDEX jobs_running_idx ON {schema}.jobs (locked_by_worker) WHERE status = 'running';
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
-- list(actor) / per-actor counts (maxPending, singleton, deregistration checks).
CREATE INDEX jobs_actor_status_idx ON {schema}.jobs (actor, status);
-- list(queue) / countActiveJobs(queues).
CREATE INDEX jobs_queue_status_idx ON {schema}.jobs (queue, status);
-- finished_at_desc listings and retention pruning.
CREATE INDEX jobs_finished_at_idx ON {schema}.jobs (finished_at, id) WHERE finished_at IS NOT NULL;
-- Batch membership: an expression index over the rows that have a batch id (cheaper to maintain
-- than a GIN index over every row's metadata).
CREATE INDEX jobs_batch_id_idx ON {schema}.jobs ((metadata ->> 'batch_id')) WHERE metadata ? 'batch_id';
-- Tag filters ("carries all of these tags"), only over tagged rows.
CREATE INDEX jobs_tags_idx ON {schema}.jobs USING gin (tags) WHERE tags <> '{}'::text[];

CREATE TABLE {schema}.job_attempts (
  id              bigserial PRIMARY KEY,
  job_id          uuid NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
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
  error_traceback text
);
CREATE INDEX job_attempts_job_idx ON {schema}.job_attempts (job_id, id);

CREATE TABLE {schema}.job_events (
  id          bigserial PRIMARY KEY,
  job_id      uuid NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
  -- Stamped by the same INSERT as the id, so ids and times are co-monotonic (the reclaim feed's
  -- visibility-delay watermark relies on it).
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind        text NOT NULL CHECK (kind IN ('state_change', 'cancel_request')),
  detail      jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX job_events_job_idx ON {schema}.job_events (job_id, id);
-- The crash-reclaim outbox: watchReclaims() pages through these rows by id.
CREATE INDEX job_events_reclaim_idx ON {schema}.job_events (id)
  WHERE kind = 'state_change' AND (detail ->> 'reason') = 'lock_expired';

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
