/**
 * The Postgres side of the leader lease, beyond the contract: the advisory lock that lets a
 * candidate take over at once from a holder whose connection died, the fence's row lock that a
 * takeover waits for (and a renewal does not), and the idle limit that rolls back a sweep whose
 * process froze mid-transaction once the lease has run out.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { LeaderSession } from '../../src/backend/worker-types.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { holdsFor, waitFor } from '../helpers/wait.js';

const A = '018f0000-0000-7000-8000-00000000d00a';
const B = '018f0000-0000-7000-8000-00000000d00b';

let db: TestSchema;
let backend: PostgresBackend;
const sessions: LeaderSession[] = [];
const clients: pg.Client[] = [];

beforeAll(async () => {
  db = await migratedSchema('lease');
  backend = new PostgresBackend(db.driver, { schema: db.schema });
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
  await db.pool.query(
    `UPDATE "${db.schema}".maintenance_leader SET expires_at = '-infinity', holds_lock = false`,
  );
});
afterAll(async () => {
  await db.drop();
});

const open = async (workerId: string, leaseMs = 30_000): Promise<LeaderSession> => {
  const s = await backend.openLeaderSession(workerId, 'host', { leaseMs });
  sessions.push(s);
  return s;
};
const expireLease = (): Promise<unknown> =>
  db.pool.query(
    `UPDATE "${db.schema}".maintenance_leader SET expires_at = clock_timestamp() - interval '1 ms'`,
  );
const lockHolder = async (): Promise<string | null> =>
  (
    await db.pool.query<{ application_name: string }>(
      `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.objid = (hashtextextended($1, 0) & 4294967295)::oid`,
      [`taskq:maintenance_leader:${db.schema}`],
    )
  ).rows[0]?.application_name ?? null;

/** A connection of its own, in a transaction that passed the fence of `term` (a sweep in flight). */
async function sweepInFlight(workerId: string, term: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: TEST_DSN });
  c.on('error', () => undefined);
  clients.push(c);
  await c.connect();
  await c.query('BEGIN');
  const fence = await c.query(backend.statement('lockLeaderTerm'), [workerId, term]);
  expect(fence.rows).toHaveLength(1);
  return c;
}

describe('the leader lease on Postgres', () => {
  it('is taken over at once when the holder’s connection dies (its advisory lock is freed)', async () => {
    const a = await open(A);
    const b = await open(B);
    expect(await a.tryAcquire()).toBe(true);
    expect(await lockHolder()).toBe(`taskq-leader:${A.slice(-12)}`);
    expect(await b.tryAcquire()).toBe(false);
    await db.pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
      [`taskq-leader:${A.slice(-12)}`],
    );
    // The lease has most of its 30 s left: the freed lock, not the expiry, hands it over.
    await waitFor(() => b.tryAcquire(), 5000, 'the second session to take over');
    expect((await backend.getLeaderLease())?.workerId).toBe(B);
    expect(await lockHolder()).toBe(`taskq-leader:${B.slice(-12)}`);
  });

  it('is taken over from a holder that keeps its connection only once the lease expired; the old holder lets its lock go', async () => {
    const a = await open(A);
    const b = await open(B);
    expect(await a.tryAcquire()).toBe(true);
    await expireLease();
    expect(await b.tryAcquire()).toBe(true);
    // A resumes: its renewal is refused, and it gives the advisory lock up for the new holder.
    expect(await lockHolder()).toBe(`taskq-leader:${A.slice(-12)}`);
    expect(await a.tryAcquire()).toBe(false);
    expect(await lockHolder()).toBeNull();
    expect(await b.tryAcquire()).toBe(true);
    expect(await lockHolder()).toBe(`taskq-leader:${B.slice(-12)}`);
    // From now on B's lease says it holds the lock: its death would hand over at once again.
    expect(
      (await db.pool.query(`SELECT holds_lock FROM "${db.schema}".maintenance_leader`)).rows[0].holds_lock,
    ).toBe(true);
  });

  it('a takeover waits for a sweep in flight; a renewal does not', async () => {
    const a = await open(A);
    const b = await open(B);
    expect(await a.tryAcquire()).toBe(true);
    const sweep = await sweepInFlight(A, a.fence!.term);
    expect(await a.tryAcquire()).toBe(true);
    await expireLease();
    let took: boolean | null = null;
    const takeover = b.tryAcquire().then((v) => (took = v));
    await holdsFor(() => took === null, 300, 'the takeover waiting for the sweep');
    await sweep.query('COMMIT');
    await takeover;
    expect(took).toBe(true);
    expect((await backend.getLeaderLease())?.workerId).toBe(B);
  });

  it('rolls back a sweep whose process froze mid-transaction once the lease runs out, then hands over', async () => {
    const job = await db.pool.query<{ id: string }>(
      `INSERT INTO "${db.schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
       VALUES (gen_random_uuid(), 'x', 'default', '{}', 'pending', 1, 'transient', now()) RETURNING id`,
    );
    const a = await open(A, 1500);
    const b = await open(B, 1500);
    expect(await a.tryAcquire()).toBe(true);
    const frozen = await sweepInFlight(A, a.fence!.term);
    await frozen.query(`UPDATE "${db.schema}".jobs SET priority = 99 WHERE id = $1`, [job.rows[0]!.id]);
    // A stops here (no renewal, no COMMIT): its connection stays open, as a SIGSTOPped process's does.
    const t0 = Date.now();
    await waitFor(() => b.tryAcquire(), 10_000, 'the lease to be taken over');
    console.log(`frozen mid-sweep: taken over after ${Date.now() - t0} ms (lease 1500 ms)`);
    await expect(frozen.query('SELECT 1')).rejects.toThrow();
    const row = await db.pool.query(`SELECT priority FROM "${db.schema}".jobs WHERE id = $1`, [
      job.rows[0]!.id,
    ]);
    expect(row.rows[0].priority).toBe(0);
    expect((await backend.getLeaderLease())?.workerId).toBe(B);
  });
});
