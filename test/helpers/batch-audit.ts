/**
 * Watching a batch's accounting from outside the product, for the batch acceptance tests.
 *
 * - {@link countersSnapshot}: the batch row's counters and the jobs table's counts by status, read in
 *   one REPEATABLE READ snapshot, and the differences between them.
 * - {@link installBatchAudit}: test-only triggers on `jobs`. A row trigger logs every child entering
 *   or leaving a terminal status, in the order the transaction changed them (the order the product
 *   notes them in). A deferred trigger, named to fire after the product's deferred fold
 *   (`jobs_batch_outcomes_fold`), groups the transaction's log entries (per batch) while it holds
 *   the batch rows' locks (the fold took them, at commit) and stamps them with the batch row as the
 *   fold left it. So the groups' order is the order in which outcomes were counted — the order the
 *   failure streak is defined on — and each group's entries carry the row after them.
 *   {@link replayAudit} recomputes the counters and the streak from that order alone, compares them
 *   with the row after each group, and finds where the abort happened.
 */
import type pg from 'pg';

/** Terminal job statuses. */
export const TERMINAL = ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'] as const;
type Terminal = (typeof TERMINAL)[number];
const isTerminal = (s: string): s is Terminal => (TERMINAL as readonly string[]).includes(s);

/** The batch row's counters beside the jobs table's counts, from one snapshot. */
export interface CountersSnapshot {
  row: Record<Terminal | 'expected_size' | 'consecutive_failures', number> & { status: string };
  /** Children by status in the jobs table (statuses with no child are absent). */
  table: Record<string, number>;
  /** Children in the jobs table. */
  total: number;
  /** Where the row and the table disagree (empty: they agree). */
  mismatches: string[];
}

/** Reads the batch row's counters and the jobs table's counts in one REPEATABLE READ transaction. */
export async function countersSnapshot(
  pool: pg.Pool,
  schema: string,
  batchId: string,
): Promise<CountersSnapshot> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    const row = (
      await c.query(
        `SELECT status, succeeded, failed, cancelled, crashed, abandoned, expected_size, consecutive_failures
         FROM "${schema}".batches WHERE id = $1`,
        [batchId],
      )
    ).rows[0] as CountersSnapshot['row'] | undefined;
    const byStatus = (
      await c.query<{ status: string; n: number }>(
        `SELECT status::text AS status, count(*)::int AS n FROM "${schema}".jobs WHERE batch_id = $1 GROUP BY status`,
        [batchId],
      )
    ).rows;
    await c.query('COMMIT');
    if (!row) throw new Error(`batch ${batchId} has no row`);
    const table: Record<string, number> = {};
    let total = 0;
    for (const r of byStatus) {
      table[r.status] = r.n;
      total += r.n;
    }
    const mismatches: string[] = [];
    for (const s of TERMINAL)
      if (row[s] !== (table[s] ?? 0)) mismatches.push(`${s}: row ${row[s]}, table ${table[s] ?? 0}`);
    if (row.expected_size !== total) mismatches.push(`expected_size ${row.expected_size}, table ${total}`);
    return { row, table, total, mismatches };
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

/**
 * Creates `<schema>.batch_audit` and the triggers that fill it (see the file comment). Install it
 * before the batch's children change status.
 */
export async function installBatchAudit(pool: pg.Pool, schema: string): Promise<void> {
  const S = `"${schema}"`;
  const terminal = TERMINAL.map((s) => `'${s}'`).join(', ');
  await pool.query(`
    CREATE TABLE ${S}.batch_audit (
      seq bigserial PRIMARY KEY, txid bigint NOT NULL DEFAULT txid_current(),
      batch_id uuid, job_id uuid, old_status text, new_status text, aborting boolean,
      counted int, grp bigint, b_status text, streak int,
      succeeded int, failed int, cancelled int, crashed int, abandoned int)`);
  await pool.query(`CREATE SEQUENCE ${S}.batch_audit_grp`);
  await pool.query(`
    CREATE FUNCTION ${S}.test_batch_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${S}.batch_audit (batch_id, job_id, old_status, new_status, aborting)
      VALUES (NEW.batch_id, NEW.id, OLD.status::text, NEW.status::text,
              coalesce(current_setting('taskq.batch_aborting', true) = NEW.batch_id::text, false));
      RETURN NULL;
    END $$`);
  await pool.query(`
    CREATE FUNCTION ${S}.test_batch_audit_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      r record;
      g bigint;
    BEGIN
      FOR r IN SELECT DISTINCT batch_id FROM ${S}.batch_audit
               WHERE counted IS NULL AND txid = txid_current() ORDER BY batch_id LOOP
        g := nextval('${S}.batch_audit_grp');
        UPDATE ${S}.batch_audit a
        SET counted = 1, grp = g, b_status = b.status,
            streak = b.consecutive_failures, succeeded = b.succeeded, failed = b.failed,
            cancelled = b.cancelled, crashed = b.crashed, abandoned = b.abandoned
        FROM ${S}.batches b
        WHERE a.counted IS NULL AND a.txid = txid_current() AND a.batch_id = r.batch_id AND b.id = r.batch_id;
      END LOOP;
      RETURN NULL;
    END $$`);
  await pool.query(`
    CREATE TRIGGER zz_test_batch_audit AFTER UPDATE OF status ON ${S}.jobs FOR EACH ROW
    WHEN (NEW.batch_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
          AND (OLD.status::text IN (${terminal}) OR NEW.status::text IN (${terminal})))
    EXECUTE FUNCTION ${S}.test_batch_audit()`);
  // Deferred like the product's fold; triggers of one event fire in name order: this one after it.
  await pool.query(`
    CREATE CONSTRAINT TRIGGER zz_test_batch_audit_stamp AFTER UPDATE OF status ON ${S}.jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.batch_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
          AND (OLD.status::text IN (${terminal}) OR NEW.status::text IN (${terminal})))
    EXECUTE FUNCTION ${S}.test_batch_audit_stamp()`);
}

