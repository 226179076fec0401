/**
 * An outcome write under READ COMMITTED, racing the other writers of a running job's row: its own
 * worker's heartbeat (another connection) and a caller's cancel flag. The outcome statement reads
 * with one snapshot; a row changed after it is updated in its newest version once Postgres has
 * checked the statement's conditions against that version again. A row lost there would leave a
 * finished job `running` until its lease expired, and then run it again. Each test holds the
 * statement on the row lock of one of its jobs, lets the race commit on the jobs it has not reached
 * yet (the rows nobody holds locked), releases, and checks that every outcome was written. Last,
 * the heartbeat beside a row another transaction holds: it neither waits for the row nor reports it
 * lost.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import type { PgDriver } from '../../src/db/pg-driver.js';
import { migratedSchema, TEST_DSN, waitForBlockedBy, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
let driver: PgDriver;
let backend: PostgresBackend;
let schema: string;
let s: string;
const WORKER = '018f0000-0000-7000-8000-0000000000bb';
const JOBS = 11;

beforeAll(async () => {
  db = await migratedSchema('strace');
  ({ driver, schema } = db);
  s = `"${schema}"`;
  backend = new PostgresBackend(driver, { schema });
});
afterAll(async () => {
  await db.drop();
});

/**
 * `JOBS` running jobs owned by WORKER, in id order — and inserted in that order, so that the outcome
 * statement reaches the first id first whichever plan it gets (by the ids it is given, or by a scan
 * of the table's one page). Inserted in random order, a plan that scanned the table (the first
 * statement on a table without statistics) sometimes reached every other row before the held one,
 * and nothing was left for the race to change.
 */
async function seed(): Promise<string[]> {
  const { rows } = await driver.query<{ id: string }>(
    `INSERT INTO ${s}.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at,
                            attempt, started_at, locked_by_worker, lock_expires_at)
     SELECT g.id, 'a', 'q', '{}', 'running', 3, 'transient', clock_timestamp(),
            1, clock_timestamp(), $1, clock_timestamp() + interval '1 hour'
     FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $2)) g
     ORDER BY g.id
     RETURNING id`,
    [WORKER, JOBS],
  );
  return rows.map((r) => r.id).sort();
}

const base = (jobId: string): Omit<Settlement, 'kind'> & { workerId: string } => ({
  jobId,
  workerId: WORKER,
  handlerStartedAt: new Date(),
  durationMs: 1,
});
const succeeded = (jobId: string): Settlement => ({
  ...base(jobId),
  kind: 'succeeded',
  resultJson: null,
  resultSizeBytes: null,
  fallbackResultTtlMs: null,
});
const failed = (jobId: string): Settlement => ({
  ...base(jobId),
  kind: 'failed',
  error: { errorClass: 'Boom', message: 'boom', traceback: null },
  retryDelayMs: null,
});

/** Those of `ids` whose rows nobody holds locked (the outcome write may have reached some already). */
async function unlocked(ids: string[]): Promise<string[]> {
  const { rows } = await driver.query<{ id: string }>(
    `SELECT id FROM ${s}.jobs WHERE id = ANY ($1::uuid[]) FOR UPDATE SKIP LOCKED`,
    [ids],
  );
  return rows.map((r) => r.id);
}

/** The worker's heartbeat of those of `ids` not locked yet. */
async function heartbeat(all: string[]): Promise<number> {
  const ids = await unlocked(all);
  if (ids.length === 0) return 0;
  const { rows } = await driver.query(backend.statement('heartbeatJobs'), [
    WORKER,
    ids,
    60_000,
    ids.map(() => null),
  ]);
  return rows.length;
}

/** A caller's cancel request of each of `ids` not locked yet. */
async function cancelRequests(all: string[]): Promise<number> {
  const ids = await unlocked(all);
  let n = 0;
  for (const id of ids) if (await backend.writeCancelRequest(id, 'race')) n++;
  return n;
}

async function settleDuringRace(
  make: (id: string) => Settlement,
  race: (ids: string[]) => Promise<number>,
): Promise<{ statuses: string[]; changed: number; rows: { status: string; n: number }[] }> {
  const ids = await seed();
  const [first, ...raced] = ids as [string, ...string[]];
  const blocker = new pg.Client({ connectionString: TEST_DSN });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM ${s}.jobs WHERE id = $1 FOR UPDATE`, [first]);
    const pending = backend.settle(ids.map(make));
    await waitForBlockedBy(driver, blocker, 'the outcome write to wait for the blocker’s row lock');
    const changed = await race(raced);
    await blocker.query('ROLLBACK');
    const results = await pending;
    const { rows } = await driver.query<{ status: string; n: number }>(
      `SELECT status::text, count(*)::int AS n FROM ${s}.jobs WHERE id = ANY ($1::uuid[]) GROUP BY 1`,
      [ids],
    );
    await driver.query(`DELETE FROM ${s}.jobs`);
    return { statuses: results.map((r) => r.status), changed, rows };
  } finally {
    await blocker.end();
  }
}

describe('outcome writes racing other writers of the job row', () => {
  it.each([
    ['plain successes', 'a heartbeat', succeeded, heartbeat, 'succeeded'],
    ['plain successes', 'cancel requests', succeeded, cancelRequests, 'succeeded'],
    ['failures', 'a heartbeat', failed, heartbeat, 'failed'],
    ['failures', 'cancel requests', failed, cancelRequests, 'failed'],
  ] as const)('%s, against %s', async (_what, _against, make, race, status) => {
    const r = await settleDuringRace(make, race);
    expect(r.changed).toBeGreaterThan(0);
    expect(r.statuses).toEqual(Array.from({ length: JOBS }, () => status));
    expect(r.rows).toEqual([{ status, n: JOBS }]);
  });
});

describe('a heartbeat beside a row another transaction holds', () => {
  it('renews the other rows without waiting, and reports the held one still owned', async () => {
    const ids = await seed();
    const [held, ...rest] = ids as [string, ...string[]];
    const before = async (): Promise<Map<string, number>> => {
      const { rows } = await driver.query<{ id: string; ms: number }>(
        `SELECT id, (extract(epoch FROM lock_expires_at) * 1000)::float8 AS ms FROM ${s}.jobs WHERE id = ANY ($1::uuid[])`,
        [ids],
      );
      return new Map(rows.map((r) => [r.id, r.ms]));
    };
    const expiresBefore = await before();
    const blocker = new pg.Client({ connectionString: TEST_DSN });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT id FROM ${s}.jobs WHERE id = $1 FOR UPDATE`, [held]);
      // Two hours: every renewed lease moves (the seeded ones end in one).
      const owned = await backend.heartbeatJobs(WORKER, ids, 2 * 3600_000);
      expect([...owned].sort()).toEqual(ids);
      const expiresAfter = await before();
      expect(expiresAfter.get(held)).toBe(expiresBefore.get(held));
      for (const id of rest) expect(expiresAfter.get(id)!).toBeGreaterThan(expiresBefore.get(id)!);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
      await driver.query(`DELETE FROM ${s}.jobs`);
    }
  });
});
