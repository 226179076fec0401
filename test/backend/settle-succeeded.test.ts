/**
 * The two outcome statements behind `settle` (src/backend/postgres/pg-settle.ts): a batch of plain
 * successes (no progress snapshot, no heartbeat details) goes through `settleSucceeded`, everything
 * else through `settle`. For the items both can write, both must write the same rows.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import {
  allPlainSuccesses,
  settleParams,
  settleResults,
  settleSucceededParams,
  type SettleRow,
} from '../../src/backend/postgres/pg-settle.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import { TaskQ } from '../../src/client/taskq.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const W1 = '0192f1a0-0000-7000-8000-0000000000a1';
const W2 = '0192f1a0-0000-7000-8000-0000000000a2';
const job = actor({ name: 'job', queue: 'q' }, async () => undefined);

let db: TestSchema;
let backend: PostgresBackend;
let client: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('settle_ok');
  backend = new PostgresBackend(db.driver, { schema: db.schema });
  client = new TaskQ(backend, { capacityCacheTtl: 0 });
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query(`TRUNCATE "${db.schema}".jobs, "${db.schema}".actor_config`);
});

const started = new Date('2026-01-02T03:04:05.678Z');

function success(jobId: string, workerId: string, result: string | null, ttlMs: number | null): Settlement {
  return {
    kind: 'succeeded',
    jobId,
    workerId,
    handlerStartedAt: started,
    durationMs: 2.5,
    resultJson: result,
    resultSizeBytes: result === null ? null : result.length,
    fallbackResultTtlMs: ttlMs,
  };
}

/** Claims `n` jobs for `workerId`. */
async function claim(n: number, workerId: string): Promise<string[]> {
  const rows = await backend.dispatchBatch({
    workerId,
    queues: ['q'],
    actors: [{ name: 'job', maxConcurrent: null }],
    limit: n,
    leaseMs: 60_000,
    oversample: 2,
  });
  return rows.map((r) => r.id);
}

/** What a written job, its attempt rows and its events say, without ids and clock readings. */
async function written(id: string) {
  const { rows: jobs } = await db.pool.query(
    `SELECT status, attempt, locked_by_worker, lock_expires_at, error_class, error_message, error_traceback,
            result, result_size_bytes, cancel_phase, progress_seq, progress_state, heartbeat_details,
            finished_at IS NOT NULL AS finished,
            round(extract(epoch FROM result_expires_at - finished_at)) AS ttl_s
     FROM "${db.schema}".jobs WHERE id = $1`,
    [id],
  );
  const { rows: attempts } = await db.pool.query(
    `SELECT attempt, worker_id, started_at, duration_ms, outcome, error_class, error_message, error_traceback
     FROM "${db.schema}".job_attempts WHERE job_id = $1 ORDER BY id`,
    [id],
  );
  const { rows: events } = await db.pool.query(
    `SELECT kind, detail FROM "${db.schema}".job_events WHERE job_id = $1 ORDER BY id`,
    [id],
  );
  return { job: jobs[0], attempts, events };
}

