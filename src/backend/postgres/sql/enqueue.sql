-- name: enqueue
-- One round trip per enqueue. The gates run in the order the reference fixes:
--   1. uniqueFor dedup (a hit returns the existing job and skips every later check)
--   2. singleton pre-flight
--   3. maxPending count
--   4. INSERT ... ON CONFLICT on (idempotency_scope, idempotency_key)
-- uniqueFor and maxPending are read by functions (migration 0002) that first take the enqueue's
-- gate locks ($28) and then read with a fresh snapshot, so they see the insert of any enqueue they
-- waited for; the locks are held until this statement's transaction ends.
-- $1 id, $2 actor, $3 queue, $4 identity_key, $5 fairness_key, $6 payload (json text),
-- $7 payload_schema_ver, $8 priority, $9 max_attempts, $10 retry_kind, $11 scheduled_at,
-- $12 schedule_to_close, $13 schedule_to_close interval ms, $14 start_to_close ms,
-- $15 heartbeat_timeout ms, $16 idempotency_key, $17 idempotency_scope, $18 trace_id, $19 span_id,
-- $20 metadata (json text), $21 tags, $22 max_pending, $23 singleton, $24 unique_for ms,
-- $25 unique_states, $26 wake channel (NULL: no NOTIFY here, the caller announces the insert after
-- it commits; see EnqueueWake in pg-enqueue.ts), $27 scheduled delay ms, $28 gate lock keys,
-- $29 the actor's enqueue lock key (see actorLockKey: taken shared, held until the transaction
-- ends, so that a deregistration of the actor waits for this insert or this insert for it)
WITH now_ AS (
  SELECT pg_advisory_xact_lock_shared(hashtextextended($29, 0)) IS NULL AS actor_locked, clock_timestamp() AS ts
),
sched AS (
  SELECT greatest(coalesce($11::timestamptz, now_.ts + coalesce($27::float8, 0) * interval '1 millisecond'), now_.ts) AS at
  FROM now_
),
-- The parameter-only conditions are checked before the function is called: without a uniqueFor
-- gate (or a maxPending, for `pend`) it is not called and no lock is taken.
uniq AS (
  SELECT u.* FROM {schema}.enqueue_gate_unique($28::text[], $2, $4, $24::float8, $25::text[]) u
  WHERE $24::float8 IS NOT NULL AND $4::text IS NOT NULL
),
-- Waiting jobs through jobs_waiting_idx (actor first), running ones through jobs_running_idx.
single AS (
  SELECT w.id, w.schedule_to_close FROM (
    (SELECT s.id, s.schedule_to_close FROM {schema}.jobs s
     WHERE $23::boolean AND NOT EXISTS (SELECT 1 FROM uniq)
       AND s.actor = $2 AND s.status IN ('pending', 'scheduled')
     LIMIT 1)
    UNION ALL
    (SELECT s.id, s.schedule_to_close FROM {schema}.jobs s
     WHERE $23::boolean AND NOT EXISTS (SELECT 1 FROM uniq)
       AND s.actor = $2 AND s.status = 'running'
     LIMIT 1)
  ) w
  LIMIT 1
),
pend AS (
  SELECT {schema}.enqueue_gate_pending($28::text[], $2) AS n WHERE $22::int IS NOT NULL
),
gate AS (
  SELECT CASE
    WHEN EXISTS (SELECT 1 FROM uniq) THEN 'unique'
    WHEN EXISTS (SELECT 1 FROM single) THEN 'singleton'
    WHEN $22::int IS NOT NULL AND (SELECT n FROM pend) >= $22::int THEN 'max_pending'
    ELSE 'insert'
  END AS verdict
),
ins AS (
  INSERT INTO {schema}.jobs AS j (
    id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, status, priority,
    max_attempts, retry_kind, schedule_to_close, start_to_close, heartbeat_timeout, created_at,
    scheduled_at, idempotency_key, idempotency_scope, trace_id, span_id, metadata, tags
  )
  SELECT $1, $2, $3, $4, $5, $6::jsonb, $7, 
    (CASE WHEN sched.at > now_.ts THEN 'scheduled' ELSE 'pending' END)::{schema}.job_status,
    $8, $9, $10,
    CASE
      WHEN $13::float8 IS NULL THEN $12::timestamptz
      WHEN $12::timestamptz IS NULL THEN now_.ts + $13::float8 * interval '1 millisecond'
      ELSE least($12::timestamptz, now_.ts + $13::float8 * interval '1 millisecond')
    END,
    $14::float8 * interval '1 millisecond', $15::float8 * interval '1 millisecond', now_.ts,
    sched.at, $16, $17, $18, $19, $20::jsonb, $21::text[]
  FROM now_, sched, gate
  WHERE gate.verdict = 'insert'
  ON CONFLICT (idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING {job_columns}
),
notify AS (
  SELECT pg_notify($26, '') FROM ins WHERE $26::text IS NOT NULL
)
SELECT g.verdict,
  (SELECT count(*) FROM notify)::int AS notified,
  (SELECT n FROM pend) AS pending_count,
  (SELECT id FROM single) AS singleton_job_id,
  -- How long until the blocking job's deadline, on the database clock (null: it has none).
  (SELECT CASE WHEN schedule_to_close IS NOT NULL
            THEN greatest(0, extract(epoch FROM (schedule_to_close - clock_timestamp())) * 1000) END
   FROM single)::float8 AS singleton_retry_after_ms,
  r.*
FROM gate g
LEFT JOIN LATERAL (
  SELECT * FROM ins
  UNION ALL
  -- The hit as the function read it: the row may be newer than this statement's snapshot.
  SELECT {job_columns} FROM uniq j
  UNION ALL
  SELECT {job_columns} FROM {schema}.jobs j
  WHERE g.verdict = 'insert' AND $16::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ins)
    AND j.idempotency_scope = $17 AND j.idempotency_key = $16
  LIMIT 1
) r ON true;

