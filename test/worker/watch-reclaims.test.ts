/**
 * TaskQ.watchReclaims against real Postgres: it releases its LISTEN connection when the consumer
 * stops, catches up page after page without waiting for a poll, and is woken by the reclaim's
 * NOTIFY. Then the visibility-delay risk diagnostic (checkReclaimVisibilityDelayRisk), with a
 * second connection holding a `job_events` write open.
 *
 * Reclaims are real: jobs are claimed for a worker that never renews, their leases are moved into
 * the past on the database clock, and the backend's reclaim sweep runs. Poll timeouts are 60 s,
 * longer than the test timeout, so an iterator that waited for a poll would fail the test rather
 * than slow it down.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import type { EventRow } from '../../src/backend/types.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Logger } from '../../src/obs/logger.js';
import { wakeChannel } from '../../src/core/schema-name.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const DEAD_WORKER = '018f0000-0000-7000-8000-00000000d001';
/** Non-retryable, so a reclaimed job ends `crashed` and is never claimed again by a later test. */
const victim = actor(
  { name: 'wr_victim', queue: 'wr', retry: { kind: 'nonRetryable' } },
  async () => undefined,
);

let db: TestSchema;
let tq: TaskQ;
const logged: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
const logger: Logger = {
  debug: (obj, msg) => logged.push({ level: 'debug', msg: msg ?? '', obj: obj as Record<string, unknown> }),
  info: (obj, msg) => logged.push({ level: 'info', msg: msg ?? '', obj: obj as Record<string, unknown> }),
  warn: (obj, msg) => logged.push({ level: 'warn', msg: msg ?? '', obj: obj as Record<string, unknown> }),
  error: (obj, msg) => logged.push({ level: 'error', msg: msg ?? '', obj: obj as Record<string, unknown> }),
  child: () => logger,
};

beforeAll(async () => {
  db = await migratedSchema('wreclaim');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, logger });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

const q = (sql: string, v: unknown[] = []) => db.pool.query(sql.replaceAll('$S', `"${db.schema}"`), v);

/** The newest event id so far: a cursor after which only this test's events come. */
async function lastEventId(): Promise<string> {
  return (await q(`SELECT coalesce(max(id), 0)::text AS id FROM $S.job_events`)).rows[0].id as string;
}

/** Enqueues `n` jobs and claims them for a worker that will never renew their leases. */
async function claimForDeadWorker(n: number): Promise<string[]> {
  const handles = await Promise.all(Array.from({ length: n }, () => tq.enqueue(victim, {})));
  const claimed = await tq.backend.dispatchBatch({
    workerId: DEAD_WORKER,
    queues: ['wr'],
    actors: [{ name: 'wr_victim', maxConcurrent: null }],
    limit: n,
    leaseMs: 60_000,
    oversample: 2,
  });
  expect(claimed.map((r) => r.id).sort()).toEqual(handles.map((h) => h.jobId).sort());
  return handles.map((h) => h.jobId);
}

/** Lets the dead worker's leases lapse (database clock) and runs the leader's reclaim sweep. */
async function expireAndReclaim(n: number): Promise<void> {
  await q(
    `UPDATE $S.jobs SET lock_expires_at = clock_timestamp() - interval '1 second' WHERE status = 'running'`,
  );
  expect(await tq.backend.reclaimExpiredLocks(0, 0)).toEqual({ reclaimed: n, retried: 0 });
}

async function reclaim(n: number): Promise<string[]> {
  const ids = await claimForDeadWorker(n);
  await expireAndReclaim(n);
  return ids;
}

