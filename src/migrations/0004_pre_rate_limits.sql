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