-- name: getByIdempotencyKey
-- Read after an ON CONFLICT that found a row committed after the INSERT's snapshot began.
SELECT {job_columns} FROM {schema}.jobs j WHERE j.idempotency_scope = $1 AND j.idempotency_key = $2;

-- name: enqueuePlain
-- The enqueue of a job with no gate to check (no uniqueFor, singleton, maxPending or idempotency
-- key): the insert and its wake-up NOTIFY, nothing else. A statement with fewer plan nodes starts
-- and runs faster: the gates' nodes take a sizeable share of the `enqueue` statement's time even
-- when they have nothing to do. Parameters as `enqueue`, less the gates':
-- $1 id, $2 actor, $3 queue, $4 identity_key, $5 fairness_key, $6 payload (json text),
-- $7 payload_schema_ver, $8 priority, $9 max_attempts, $10 retry_kind, $11 scheduled_at,
-- $12 schedule_to_close, $13 schedule_to_close interval ms, $14 start_to_close ms,
-- $15 heartbeat_timeout ms, $16 trace_id, $17 span_id, $18 metadata (json text), $19 tags,
-- $20 wake channel (NULL: no NOTIFY, as in `enqueue`), $21 scheduled delay ms, $22 idempotency_scope,
-- $23 the actor's enqueue lock key (as `enqueue`'s $29)
-- Only what the database decided comes back (as `enqueueBatch`): the caller has the rest.
WITH now_ AS (
  SELECT pg_advisory_xact_lock_shared(hashtextextended($23, 0)) IS NULL AS actor_locked, clock_timestamp() AS ts
),
sched AS (
  SELECT greatest(coalesce($11::timestamptz, now_.ts + coalesce($21::float8, 0) * interval '1 millisecond'), now_.ts) AS at
  FROM now_
),
ins AS (
  INSERT INTO {schema}.jobs AS j (
    id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, status, priority,
    max_attempts, retry_kind, schedule_to_close, start_to_close, heartbeat_timeout, created_at,
    scheduled_at, idempotency_scope, trace_id, span_id, metadata, tags
  )
  SELECT $1, $2, $3, $4, $5, $6::jsonb, $7,
    (CASE WHEN sched.at > now_.ts THEN 'scheduled' ELSE 'pending' END)::{schema}.job_status,
    $8, $9, $10,
    CASE
      WHEN $13::float8 IS NULL THEN $12::timestamptz
      WHEN $12::timestamptz IS NULL THEN now_.ts + $13::float8 * interval '1 millisecond'
      ELSE least($12::timestamptz, now_.ts + $13::float8 * interval '1 millisecond')
    END,
    $14::float8 * interval '1 millisecond', $15::float8 * interval '1 millisecond', now_.ts,
    sched.at, $22, $16, $17, $18::jsonb, $19::text[]
  FROM now_, sched
  RETURNING j.id, j.status::text AS status,
    (extract(epoch FROM j.created_at) * 1000)::float8 AS created_ms,
    (extract(epoch FROM j.scheduled_at) * 1000)::float8 AS scheduled_ms,
    (extract(epoch FROM j.schedule_to_close) * 1000)::float8 AS schedule_to_close_ms
)
SELECT ins.*, CASE WHEN $20::text IS NOT NULL THEN pg_notify($20, '') IS NULL END AS notified FROM ins;

-- name: lockGates
-- The gate locks of a batch (see enqueue-gates.ts and migration 0002), held until its transaction
-- ends; the batch reads its gates in the next statement, whose snapshot sees the insert of any
-- enqueue it waited for (READ COMMITTED). $1 gate lock keys
SELECT {schema}.lock_enqueue_gates($1::text[]) IS NULL AS locked;