/** Connections LISTENing on this schema's wake channel (their last statement is that LISTEN). */
async function listenConnections(): Promise<number> {
  const r = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'taskq-listen%' AND query = $1`,
    [`LISTEN "${wakeChannel(db.schema)}"`],
  );
  return r.rows[0]!.n;
}

function expectInIdOrder(events: EventRow[]): void {
  const ids = events.map((e) => BigInt(e.eventId));
  for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
}

describe('TaskQ.watchReclaims', () => {
  it('releases its LISTEN connection when the consumer breaks out of the loop', async () => {
    const after = await lastEventId();
    await reclaim(2);
    expect(await listenConnections()).toBe(0);
    const seen: EventRow[] = [];
    for await (const e of tq.watchReclaims({ afterId: after, visibilityDelay: 0, pollTimeout: '60s' })) {
      seen.push(e);
      expect(await listenConnections()).toBe(1);
      break;
    }
    expect(seen).toHaveLength(1);
    await waitFor(async () => (await listenConnections()) === 0, 5000, 'the LISTEN connection to close');
  });

  it('releases it too when its signal aborts while it waits', async () => {
    const after = await lastEventId();
    const [first] = await reclaim(1);
    const controller = new AbortController();
    const feed = tq.watchReclaims({
      afterId: after,
      visibilityDelay: 0,
      pollTimeout: '60s',
      signal: controller.signal,
    });
    expect((await feed.next()).value?.jobId).toBe(first);
    // Resuming a generator runs it synchronously up to its next await: here, the wait for a
    // NOTIFY or the 60 s poll timeout, having read everything there is.
    const next = feed.next();
    expect(await listenConnections()).toBe(1);
    controller.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    await waitFor(async () => (await listenConnections()) === 0, 5000, 'the LISTEN connection to close');
  });

  it('catches up through several full pages without waiting for a poll in between', async () => {
    const after = await lastEventId();
    const jobs = await reclaim(7);
    const seen: EventRow[] = [];
    // Pages of 3, 3 and 1: after each full page the next is read at once; a 60 s wait would time out.
    for await (const e of tq.watchReclaims({
      afterId: after,
      limit: 3,
      visibilityDelay: 0,
      pollTimeout: '60s',
    })) {
      seen.push(e);
      if (seen.length === 7) break;
    }
    expectInIdOrder(seen);
    expect(seen.map((e) => e.jobId).sort()).toEqual([...jobs].sort());
    expect(seen.every((e) => e.detail.reason === 'lock_expired' && e.detail.to_state === 'crashed')).toBe(
      true,
    );
    // The same events, in the same order, as one direct read of the feed.
    const direct = await tq.backend.pollReclaimEvents(after, { limit: 100, visibilityDelayMs: 0 });
    expect(seen.map((e) => e.eventId)).toEqual(direct.map((e) => e.eventId));
  });

  it('is woken by the NOTIFY of a reclaim that happens while it waits', async () => {
    const after = await lastEventId();
    const [first] = await reclaim(1);
    // Claimed now, reclaimed later: enqueueing NOTIFYs the wake channel too, and that must happen
    // before the watcher listens, or it would wake the watcher for the wrong reason.
    const [second] = await claimForDeadWorker(1);
    const feed = tq.watchReclaims({ afterId: after, visibilityDelay: 0, pollTimeout: '60s' });
    try {
      expect((await feed.next()).value?.jobId).toBe(first);
      // The watcher has read everything there is and now waits (up to 60 s) for a NOTIFY.
      const next = feed.next();
      await expireAndReclaim(1);
      const woken = await next;
      expect(woken.done).toBe(false);
      expect(woken.value).toMatchObject({ jobId: second, detail: { reason: 'lock_expired' } });
    } finally {
      await feed.return(undefined);
    }
  });
  // An abort that arrives while the risk check or a poll is in flight must not be lost (it once
  // was: the watcher then slept a whole poll timeout). The poll is held mid-flight by a lock on
  // job_events; the test's 4 s timeout is shorter than the 20 s poll timeout.
  it('ends promptly when aborted while a poll is in flight', async () => {
    const after = await lastEventId();
    const controller = new AbortController();
    const blocker = new pg.Client({ connectionString: TEST_DSN });
    await blocker.connect();
    let next: Promise<IteratorResult<EventRow>>;
    try {
      await blocker.query('BEGIN');
      await blocker.query(`LOCK TABLE "${db.schema}".job_event_log IN ACCESS EXCLUSIVE MODE`);
      const feed = tq.watchReclaims({
        afterId: after,
        visibilityDelay: 0,
        pollTimeout: '20s',
        signal: controller.signal,
      });
      next = feed.next();
      await waitFor(
        async () =>
          (
            await db.pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                  WHERE wait_event_type = 'Lock' AND query LIKE '%lock_expired%' AND query LIKE $1`,
              [`%"${db.schema}".job_event_log%`],
            )
          ).rows[0]!.n === 1,
        3000,
        'the poll to wait for the lock',
      );
      controller.abort();
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
    expect(await next).toEqual({ done: true, value: undefined });
  }, 4000);
});

