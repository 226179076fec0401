/**
 * Watching a batch's accounting from outside the product, for the batch acceptance tests.
 *
 * - {@link countersSnapshot}: the batch row's counters and the jobs table's counts by status, read in
 *   one REPEATABLE READ snapshot, and the differences between them.
 * - {@link installBatchAudit}: a test-only trigger on `jobs`, named to fire after the product's
 *   `jobs_batch_child_status` on the same row, that logs every child entering or leaving a terminal
 *   status together with the batch row as the product's trigger left it. The log's sequence is
 *   taken while the transaction holds the batch row's lock (the product's trigger updated the row
 *   just before), so its order is the order in which outcomes were counted — the order the failure
 *   streak is defined on. {@link replayAudit} recomputes the counters and the streak from that order
 *   alone and reports where the product's row disagrees, and where the abort happened.
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
 * Creates `<schema>.batch_audit` and the trigger that fills it (see the file comment). Install it
 * before the batch's children change status.
 */
export async function installBatchAudit(pool: pg.Pool, schema: string): Promise<void> {
  const S = `"${schema}"`;
  const terminal = TERMINAL.map((s) => `'${s}'`).join(', ');
  await pool.query(`
    CREATE TABLE ${S}.batch_audit (
      seq bigserial PRIMARY KEY, batch_id uuid, job_id uuid, old_status text, new_status text,
      aborting boolean, b_status text, streak int,
      succeeded int, failed int, cancelled int, crashed int, abandoned int)`);
  await pool.query(`
    CREATE FUNCTION ${S}.test_batch_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${S}.batch_audit (batch_id, job_id, old_status, new_status, aborting, b_status, streak,
                                    succeeded, failed, cancelled, crashed, abandoned)
      SELECT b.id, NEW.id, OLD.status::text, NEW.status::text,
             coalesce(current_setting('taskq.batch_aborting', true) = NEW.batch_id::text, false),
             b.status, b.consecutive_failures, b.succeeded, b.failed, b.cancelled, b.crashed, b.abandoned
      FROM ${S}.batches b WHERE b.id = NEW.batch_id;
      RETURN NULL;
    END $$`);
  // Row triggers of one event fire in name order: this one after the product's jobs_batch_child_status.
  await pool.query(`
    CREATE TRIGGER zz_test_batch_audit AFTER UPDATE OF status ON ${S}.jobs FOR EACH ROW
    WHEN (NEW.batch_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
          AND (OLD.status::text IN (${terminal}) OR NEW.status::text IN (${terminal})))
    EXECUTE FUNCTION ${S}.test_batch_audit()`);
}

/** One logged change of a child's status, with the batch row as it stood after it was counted. */
export interface AuditEntry {
  seq: string;
  job_id: string;
  old_status: string;
  new_status: string;
  /** The change is one of the abort's own cancels (the product's trigger does not count them one by one). */
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
      `SELECT a.seq::text AS seq, a.job_id::text AS job_id, old_status, new_status, aborting, b_status,
              streak, succeeded, failed, cancelled, crashed, abandoned
       FROM "${schema}".batch_audit a WHERE a.batch_id = $1 ORDER BY a.seq`,
      [batchId],
    )
  ).rows;
}

/** What {@link replayAudit} found. */
export interface AuditReplay {
  /** Entries where the row's counters, streak or status differ from the replay (empty: none). */
  mismatches: string[];
  /** Outcomes counted (children entering a terminal status, the abort's cancels not included). */
  outcomes: number;
  /** The 1-based outcome at which the replayed streak first reached the threshold, or null. */
  streakReachedAt: number | null;
  /** The 1-based outcome whose transaction aborted the batch, or null. */
  abortedAt: number | null;
  /** The job whose outcome aborted the batch, or null. */
  abortedBy: string | null;
  /** The row's failure streak right after the aborting outcome, or null. */
  streakAtAbort: number | null;
  /** Children the abort cancelled. */
  abortCancels: number;
  /** The longest run of consecutive failures in the replay. */
  longestStreak: number;
}

/**
 * Replays the audit log: counters and failure streak recomputed from the order of the outcomes
 * alone (failed extends the streak, succeeded resets it, the rest leave it), compared with the row
 * after every outcome; the abort expected exactly at the outcome where the streak first reaches
 * `threshold` (null: never).
 */
export function replayAudit(entries: readonly AuditEntry[], threshold: number | null): AuditReplay {
  const tally: Record<Terminal, number> = { succeeded: 0, failed: 0, cancelled: 0, crashed: 0, abandoned: 0 };
  const mismatches: string[] = [];
  let streak = 0;
  let longest = 0;
  let outcomes = 0;
  let pendingCancels = 0;
  let abortCancels = 0;
  let aborted = false;
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
  for (const e of entries) {
    if (e.aborting) {
      if (e.new_status !== 'cancelled' || isTerminal(e.old_status))
        mismatches.push(`seq ${e.seq}: abort changed ${e.job_id} ${e.old_status} → ${e.new_status}`);
      pendingCancels++;
      continue;
    }
    if (isTerminal(e.old_status)) tally[e.old_status]--;
    if (isTerminal(e.new_status)) {
      outcomes++;
      tally[e.new_status]++;
      if (e.new_status === 'failed') streak++;
      else if (e.new_status === 'succeeded') streak = 0;
      longest = Math.max(longest, streak);
      if (out.streakReachedAt === null && threshold !== null && streak >= threshold && !aborted)
        out.streakReachedAt = outcomes;
    }
    if (pendingCancels > 0) {
      tally.cancelled += pendingCancels;
      abortCancels += pendingCancels;
      pendingCancels = 0;
    }
    if (aborted && e.b_status !== 'aborted')
      mismatches.push(`seq ${e.seq}: the batch left 'aborted' (${e.b_status})`);
    if (!aborted && e.b_status === 'aborted') {
      aborted = true;
      out.abortedAt = outcomes;
      out.abortedBy = e.job_id;
      out.streakAtAbort = e.streak;
    }
    const where = `seq ${e.seq} (outcome ${outcomes}, ${e.job_id} ${e.old_status} → ${e.new_status})`;
    if (e.streak !== streak) mismatches.push(`${where}: row streak ${e.streak}, replayed ${streak}`);
    for (const s of TERMINAL)
      if (e[s] !== tally[s]) mismatches.push(`${where}: row ${s} ${e[s]}, replayed ${tally[s]}`);
  }
  if (pendingCancels > 0) mismatches.push(`${pendingCancels} abort cancels after the last outcome`);
  return { ...out, outcomes, abortCancels, longestStreak: longest };
}
