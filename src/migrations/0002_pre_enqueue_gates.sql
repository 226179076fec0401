-- The gate locks of enqueues with a maxPending or a uniqueFor gate (src/backend/enqueue-gates.ts).
-- A gate is a check followed by an insert; two callers that both check before either inserts both
-- pass. So such an enqueue takes a transaction-scoped advisory lock per gate (one per actor for
-- maxPending, one per (actor, identity key) for uniqueFor), held until its transaction ends, and
-- checks after taking it. Enqueues without these gates take no lock.
--
-- The checks are functions because a statement reads the snapshot it started with: a check in the
-- statement that waited for the lock would not see the insert of the transaction it waited for.
-- A VOLATILE function takes a fresh snapshot for each query it runs, after the lock (READ
-- COMMITTED), so a single enqueue stays one statement, and one round trip.

-- Takes the advisory lock of each gate key (`<schema>:<gate name>`), hashed to 64 bits, in the
-- order of the hashes: two callers sharing gates queue up instead of deadlocking. A lock the
-- transaction already holds is taken again at no cost.
CREATE FUNCTION {schema}.lock_enqueue_gates(p_keys text[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(s.k)
  FROM (SELECT DISTINCT hashtextextended(x, 0) AS k FROM unnest(p_keys) AS x ORDER BY 1) AS s;
END
$$;

-- maxPending: the gate locks, then the pending and scheduled jobs of the actor.
CREATE FUNCTION {schema}.enqueue_gate_pending(p_keys text[], p_actor text) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n integer;
BEGIN
  PERFORM {schema}.lock_enqueue_gates(p_keys);
  SELECT count(*)::integer INTO n FROM {schema}.jobs
  WHERE actor = p_actor AND status IN ('pending', 'scheduled');
  RETURN n;
END
$$;

-- uniqueFor: the gate locks, then the newest job of (actor, identity key) in one of the states,
-- created within the window (milliseconds, on the database clock).
CREATE FUNCTION {schema}.enqueue_gate_unique(
  p_keys text[], p_actor text, p_identity_key text, p_window_ms float8, p_states text[]
) RETURNS SETOF {schema}.jobs
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM {schema}.lock_enqueue_gates(p_keys);
  RETURN QUERY
  SELECT * FROM {schema}.jobs u
  WHERE u.actor = p_actor AND u.identity_key = p_identity_key
    AND u.status::text = ANY (p_states)
    AND u.created_at >= clock_timestamp() - p_window_ms * interval '1 millisecond'
  ORDER BY u.created_at DESC
  LIMIT 1;
END
$$;