describe('checkReclaimVisibilityDelayRisk', () => {
  const atRisk = () => logged.filter((l) => l.msg === 'watch-reclaims-visibility-delay-at-risk');

  /** A second session with an open transaction; always rolled back and closed. */
  async function withOpenTransaction(fn: (c: pg.Client, pid: number) => Promise<void>): Promise<void> {
    const c = new pg.Client({ connectionString: TEST_DSN, application_name: 'wr-long-writer' });
    await c.connect();
    try {
      await c.query('BEGIN');
      const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await fn(c, pid);
    } finally {
      await c.query('ROLLBACK').catch(() => undefined);
      await c.end();
    }
  }

  it('reports a transaction holding a job_events write open past the margin; watchReclaims logs it', async () => {
    const after = await lastEventId();
    const [jobId] = await reclaim(1);
    await withOpenTransaction(async (c, pid) => {
      // A state change the way TaskQ writes one, its job row and its event row, never committed.
      await c.query(`UPDATE "${db.schema}".jobs SET error_message = 'held open' WHERE id = $1`, [jobId]);
      await c.query(
        `INSERT INTO "${db.schema}".job_events (job_id, kind, detail) VALUES ($1, 'state_change', '{}')`,
        [jobId],
      );
      const mine = async () =>
        (await tq.backend.checkReclaimVisibilityDelayRisk!(100)).filter((w) => w.pid === pid);
      await waitFor(async () => (await mine()).length > 0, 10_000, 'the transaction to outlive the margin');
      const [writer] = await mine();
      expect(writer).toMatchObject({ applicationName: 'wr-long-writer', state: 'idle in transaction' });
      expect(writer!.query).toContain('job_events');
      expect(writer!.openMs).toBeGreaterThanOrEqual(100);

      // The watcher runs the check when it starts, before its first poll.
      logged.length = 0;
      const feed = tq.watchReclaims({ afterId: after, visibilityDelay: '100ms', pollTimeout: '60s' });
      try {
        expect((await feed.next()).value?.jobId).toBe(jobId);
      } finally {
        await feed.return(undefined);
      }
      expect(atRisk()).toHaveLength(1);
      expect(atRisk()[0]).toMatchObject({
        level: 'warn',
        obj: { pid, applicationName: 'wr-long-writer', marginMs: 100 },
      });
    });
  });

  it('reports nothing without a long job_events writer', async () => {
    const after = await lastEventId();
    const [jobId] = await reclaim(1);
    // Margin 0: any open transaction is old enough, so only what it wrote decides.
    expect(await tq.backend.checkReclaimVisibilityDelayRisk!(0)).toEqual([]);
    await withOpenTransaction(async (c, pid) => {
      // Only the jobs row: no event id is taken yet, so nothing can commit behind the feed's
      // cursor, and the diagnostic (which watches job_events write locks) stays quiet.
      await c.query(`UPDATE "${db.schema}".jobs SET error_message = 'held open' WHERE id = $1`, [jobId]);
      expect((await tq.backend.checkReclaimVisibilityDelayRisk!(0)).map((w) => w.pid)).not.toContain(pid);
    });

    logged.length = 0;
    const feed = tq.watchReclaims({ afterId: after, visibilityDelay: 0, pollTimeout: '60s' });
    try {
      expect((await feed.next()).value?.jobId).toBe(jobId);
    } finally {
      await feed.return(undefined);
    }
    expect(atRisk()).toEqual([]);
    expect(logged.filter((l) => l.msg === 'watch-reclaims-risk-check-failed')).toEqual([]);
  });
});
