-- The maintenance leader's lease. Until now a session-level advisory lock alone decided who leads,
-- so a leader that was alive but frozen (SIGSTOP, a paused VM, a stalled event loop) kept its open
-- connection, its lock and the leadership for as long as the freeze lasted, and nobody swept. The
-- `maintenance_leader` row becomes the authority: a term (the fencing token every sweep checks)
-- and an expiry on the database clock that the leader pushes forward on every election tick.
-- `holds_lock` says whether the holder also held the advisory lock at its last renewal: a
-- candidate that then obtains the lock knows the holder's session ended and takes over at once.
-- Adding columns with defaults is safe while workers of the previous version run: they ignore them.
ALTER TABLE {schema}.maintenance_leader
  ADD COLUMN term bigint NOT NULL DEFAULT 0,
  ADD COLUMN expires_at timestamptz NOT NULL DEFAULT '-infinity',
  ADD COLUMN holds_lock boolean NOT NULL DEFAULT false;

-- The row is the lease: it exists from the start (expired, term 0), so electing is an UPDATE.
INSERT INTO {schema}.maintenance_leader (id, worker_id, hostname, acquired_at, last_seen_at)
VALUES (true, '00000000-0000-0000-0000-000000000000', NULL, clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO NOTHING;

COMMENT ON TABLE {schema}.maintenance_leader IS
  'The maintenance leader''s lease: holder (worker_id), term (fencing token), expires_at (database clock).';
