-- name: dispatch
-- Claims up to $2 pending jobs for one worker in a single statement.
--   $1 queues text[], $2 limit, $3 worker id, $4 lease ms, $5 oversample,
--   $6 actors this worker runs text[], $7 their maxConcurrent literals int[] (null = unbounded),
--   $8 how many of the claimed jobs go straight to a free slot
-- Those first $8 jobs, in the order the rows come back, are recorded as started (started_at set):
-- their handlers begin as soon as the rows arrive. The others wait in the worker's local queue with
-- started_at null until `markStarted` records them, just before their handlers begin; a job whose
-- worker dies before that goes back to pending with its attempt given back (reclaimExpiredLocks).
-- Per actor: residual capacity = maxConcurrent (stored actor_config value, else the literal) minus
-- running jobs. Candidates are read per (actor, queue) through the pending-only dispatch indexes,
-- residual × oversample each. Strict FIFO queues order by priority, then time (the heads of the
-- key-less and the keyed index, merged); round-robin queues interleave fairness keys: each key with
-- pending jobs (found by a skip scan of the keyed fair-dispatch index) and the key-less group offer
-- an equal share of that, ranked within the key. Row locks (FOR UPDATE SKIP LOCKED) are taken only
-- in `locked`, after every window function. The final UPDATE re-checks status = 'pending' (race guard).
-- At most one running job per (actor, identity_key): running identities are excluded here, and a
-- unique index decides the rare race between two producers (the loser retries the statement).
WITH RECURSIVE params AS (
  SELECT clock_timestamp() AS now
),
wanted AS (
  SELECT a.actor, a.literal FROM unnest($6::text[], $7::int[]) AS a(actor, literal)
),
running_per_actor AS (
  SELECT r.actor, count(*)::int AS in_flight
  FROM {schema}.jobs r
  WHERE r.status = 'running' AND r.actor = ANY ($6::text[])
  GROUP BY r.actor
),
running_identities AS (
  SELECT r.actor, r.identity_key
  FROM {schema}.jobs r
  WHERE r.status = 'running' AND r.identity_key IS NOT NULL AND r.actor = ANY ($6::text[])
),
per_actor_capacity AS (
  SELECT w.actor,
         coalesce(ac.max_concurrent, w.literal) AS max_concurrent,
         coalesce(rpa.in_flight, 0) AS in_flight,
         CASE
           WHEN coalesce(ac.max_concurrent, w.literal) IS NULL THEN $2::int
           ELSE least($2::int, coalesce(ac.max_concurrent, w.literal) - coalesce(rpa.in_flight, 0))
         END AS residual
  FROM wanted w
  LEFT JOIN {schema}.actor_config ac ON ac.actor = w.actor
  LEFT JOIN running_per_actor rpa ON rpa.actor = w.actor
),
queue_modes AS (
  SELECT q.queue, coalesce(qc.mode, 'strict_fifo') AS mode
  FROM unnest($1::text[]) AS q(queue)
  LEFT JOIN {schema}.queues qc ON qc.name = q.queue
),
rr_targets AS (
  SELECT pac.actor, qm.queue, pac.residual * $5::int AS wanted
  FROM per_actor_capacity pac
  CROSS JOIN queue_modes qm
  WHERE qm.mode = 'round_robin' AND pac.residual > 0
),
-- The distinct fairness keys with pending jobs, one index probe each (a skip scan): the claim's
-- cost grows with the number of keys, not with the backlog.
rr_key_walk (actor, queue, fairness_key) AS (
  SELECT t.actor, t.queue,
         (SELECT min(j.fairness_key) FROM {schema}.jobs j
          WHERE j.queue = t.queue AND j.actor = t.actor AND j.status = 'pending'
            AND j.fairness_key IS NOT NULL)
  FROM rr_targets t
  UNION ALL
  SELECT w.actor, w.queue,
         (SELECT min(j.fairness_key) FROM {schema}.jobs j
          WHERE j.queue = w.queue AND j.actor = w.actor AND j.status = 'pending'
            AND j.fairness_key > w.fairness_key)
  FROM rr_key_walk w
  WHERE w.fairness_key IS NOT NULL
),
-- Each key (and the key-less group) may contribute an equal share of what the actor can take.
rr_keys AS (
  SELECT t.actor, t.queue, w.fairness_key,
         ceil(t.wanted::numeric / (count(w.fairness_key) OVER (PARTITION BY t.actor, t.queue) + 1))::int AS per_key
  FROM rr_targets t
  JOIN rr_key_walk w ON w.actor = t.actor AND w.queue = t.queue
),
candidates AS (
  SELECT c.id, c.actor, c.identity_key, c.priority, c.scheduled_at, NULL::bigint AS fairness_rank
  FROM per_actor_capacity pac
  CROSS JOIN queue_modes qm
  -- Strict FIFO: the head of the key-less and of the keyed dispatch index, merged.
  CROSS JOIN LATERAL (
    SELECT u.* FROM (
      (SELECT j.id, j.actor, j.identity_key, j.priority, j.scheduled_at
       FROM {schema}.jobs j
       WHERE qm.mode = 'strict_fifo'
         AND j.queue = qm.queue AND j.actor = pac.actor AND j.status = 'pending' AND j.fairness_key IS NULL
         AND j.scheduled_at <= (SELECT now FROM params)
       ORDER BY j.priority DESC, j.scheduled_at, j.id
       LIMIT pac.residual * $5::int)
      UNION ALL
      (SELECT j.id, j.actor, j.identity_key, j.priority, j.scheduled_at
       FROM {schema}.jobs j
       WHERE qm.mode = 'strict_fifo'
         AND j.queue = qm.queue AND j.actor = pac.actor AND j.status = 'pending' AND j.fairness_key IS NOT NULL
         AND j.scheduled_at <= (SELECT now FROM params)
       ORDER BY j.priority DESC, j.scheduled_at, j.id
       LIMIT pac.residual * $5::int)
    ) u
    ORDER BY u.priority DESC, u.scheduled_at, u.id
    LIMIT pac.residual * $5::int
  ) c
  WHERE pac.residual > 0
  UNION ALL
  -- Round-robin, keyed jobs: a share of the limit from each key's head (rank 1 is each key's best
  -- job, rank 2 its next, …), read per key through the fair-dispatch index.
  SELECT c.id, c.actor, c.identity_key, c.priority, c.scheduled_at, c.fairness_rank
  FROM rr_keys k
  CROSS JOIN LATERAL (
    SELECT h.id, h.actor, h.identity_key, h.priority, h.scheduled_at,
           row_number() OVER (ORDER BY h.priority DESC, h.scheduled_at, h.id) AS fairness_rank
    FROM (
      SELECT j.id, j.actor, j.identity_key, j.priority, j.scheduled_at
      FROM {schema}.jobs j
      WHERE j.queue = k.queue AND j.actor = k.actor AND j.fairness_key = k.fairness_key
        AND j.fairness_key IS NOT NULL
        AND j.status = 'pending' AND j.scheduled_at <= (SELECT now FROM params)
      ORDER BY j.priority DESC, j.scheduled_at, j.id
      LIMIT k.per_key
    ) h
  ) c
  WHERE k.fairness_key IS NOT NULL
  UNION ALL
  -- Round-robin, jobs without a key: one more group, with the same share (its own branch:
  -- `fairness_key IS NOT DISTINCT FROM …` could not use the index).
  SELECT c.id, c.actor, c.identity_key, c.priority, c.scheduled_at, c.fairness_rank
  FROM rr_targets t
  CROSS JOIN LATERAL (
    SELECT h.id, h.actor, h.identity_key, h.priority, h.scheduled_at,
           row_number() OVER (ORDER BY h.priority DESC, h.scheduled_at, h.id) AS fairness_rank
    FROM (
      SELECT j.id, j.actor, j.identity_key, j.priority, j.scheduled_at
      FROM {schema}.jobs j
      WHERE j.queue = t.queue AND j.actor = t.actor AND j.fairness_key IS NULL
        AND j.status = 'pending' AND j.scheduled_at <= (SELECT now FROM params)
      ORDER BY j.priority DESC, j.scheduled_at, j.id
      LIMIT (SELECT max(k.per_key) FROM rr_keys k WHERE k.actor = t.actor AND k.queue = t.queue)
    ) h
  ) c
),
identity_dedup AS (
  SELECT * FROM (
    SELECT DISTINCT ON (c.actor, c.identity_key) c.*
    FROM candidates c
    WHERE c.identity_key IS NOT NULL
      AND NOT EXISTS (
        SELECT 1 FROM running_identities ri WHERE ri.actor = c.actor AND ri.identity_key = c.identity_key
      )
    ORDER BY c.actor, c.identity_key, coalesce(c.fairness_rank, 1), c.priority DESC, c.scheduled_at, c.id
  ) gated
  UNION ALL
  SELECT c.* FROM candidates c WHERE c.identity_key IS NULL
),
locked AS (
  SELECT j.id
  FROM {schema}.jobs j
  JOIN identity_dedup d ON d.id = j.id
  -- The id list repeats the join on purpose: it gives the planner a primary-key path whose size
  -- it estimates as small even in a generic plan (where the candidate LIMIT is unknown and the
  -- join alone is planned as a hash of every pending job, a cost that grows with the table).
  -- `status::text` so that no partial index over pending jobs matches: a generic plan made while
  -- `jobs` is empty read every pending job through one (the per-queue active index) and filtered
  -- by id.
  WHERE j.status::text = 'pending' AND j.id = ANY (ARRAY(SELECT id FROM identity_dedup))
  ORDER BY coalesce(d.fairness_rank, 1), d.priority DESC, d.scheduled_at, d.id
  LIMIT $2::int
  FOR UPDATE OF j SKIP LOCKED
),
eligible_candidates AS (
  SELECT d.id, d.actor, pac.max_concurrent, pac.in_flight,
         row_number() OVER (PARTITION BY d.actor
                            ORDER BY coalesce(d.fairness_rank, 1), d.priority DESC, d.scheduled_at, d.id) AS actor_rank,
         coalesce(d.fairness_rank, 1) AS fairness_rank, d.priority, d.scheduled_at
  FROM locked l
  JOIN identity_dedup d ON d.id = l.id
  JOIN per_actor_capacity pac ON pac.actor = d.actor
  WHERE pac.max_concurrent IS NULL OR pac.in_flight < pac.max_concurrent
),
eligible AS NOT MATERIALIZED (
  SELECT e.id, e.priority, e.scheduled_at FROM eligible_candidates e
  WHERE e.max_concurrent IS NULL OR e.actor_rank <= e.max_concurrent - e.in_flight
  ORDER BY e.fairness_rank, e.priority DESC, e.scheduled_at, e.id
  LIMIT $2::int
),
-- The first job that will wait in the worker's local queue: the ($8 + 1)-th in the order the rows
-- come back (none when every claimed job goes straight to a free slot).
first_waiting AS (
  SELECT -e.priority AS neg_priority, e.scheduled_at, e.id FROM eligible e
  ORDER BY e.priority DESC, e.scheduled_at, e.id
  OFFSET $8::int LIMIT 1
),
claimed AS (
  UPDATE {schema}.jobs AS j
  SET status = 'running',
      attempt = j.attempt + 1,
      -- Started: the jobs before the first waiting one (all of them when none waits).
      -- (`first_waiting` is read only when some job waits: the usual claim of a busy worker records
      -- every job, and then it costs nothing.)
      started_at = CASE
        WHEN $8::int >= $2::int THEN (SELECT now FROM params)
        WHEN coalesce((-j.priority, j.scheduled_at, j.id)
                      < (SELECT f.neg_priority, f.scheduled_at, f.id FROM first_waiting f), true)
        THEN (SELECT now FROM params) END,
      locked_by_worker = $3,
      lock_expires_at = (SELECT now FROM params) + $4::float8 * interval '1 millisecond',
      last_heartbeat_at = (SELECT now FROM params)
  FROM eligible e
  WHERE j.id = e.id AND j.status::text = 'pending'
  -- `_scheduled_us` orders the result (a number: cheaper to send and parse than a timestamp).
  RETURNING {claim_columns}, floor(extract(epoch FROM j.scheduled_at) * 1000000)::float8 AS _scheduled_us
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT c.id, 'state_change',
         -- A first attempt's detail is the same for every row: built once (jsonb_build_object is
         -- costly per row, its argument types looked up on every call).
         CASE WHEN c.attempt = 1
           THEN (SELECT jsonb_build_object('from_state', 'pending', 'to_state', 'running', 'reason', 'dispatched',
                                           'worker_id', $3::uuid, 'attempt', 1))
           ELSE jsonb_build_object('from_state', 'pending', 'to_state', 'running', 'reason', 'dispatched',
                                   'worker_id', $3::uuid, 'attempt', c.attempt)
         END
  FROM claimed c
)
-- `events` runs although nothing reads it: a data-modifying WITH query always runs to completion.
SELECT c.*
FROM claimed c
ORDER BY coalesce(c.priority, 0) DESC, c._scheduled_us, c.id;

