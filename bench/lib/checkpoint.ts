import pg from 'pg';

import { PG_DSN } from './common.js';

/**
 * Forces a Postgres checkpoint before a timed round. The server checkpoints whenever
 * `max_wal_size` worth of WAL has been written since the last one (every 25–50 s during this
 * benchmark, on default settings), and a round that overlaps one runs slower: the checkpoint's
 * writes compete with the round, and every page touched after it is logged whole once. Which
 * system's round a checkpoint lands in was luck (often one caused by another system's WAL); after
 * an explicit checkpoint each round starts from the same state, and a system that writes enough
 * WAL to trigger one within its own round still pays for it. Needs a superuser (or, on Postgres 15
 * and later, `pg_checkpoint`); without the privilege it does nothing and returns false.
 */
export async function checkpoint(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_DSN });
  await client.connect();
  try {
    await client.query('CHECKPOINT');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
