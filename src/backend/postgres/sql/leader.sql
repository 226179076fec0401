-- The maintenance leader's lease (docs/maintenance.md § Leader election). The `maintenance_leader`
-- row is the authority: `worker_id` holds term `term` until `expires_at` (database clock). Every
-- time predicate here is Postgres's own clock; statements take the lease as a duration.

-- name: tryLeaderLock
SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS acquired;

-- name: releaseLeaderLock
SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS released;

-- name: ensureLeaderRow
-- The lease row exists from migration 0003 on; a deleted one comes back expired, at term 0.
INSERT INTO {schema}.maintenance_leader (id, worker_id, hostname, term, expires_at)
VALUES (true, '00000000-0000-0000-0000-000000000000', NULL, 0, '-infinity')
ON CONFLICT (id) DO NOTHING;

-- name: renewLeaderLease
-- The holder pushes its lease forward, while it still has it: same worker, same term, not expired.
-- A plain UPDATE takes a FOR NO KEY UPDATE row lock, which does not conflict with the FOR KEY SHARE
-- of the holder's own sweeps in flight (lockLeaderTerm): a long sweep never delays a renewal.
-- $1 worker id, $2 term, $3 lease ms, $4 holds the advisory lock
UPDATE {schema}.maintenance_leader
SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond',
    last_seen_at = clock_timestamp(),
    holds_lock = $4
WHERE id AND worker_id = $1 AND term = $2::bigint AND expires_at > clock_timestamp()
RETURNING term::text AS term;

-- name: takeOverLeaderLease
-- A new term for this worker when the lease is free: expired on the database clock, or its holder
-- held the advisory lock that this worker now holds (the holder's session ended or it stepped
-- down), or it is this worker's own (a renewal whose answer was lost). FOR UPDATE conflicts with
-- the FOR KEY SHARE every fenced sweep holds on this row, so a takeover waits for the sweeps of the
-- old term in flight to commit or roll back, and none of them can start after it: no sweep of the
-- old term overlaps the new term. The condition is checked again on the row as it is once locked.
-- $1 worker id, $2 hostname, $3 lease ms, $4 holds the advisory lock
WITH free AS (
  SELECT l.id FROM {schema}.maintenance_leader l
  WHERE l.id AND (l.expires_at <= clock_timestamp() OR ($4 AND l.holds_lock) OR l.worker_id = $1)
  FOR UPDATE
)
UPDATE {schema}.maintenance_leader AS l
SET term = l.term + 1,
    worker_id = $1,
    hostname = $2,
    acquired_at = clock_timestamp(),
    last_seen_at = clock_timestamp(),
    expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond',
    holds_lock = $4
FROM free
WHERE l.id = free.id
RETURNING l.term::text AS term;

-- name: releaseLeaderLease
-- Graceful step-down: the lease expires now, so the next candidate's election tick takes over
-- without waiting out the lease. $1 worker id, $2 term
UPDATE {schema}.maintenance_leader
SET expires_at = clock_timestamp(), holds_lock = false
WHERE id AND worker_id = $1 AND term = $2::bigint AND expires_at > clock_timestamp();

-- name: lockLeaderTerm
-- The fence: the first statement of every fenced sweep's transaction. It returns a row only while
-- term $2 of worker $1 is current and unexpired, and keeps a FOR KEY SHARE lock on the lease row
-- until the sweep commits, which a takeover (FOR UPDATE) waits for; renewals are not blocked. A
-- process frozen mid-transaction would hold that lock, and the takeover, as long as it stays
-- frozen: the transaction may therefore stay idle no longer than the lease has left, after which
-- Postgres ends the session and rolls the unfinished sweep back.
-- $1 worker id, $2 term
SELECT set_config('idle_in_transaction_session_timeout',
         greatest(1, ceil(extract(epoch FROM (l.expires_at - clock_timestamp())) * 1000))::bigint::text,
         true) AS idle_timeout
FROM {schema}.maintenance_leader l
WHERE l.id AND l.worker_id = $1 AND l.term = $2::bigint AND l.expires_at > clock_timestamp()
FOR KEY SHARE;

-- name: readLeaderLease
-- The lease as it stands, and whether it is still valid on the database clock.
SELECT l.worker_id::text AS worker_id, l.hostname, l.term::text AS term, l.acquired_at, l.last_seen_at,
       l.expires_at, l.expires_at > clock_timestamp() AS valid, l.holds_lock
FROM {schema}.maintenance_leader l
WHERE l.id AND l.term > 0;