-- name: dispatchLean
-- The claim for the common case, with a fraction of `dispatch`'s plan: strict FIFO queues, actors
-- with no concurrency limit, jobs with no identity key. The caller uses it only when no actor of the
-- request declares `maxConcurrent`; the rest is checked here, in the same snapshot:
--   - no stored actor_config.max_concurrent for these actors, no round-robin queue among these
--     queues and no pending job of theirs with a fairness key (`guard`), and
--   - no identity key among the jobs this claim would take (`top`).
-- If either fails the statement claims nothing and returns one row with `_fallback` true (and null
-- job columns): the caller runs `dispatch`, which handles every case. Otherwise it returns the
-- claimed rows, or one all-null row with `_fallback` false when there was nothing to claim.
--   $1 queues text[], $2 limit, $3 worker id, $4 lease ms, $5 actors text[],
--   $6 how many of the claimed jobs go straight to a free slot (see `dispatch`)
-- Rows are locked as the key-less dispatch index yields them (FOR UPDATE SKIP LOCKED under the
-- LIMIT, the way a single-queue claim is usually written): no candidate list to read twice, so no
-- oversampling. With several (queue, actor) pairs each locks up to the limit and the best `$2` of
-- them are claimed; the others stay locked, unclaimed, until this statement's transaction ends
-- (milliseconds), and a concurrent claim skips them. Why a second statement at all: a prepared
-- statement's fixed cost grows with its plan (executor start-up, locks and index opening for every
-- node): even when there is nothing to claim, `dispatch` costs more than twice as much as this one.
WITH params AS (
  SELECT clock_timestamp() AS now
),
guard AS (
  SELECT NOT EXISTS (
           SELECT 1 FROM {schema}.actor_config ac
           WHERE ac.actor = ANY ($5::text[]) AND ac.max_concurrent IS NOT NULL)
     AND NOT EXISTS (
           SELECT 1 FROM {schema}.queues qc
           WHERE qc.name = ANY ($1::text[]) AND qc.mode = 'round_robin')
     -- Jobs with a fairness key are in their own index, which only `dispatch` merges in.
     AND NOT EXISTS (
           SELECT 1 FROM {schema}.jobs k
           WHERE k.queue = ANY ($1::text[]) AND k.actor = ANY ($5::text[]) AND k.status = 'pending'
             AND k.fairness_key IS NOT NULL) AS ok
),
top AS (
  SELECT c.row_ctid, c.id, c.identity_key, c.priority, c.scheduled_at
  FROM unnest($1::text[]) AS q(queue)
  CROSS JOIN unnest($5::text[]) AS a(actor)
  CROSS JOIN LATERAL (
    SELECT j.ctid AS row_ctid, j.id, j.identity_key, j.priority, j.scheduled_at
    FROM {schema}.jobs j
    WHERE j.queue = q.queue AND j.actor = a.actor AND j.status = 'pending' AND j.fairness_key IS NULL
      AND j.scheduled_at <= (SELECT now FROM params)
    ORDER BY j.priority DESC, j.scheduled_at, j.id
    LIMIT $2::int
    FOR UPDATE OF j SKIP LOCKED
  ) c
  WHERE (SELECT ok FROM guard)
),
fallback AS (
  SELECT NOT (SELECT ok FROM guard) OR EXISTS (SELECT 1 FROM top WHERE identity_key IS NOT NULL) AS yes
),
locked AS NOT MATERIALIZED (
  SELECT t.row_ctid, t.priority, t.scheduled_at, t.id FROM top t
  WHERE NOT (SELECT yes FROM fallback)
  ORDER BY t.priority DESC, t.scheduled_at, t.id
  LIMIT $2::int
),
-- The first job that will wait in the worker's local queue (see `dispatch`).
first_waiting AS (
  SELECT -l.priority AS neg_priority, l.scheduled_at, l.id FROM locked l
  ORDER BY l.priority DESC, l.scheduled_at, l.id
  OFFSET $6::int LIMIT 1
),
claimed AS (
  UPDATE {schema}.jobs AS j
  SET status = 'running',
      attempt = j.attempt + 1,
      -- Started: the jobs before the first waiting one (all of them when none waits).
      -- (`first_waiting` is read only when some job waits: the usual claim of a busy worker records
      -- every job, and then it costs nothing.)
      started_at = CASE
        WHEN $6::int >= $2::int THEN (SELECT now FROM params)
        WHEN coalesce((-j.priority, j.scheduled_at, j.id)
                      < (SELECT f.neg_priority, f.scheduled_at, f.id FROM first_waiting f), true)
        THEN (SELECT now FROM params) END,
      locked_by_worker = $3,
      lock_expires_at = (SELECT now FROM params) + $4::float8 * interval '1 millisecond',
      last_heartbeat_at = (SELECT now FROM params)
  -- By the locked rows' physical address, read as an array: a TID scan, no index descent per row,
  -- and a plan that stays small when generic (a join to `locked` was planned as a hash join over
  -- a scan of the whole table, its LIMIT being unknown). A row we hold locked cannot move; the
  -- status re-check keeps the claim safe whatever the address. `status::text` so that no partial
  -- index matches it: a plan made while `jobs` is empty would otherwise read every pending job
  -- through one and filter by address.
  WHERE j.ctid = ANY (ARRAY(SELECT l.row_ctid FROM locked l)) AND j.status::text = 'pending'
  -- `_scheduled_us` orders the result (a number: cheaper to send and parse than a timestamp).
  RETURNING {claim_columns}, floor(extract(epoch FROM j.scheduled_at) * 1000000)::float8 AS _scheduled_us
),
events AS (
  INSERT INTO {schema}.job_event_log (job_id, kind, detail)
  SELECT c.id, 'state_change',
         -- A first attempt's detail is the same for every row: built once (jsonb_build_object is
         -- costly per row, its argument types looked up on every call).
         CASE WHEN c.attempt = 1
           THEN (SELECT jsonb_build_object('from_state', 'pending', 'to_state', 'running', 'reason', 'dispatched',
                                           'worker_id', $3::uuid, 'attempt', 1))
           ELSE jsonb_build_object('from_state', 'pending', 'to_state', 'running', 'reason', 'dispatched',
                                   'worker_id', $3::uuid, 'attempt', c.attempt)
         END
  FROM claimed c
)
-- `events` runs although nothing reads it: a data-modifying WITH query always runs to completion.
SELECT c.*, f.yes AS _fallback
FROM fallback f
LEFT JOIN claimed c ON true
ORDER BY coalesce(c.priority, 0) DESC, c._scheduled_us, c.id;


-- name: markStarted
-- Records that the handlers of these claimed jobs are about to start (they waited in the worker's
-- local queue: the claim left started_at null). The worker starts only the jobs that come back, and
-- only once this has committed: a job whose worker dies after this counts its attempt, one whose
-- worker dies before it gets the attempt back (reclaimExpiredLocks). One statement for every job
-- starting at the same time. `status::text`: see `settle` (keeps a generic plan on the primary key).
--   $1 worker id, $2 job ids uuid[]
UPDATE {schema}.jobs AS j
SET started_at = clock_timestamp()
WHERE j.id = ANY ($2::uuid[]) AND j.status::text = 'running' AND j.locked_by_worker = $1
RETURNING j.id;