describe('settleSucceeded', () => {
  it('is used only for batches of successes without progress or heartbeat details', () => {
    const ok = success('0192f1a0-0000-7000-8000-000000000001', W1, null, null);
    expect(allPlainSuccesses([ok, { ...ok, progress: null, heartbeatDetailsJson: null }])).toBe(true);
    expect(allPlainSuccesses([ok, { ...ok, progress: { seq: 1, state: {} } }])).toBe(false);
    expect(allPlainSuccesses([ok, { ...ok, heartbeatDetailsJson: '{"at":1}' }])).toBe(false);
    expect(
      allPlainSuccesses([
        ok,
        {
          ...ok,
          kind: 'failed',
          retryDelayMs: null,
          error: { errorClass: 'E', message: null, traceback: null },
        },
      ]),
    ).toBe(false);
  });

  it('writes the rows settle writes: jobs, attempts, events (first attempts, retries, two workers, results, TTLs)', async () => {
    // Two identical sets of jobs, one written by each statement: [first attempt by W1, first
    // attempt by W2, second attempt by W1 (after a retry)].
    const enqueue = async (tag: string) => (await client.enqueue(job, { tag })).jobId;
    const a = [await enqueue('a0'), await enqueue('a1')];
    const c = [await enqueue('c0'), await enqueue('c1')];
    expect((await claim(4, W1)).sort()).toEqual([...a, ...c].sort());
    await backend.settle(
      c.map((id) => ({
        kind: 'failed' as const,
        jobId: id,
        workerId: W1,
        handlerStartedAt: null,
        durationMs: 1,
        retryDelayMs: 0,
        error: { errorClass: 'Boom', message: 'boom', traceback: null },
      })),
    );
    expect((await claim(2, W1)).sort()).toEqual([...c].sort());
    const b = [await enqueue('b0'), await enqueue('b1')];
    expect(await claim(2, W2)).toEqual(b);
    const sets = [0, 1].map((s) => [a[s]!, b[s]!, c[s]!]);

    const items = (set: string[]): Settlement[] => [
      success(set[0]!, W1, '{"ok":1}', 3_600_000),
      success(set[1]!, W2, null, null),
      success(set[2]!, W1, '[1,2]', 60_000),
    ];
    const lean = items(sets[0]!);
    const full = items(sets[1]!);
    const { rows: leanRows } = await db.driver.query<SettleRow>(
      backend.statement('settleSucceeded'),
      settleSucceededParams(lean),
    );
    const { rows: fullRows } = await db.driver.query<SettleRow>(
      backend.statement('settle'),
      settleParams(full),
    );
    expect(settleResults(lean, leanRows).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(settleResults(full, fullRows).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    // Worker ids differ per item, so both statements build each event's detail row by row; the
    // worker's own batches (one worker) take the shared detail, covered by the settle contract.
    for (let i = 0; i < 3; i++) {
      const a = await written(sets[0]![i]!);
      const b = await written(sets[1]![i]!);
      expect(a).toEqual(b);
      expect(a.job.status).toBe('succeeded');
      expect(a.events.at(-1)!.detail).toMatchObject({ to_state: 'succeeded', attempt: i === 2 ? 2 : 1 });
    }
  });

  it('writes the same first-attempt rows as settle for a one-worker batch (the shared event detail)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await client.enqueue(job, { i })).jobId);
    expect(await claim(4, W1)).toEqual(ids);
    const lean = [success(ids[0]!, W1, null, null), success(ids[1]!, W1, null, null)];
    const full = [success(ids[2]!, W1, null, null), success(ids[3]!, W1, null, null)];
    await db.driver.query(backend.statement('settleSucceeded'), settleSucceededParams(lean));
    await db.driver.query(backend.statement('settle'), settleParams(full));
    expect(await written(ids[0]!)).toEqual(await written(ids[2]!));
    expect(await written(ids[1]!)).toEqual(await written(ids[3]!));
  });

  it('stores each handler start to the millisecond, shared by the batch or not, through both statements', async () => {
    // Sent as epoch milliseconds (a number per item, or one for the batch when all agree).
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await client.enqueue(job, { i })).jobId);
    expect(await claim(8, W1)).toEqual(ids);
    const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 23, 59, 59) + ms);
    const starts = [at(1), at(999), at(1), at(999)];
    const withStart = (id: string, d: Date): Settlement => ({
      ...success(id, W1, null, null),
      handlerStartedAt: d,
    });
    await db.driver.query(
      backend.statement('settleSucceeded'),
      settleSucceededParams(ids.slice(0, 4).map((id, i) => withStart(id, starts[i]!))),
    );
    await db.driver.query(
      backend.statement('settle'),
      settleParams(ids.slice(4, 8).map((id, i) => withStart(id, starts[i]!))),
    );
    const shared = [await client.enqueue(job, {}), await client.enqueue(job, {})].map((h) => h.jobId);
    await claim(2, W1);
    await db.driver.query(
      backend.statement('settleSucceeded'),
      settleSucceededParams([withStart(shared[0]!, at(123))]),
    );
    await db.driver.query(backend.statement('settle'), settleParams([withStart(shared[1]!, at(123))]));
    const startOf = async (id: string) =>
      ((await written(id)).attempts[0] as { started_at: Date }).started_at;
    for (let i = 0; i < 8; i++)
      expect((await startOf(ids[i]!)).toISOString()).toBe(starts[i % 4]!.toISOString());
    for (const id of shared) expect((await startOf(id)).toISOString()).toBe(at(123).toISOString());
  });

  it('takes a stored actor_config.result_ttl over the literal, as settle does', async () => {
    await db.pool.query(
      `INSERT INTO "${db.schema}".actor_config (actor, queue, result_ttl) VALUES ('job', 'q', interval '90 seconds')`,
    );
    const { jobId } = await client.enqueue(job, {});
    await claim(1, W1);
    const [res] = await backend.settle([success(jobId, W1, '1', 3_600_000)]);
    expect(res).toEqual({ jobId, status: 'succeeded', errorClass: null });
    expect((await written(jobId)).job.ttl_s).toBe('90');
  });

  // Migration 0007: settleSucceeded stores no history rows; the job row implies them.
  it('keeps the history in the job row: the read APIs return what settle stores, with ids in order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await client.enqueue(job, { i })).jobId);
    expect(await claim(2, W1)).toEqual(ids);
    const { rows: before } = await db.pool.query<{ a: string; e: string }>(
      `SELECT (SELECT count(*) FROM "${db.schema}".job_attempt_log)::text AS a,
              (SELECT count(*) FROM "${db.schema}".job_event_log)::text AS e`,
    );
    await db.driver.query(
      backend.statement('settleSucceeded'),
      settleSucceededParams([success(ids[0]!, W1, null, null)]),
    );
    await db.driver.query(backend.statement('settle'), settleParams([success(ids[1]!, W1, null, null)]));
    const { rows: after } = await db.pool.query<{ a: string; e: string }>(
      `SELECT (SELECT count(*) FROM "${db.schema}".job_attempt_log)::text AS a,
              (SELECT count(*) FROM "${db.schema}".job_event_log)::text AS e`,
    );
    // settle stored one attempt and one event; settleSucceeded none.
    expect([Number(after[0]!.a) - Number(before[0]!.a), Number(after[0]!.e) - Number(before[0]!.e)]).toEqual([
      1, 1,
    ]);

    const strip = <T extends { jobId: string }>(r: T) => ({ ...r, jobId: 'x' });
    const [implied, stored] = await Promise.all(ids.map((id) => backend.getAttempts(id)));
    expect(implied!.map((a) => ({ ...strip(a), finishedAt: 't' }))).toEqual(
      stored!.map((a) => ({ ...strip(a), finishedAt: 't' })),
    );
    expect(implied![0]).toMatchObject({ attempt: 1, workerId: W1, outcome: 'succeeded', durationMs: 2.5 });
    expect(implied![0]!.startedAt!.toISOString()).toBe(started.toISOString());

    const [impliedEvents, storedEvents] = await Promise.all(ids.map((id) => backend.getEvents(id)));
    const shape = (e: { kind: string; detail: Record<string, unknown> }) => ({
      kind: e.kind,
      detail: e.detail,
    });
    expect(impliedEvents!.map(shape)).toEqual(storedEvents!.map(shape));
    expect(impliedEvents!.map((e) => e.detail.to_state)).toEqual(['running', 'succeeded']);
    // The implied event's id comes from the events' own sequence: unique, after the job's stored
    // dispatch event, and before the event settle stored afterwards.
    const n = (e: { eventId: string }) => BigInt(e.eventId);
    expect(n(impliedEvents![1]!)).toBeGreaterThan(n(impliedEvents![0]!));
    expect(n(storedEvents![1]!)).toBeGreaterThan(n(impliedEvents![1]!));
    const { rows: dup } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT id FROM "${db.schema}".job_events GROUP BY id HAVING count(*) > 1) d`,
    );
    expect(dup[0]!.n).toBe(0);
    const { rows: ordered } = await db.pool.query<{ job_id: string }>(
      `SELECT job_id FROM "${db.schema}".job_attempts ORDER BY id`,
    );
    expect(ordered.map((r) => r.job_id)).toEqual(ids);
  });

  it('archives an implied attempt like a stored one, with its id', async () => {
    const { jobId } = await client.enqueue(job, {});
    await claim(1, W1);
    await backend.settle([success(jobId, W1, null, null)]);
    const [attempt] = await backend.getAttempts(jobId);
    const { rows } = await db.pool.query<{ id: string }>(
      `SELECT success_attempt_id::text AS id FROM "${db.schema}".jobs WHERE id = $1`,
      [jobId],
    );
    expect(rows[0]!.id).not.toBeNull();
    const moved = await backend.pruneJobs(
      { succeededMs: 0, failedMs: 0, cancelledMs: 0, abandonedMs: 0, archiveMs: 60_000 },
      100,
    );
    expect(moved).toEqual({ archived: 1, attempts: 1 });
    const archived = await backend.getArchivedJob(jobId);
    expect(archived!.attempts).toEqual([attempt]);
    const { rows: archivedIds } = await db.pool.query<{ id: string }>(
      `SELECT id::text FROM "${db.schema}".job_attempts_archive WHERE job_id = $1`,
      [jobId],
    );
    expect(archivedIds.map((r) => r.id)).toEqual([rows[0]!.id]);
    expect(await backend.getAttempts(jobId)).toEqual([]);
    expect(await backend.getEvents(jobId)).toEqual([]);
  });

  it('takes history written through the old table names (the views accept inserts)', async () => {
    const { jobId } = await client.enqueue(job, {});
    await db.pool.query(
      `INSERT INTO "${db.schema}".job_attempts (job_id, attempt, outcome) VALUES ($1, 1, 'failed')`,
      [jobId],
    );
    const { rows } = await db.pool.query<{ id: string }>(
      `INSERT INTO "${db.schema}".job_events (job_id, kind) VALUES ($1, 'state_change') RETURNING id::text`,
      [jobId],
    );
    expect(rows[0]!.id).toMatch(/^\d+$/);
    expect((await backend.getAttempts(jobId)).map((a) => a.outcome)).toEqual(['failed']);
    expect((await backend.getEvents(jobId)).map((e) => e.eventId)).toEqual([rows[0]!.id]);
  });
});
