/**
 * A server checkpoint before a measured phase, so that every system's phase starts from the same
 * server state:
 * - the WAL it writes goes into recycled segment files. Until a checkpoint has recycled them,
 *   Postgres makes each new 16 MB segment by writing zeros to a new file and syncing it while it
 *   holds the WAL write lock, and every committing session waits meanwhile: how many such stalls a
 *   system met would depend on the run order;
 * - the previous system's dirty pages are written out before this one is timed, not during.
 * Any system a checkpoint helps, it helps the same way: the harness runs it before every system's
 * phase alike. Needs a superuser or the `pg_checkpoint` role; without either the phase runs
 * without it and the failure is reported once.
 */
import pg from 'pg';

import { errorMessage, PG_DSN } from './common.js';

let warned = false;

/**
 * Runs `CHECKPOINT` on the benchmark's server (or `dsn`'s). Never rejects: returns false when it
 * could not, and says so on stderr the first time.
 */
export async function checkpoint(dsn: string = PG_DSN): Promise<boolean> {
  const client = new pg.Client({ connectionString: dsn });
  try {
    await client.connect();
    await client.query('CHECKPOINT');
    return true;
  } catch (err) {
    if (!warned) {
      warned = true;
      process.stderr.write(
        `CHECKPOINT before measured phases failed (${errorMessage(err)}); phases run without it\n`,
      );
    }
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