/** One logged change of a child's status, with the batch row as it stood after its transaction. */
export interface AuditEntry {
  seq: string;
  /** The transaction (and batch) the entry was counted in. */
  grp: string;
  job_id: string;
  old_status: string;
  new_status: string;
  /** The change is one of the abort's own cancels (the product's fold counts them in one step). */
  aborting: boolean;
  b_status: string;
  streak: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  crashed: number;
  abandoned: number;
}

/** The audit log of one batch, in the order its outcomes were counted. */
export async function readAudit(pool: pg.Pool, schema: string, batchId: string): Promise<AuditEntry[]> {
  return (
    await pool.query<AuditEntry>(
      `SELECT a.seq::text AS seq, a.grp::text AS grp, a.job_id::text AS job_id, old_status, new_status,
              aborting, b_status, streak, succeeded, failed, cancelled, crashed, abandoned
       FROM "${schema}".batch_audit a WHERE a.batch_id = $1 AND a.grp IS NOT NULL ORDER BY a.grp, a.seq`,
      [batchId],
    )
  ).rows;
}

/** What {@link replayAudit} found. */
export interface AuditReplay {
  /** Statements where the row's counters, streak or status differ from the replay (empty: none). */
  mismatches: string[];
  /** Outcomes counted (children entering a terminal status, the abort's cancels not included). */
  outcomes: number;
  /** The 1-based outcome at which the replayed streak first reached the threshold, or null. */
  streakReachedAt: number | null;
  /**
   * The 1-based outcome at which the batch aborted, or null: the outcome where the streak reached
   * the threshold when the first transaction that left the row aborted counted it, else that
   * transaction's last outcome (an abort the streak does not explain).
   */
  abortedAt: number | null;
  /** The job whose outcome aborted the batch, or null. */
  abortedBy: string | null;
  /** The replayed failure streak at the aborting outcome, or null. */
  streakAtAbort: number | null;
  /** Children the abort cancelled. */
  abortCancels: number;
  /** The longest run of consecutive failures in the replay. */
  longestStreak: number;
}

/**
 * Replays the audit log: counters and failure streak recomputed from the order of the outcomes
 * alone (failed extends the streak, succeeded resets it, the rest leave it), compared with the row
 * after every transaction; the abort expected exactly at the outcome where the streak first reaches
 * `threshold` (null: never).
 */
export function replayAudit(entries: readonly AuditEntry[], threshold: number | null): AuditReplay {
  const tally: Record<Terminal, number> = { succeeded: 0, failed: 0, cancelled: 0, crashed: 0, abandoned: 0 };
  const mismatches: string[] = [];
  let streak = 0;
  let longest = 0;
  let outcomes = 0;
  let abortCancels = 0;
  let aborted = false;
  const streakAt = new Map<number, { streak: number; job: string }>();
  const out: AuditReplay = {
    mismatches,
    outcomes: 0,
    streakReachedAt: null,
    abortedAt: null,
    abortedBy: null,
    streakAtAbort: null,
    abortCancels: 0,
    longestStreak: 0,
  };
  let groupStart = 1;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i === 0 || entries[i - 1]!.grp !== e.grp) groupStart = outcomes + 1;
    if (e.aborting) {
      if (e.new_status !== 'cancelled' || isTerminal(e.old_status))
        mismatches.push(`seq ${e.seq}: abort changed ${e.job_id} ${e.old_status} → ${e.new_status}`);
      tally.cancelled++;
      abortCancels++;
    } else {
      if (isTerminal(e.old_status)) tally[e.old_status]--;
      if (isTerminal(e.new_status)) {
        outcomes++;
        tally[e.new_status]++;
        if (e.new_status === 'failed') streak++;
        else if (e.new_status === 'succeeded') streak = 0;
        longest = Math.max(longest, streak);
        streakAt.set(outcomes, { streak, job: e.job_id });
        if (out.streakReachedAt === null && threshold !== null && streak >= threshold && !aborted)
          out.streakReachedAt = outcomes;
      }
    }
    const last = i === entries.length - 1 || entries[i + 1]!.grp !== e.grp;
    if (!last) continue;
    // The row after this transaction.
    if (aborted && e.b_status !== 'aborted')
      mismatches.push(`transaction ${e.grp}: the batch left 'aborted' (${e.b_status})`);
    if (!aborted && e.b_status === 'aborted') {
      aborted = true;
      const reached = out.streakReachedAt;
      out.abortedAt = reached !== null && reached >= groupStart && reached <= outcomes ? reached : outcomes;
      out.abortedBy = streakAt.get(out.abortedAt)?.job ?? null;
      out.streakAtAbort = streakAt.get(out.abortedAt)?.streak ?? null;
    }
    const where = `transaction ${e.grp} (outcomes ${groupStart}–${outcomes})`;
    if (e.streak !== streak) mismatches.push(`${where}: row streak ${e.streak}, replayed ${streak}`);
    for (const s of TERMINAL)
      if (e[s] !== tally[s]) mismatches.push(`${where}: row ${s} ${e[s]}, replayed ${tally[s]}`);
  }
  return { ...out, outcomes, abortCancels, longestStreak: longest };
}
