-- name: enqueueBatch
-- Inserts many jobs in one statement from parallel arrays. Items whose idempotency key already
-- exists (or repeats earlier in the same batch) are skipped by ON CONFLICT; the caller maps them
-- to the existing rows. The database clock decides pending vs scheduled for every item.
-- Only what the database decided comes back, and only where the caller cannot tell it (see the
-- final SELECT): the caller already has everything else, and sending 1000 payloads back to be
-- parsed again cost more than the insert.
WITH now_ AS (
  -- First the enqueue locks of the items' actors ($46, see actorLockKey), shared, in the order of
  -- their hashes, held until the transaction ends: a deregistration of one of them waits for this
  -- insert, or this insert for it. A metadata object every item shares is parsed once, here, not
  -- once per row.
  SELECT (SELECT count(*) FROM (
            SELECT pg_advisory_xact_lock_shared(l.k)
            FROM (SELECT DISTINCT hashtextextended(x, 0) AS k FROM unnest($46::text[]) AS x ORDER BY 1) l
          ) held) AS actor_locks,
         clock_timestamp() AS ts, $42::jsonb AS metadata
),
-- Each column is an array (one value per item) or, when every item agrees, one value ($24 on):
-- see batch-column.ts. A NULL array is padded with NULLs by unnest; the id array never is NULL.
items AS (
  SELECT t.id, t.ord,
    coalesce(t.actor, $24::text) AS actor,
    coalesce(t.queue, $25::text) AS queue,
    coalesce(t.identity_key, $26::text) AS identity_key,
    coalesce(t.fairness_key, $27::text) AS fairness_key,
    coalesce(t.payload, $28::text) AS payload,
    coalesce(t.payload_schema_ver, $29::int) AS payload_schema_ver,
    coalesce(t.priority, $30::int) AS priority,
    coalesce(t.max_attempts, $31::int) AS max_attempts,
    coalesce(t.retry_kind, $32::text) AS retry_kind,
    coalesce(t.scheduled_at, $33::timestamptz) AS scheduled_at,
    coalesce(t.schedule_to_close, $34::timestamptz) AS schedule_to_close,
    coalesce(t.stc_interval_ms, $35::float8) AS stc_interval_ms,
    coalesce(t.start_to_close_ms, $36::float8) AS start_to_close_ms,
    coalesce(t.heartbeat_timeout_ms, $37::float8) AS heartbeat_timeout_ms,
    coalesce(t.idempotency_key, $38::text) AS idempotency_key,
    coalesce(t.idempotency_scope, $39::text) AS idempotency_scope,
    coalesce(t.trace_id, $40::text) AS trace_id,
    coalesce(t.span_id, $41::text) AS span_id,
    t.metadata,
    coalesce(t.tags, $43::text) AS tags,
    coalesce(t.delay_ms, $44::float8) AS delay_ms
  FROM unnest(
    $1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[],
    $9::int[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::float8[], $14::float8[],
    $15::float8[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $23::float8[]
  ) WITH ORDINALITY AS t(
    id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, priority,
    max_attempts, retry_kind, scheduled_at, schedule_to_close, stc_interval_ms, start_to_close_ms,
    heartbeat_timeout_ms, idempotency_key, idempotency_scope, trace_id, span_id, metadata, tags, delay_ms, ord
  )
),
timed AS (
  SELECT i.*, greatest(coalesce(i.scheduled_at, now_.ts + coalesce(i.delay_ms, 0) * interval '1 millisecond'), now_.ts) AS run_at
  FROM items i, now_
),
ins AS (
  INSERT INTO {schema}.jobs AS j (
    id, actor, queue, identity_key, fairness_key, payload, payload_schema_ver, status, priority,
    max_attempts, retry_kind, schedule_to_close, start_to_close, heartbeat_timeout, created_at,
    scheduled_at, idempotency_key, idempotency_scope, trace_id, span_id, metadata, tags, batch_id
  )
  SELECT i.id, i.actor, i.queue, i.identity_key, i.fairness_key, i.payload::jsonb, i.payload_schema_ver,
    (CASE WHEN i.run_at > now_.ts THEN 'scheduled' ELSE 'pending' END)::{schema}.job_status,
    i.priority, i.max_attempts, i.retry_kind,
    CASE
      WHEN i.stc_interval_ms IS NULL THEN i.schedule_to_close
      WHEN i.schedule_to_close IS NULL THEN now_.ts + i.stc_interval_ms * interval '1 millisecond'
      ELSE least(i.schedule_to_close, now_.ts + i.stc_interval_ms * interval '1 millisecond')
    END,
    i.start_to_close_ms * interval '1 millisecond', i.heartbeat_timeout_ms * interval '1 millisecond', now_.ts,
    i.run_at, i.idempotency_key, i.idempotency_scope,
    i.trace_id, i.span_id, coalesce(i.metadata::jsonb, now_.metadata),
    CASE WHEN i.tags = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)) END,
    -- $45: the batches row every new job of the statement counts toward (migration 0005), or NULL.
    $45::uuid
  FROM timed i, now_
  -- enqueueBatchUnkeyed (pg-ops.ts) is this statement without the lines marked [keyed], for batches
  -- in which no item has an idempotency key. Item order decides which of two items with the same key
  -- is inserted (the first); without keys nothing depends on it, and sorting a batch of wide rows is
  -- a noticeable part of the statement (the rows come out of unnest in item order anyway, and the
  -- caller pairs returned rows by id should they not).
  ORDER BY i.ord -- [keyed]
  ON CONFLICT (idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING -- [keyed]
  RETURNING j.id, j.status, j.scheduled_at, j.schedule_to_close, j.idempotency_key
),
notify AS (
  -- $22 NULL: no NOTIFY here, the caller announces the insert after it commits (as `enqueue`).
  SELECT pg_notify($22, '') WHERE $22::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
),
n AS (
  SELECT ts, (extract(epoch FROM ts) * 1000)::float8 AS created_ms FROM now_
)
-- Rows come back only for the jobs whose outcome the caller cannot tell by itself: an idempotency
-- key (inserted, or skipped by ON CONFLICT and so absent), scheduled, or with a deadline. Every
-- other item was inserted `pending`, to run at the insert time, which the last row (id NULL)
-- carries with the count of inserted jobs. Times are epoch milliseconds.
SELECT ins.id, ins.status::text AS status, n.created_ms,
  CASE WHEN ins.scheduled_at = n.ts THEN NULL ELSE (extract(epoch FROM ins.scheduled_at) * 1000)::float8 END
    AS scheduled_ms,
  (extract(epoch FROM ins.schedule_to_close) * 1000)::float8 AS schedule_to_close_ms,
  NULL::int AS inserted, NULL::int AS notified
FROM ins, n
WHERE ins.idempotency_key IS NOT NULL OR ins.status <> 'pending' OR ins.scheduled_at <> n.ts
  OR ins.schedule_to_close IS NOT NULL
UNION ALL
SELECT NULL, NULL, n.created_ms, NULL, NULL, (SELECT count(*) FROM ins)::int, (SELECT count(*) FROM notify)::int
FROM n;

-- name: getByIdempotencyKeys
SELECT {job_columns} FROM {schema}.jobs j
JOIN unnest($1::text[], $2::text[]) AS k(scope, key) ON j.idempotency_scope = k.scope AND j.idempotency_key = k.key;

-- name: enqueueBatchGates
-- What a batch's gates look at, read in one round trip while the batch holds its gate locks (see
-- resolveBatchGates in enqueue-gates.ts): kind 'pending' rows count the pending + scheduled jobs of
-- each actor with a maxPending ($1); a 'unique' row is the newest job matching a uniqueFor probe
-- (actor $2, identity key $3, window ms $4, states joined by ',' $5; same window and states as
-- `enqueue`); a 'key' row the job holding an idempotency key (scope $6, key $7). `probe` is the
-- 1-based position of the probe in its arrays.
WITH now_ AS (
  SELECT clock_timestamp() AS ts
)
SELECT g.kind, g.probe::int AS probe, g.gate_actor, g.n, {job_columns}
FROM (
  SELECT 'pending'::text AS kind, NULL::bigint AS probe, p.actor AS gate_actor, count(*)::int AS n,
    NULL::uuid AS id
  FROM {schema}.jobs p
  WHERE p.actor = ANY ($1::text[]) AND p.status IN ('pending', 'scheduled')
  GROUP BY p.actor
  UNION ALL
  SELECT 'unique', u.ord, NULL, NULL, (
    SELECT x.id FROM {schema}.jobs x, now_
    WHERE x.actor = u.actor AND x.identity_key = u.key
      AND x.status::text = ANY (string_to_array(u.states, ','))
      AND x.created_at >= now_.ts - u.ms * interval '1 millisecond'
    ORDER BY x.created_at DESC
    LIMIT 1)
  FROM unnest($2::text[], $3::text[], $4::float8[], $5::text[]) WITH ORDINALITY AS u(actor, key, ms, states, ord)
  UNION ALL
  SELECT 'key', k.ord, NULL, NULL, x.id
  FROM unnest($6::text[], $7::text[]) WITH ORDINALITY AS k(scope, key, ord)
  JOIN {schema}.jobs x ON x.idempotency_scope = k.scope AND x.idempotency_key = k.key
) g
LEFT JOIN {schema}.jobs j ON j.id = g.id;
