/**
 * A 24-hour production day at speed: a daily traffic curve compressed into seconds, thousands of
 * jobs with retries, snoozes, deadlines and cancels, and worker processes SIGKILLed and replaced
 * along the way. At the end every job is in exactly one terminal state and its history
 * (job_attempts, job_events) agrees with it. It runs on a cluster of its own (pg-cluster.ts), so its
 * load and its killed sessions stay off the machine's server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { batchItem } from '../../src/client/batch-items.js';
import { daywork, deadlined } from '../fixtures/day-actors.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let cluster: PgCluster;
let db: TestSchema;
let tq: TaskQ;

const env = (): Record<string, string> => ({
  TASKQ_PG_DSN: cluster.dsn,
  TQ_FIXTURE_ACTORS: 'day',
  TASKQ_QUEUES: 'day',
  TASKQ_MAX_CONCURRENCY: '16',
  TASKQ_HEARTBEAT_INTERVAL: '0.5',
  TASKQ_LOCK_LEASE: '2',
  TASKQ_SWEEP_INTERVAL: '1',
  TASKQ_NOTIFY_POLL_INTERVAL: '1',
  TASKQ_CANCELLATION_GRACE_PERIOD: '0.5',
  TASKQ_CLEANUP_GRACE_PERIOD: '0.5',
  TASKQ_TERMINATION_GRACE_PERIOD: '10',
  TASKQ_WATCHDOG_ENABLED: 'false',
});

beforeAll(async () => {
  cluster = await startPgCluster();
  db = await migratedSchema('day', cluster.dsn);
  tq = await TaskQ.open({ dsn: cluster.dsn, schema: db.schema, maxPoolSize: 8 });
});
afterAll(async () => {
  await tq?.close();
  await db?.drop();
  await cluster?.destroy();
});

/** Jobs of the day waiting to be claimed. */
async function waiting(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE queue = 'day' AND status = 'pending'`,
  );
  return rows[0]!.n;
}

/** Jobs per simulated hour: quiet at night, peaking in the afternoon. */
function traffic(hour: number): number {
  return Math.round(60 + 150 * Math.max(0, Math.sin(((hour - 6) / 24) * 2 * Math.PI)));
}

function behaviour(i: number): {
  kind: 'ok' | 'fail-once' | 'fail-always' | 'snooze-once' | 'slow';
  ms: number;
} {
  const r = i % 20;
  if (r < 12) return { kind: 'ok', ms: i % 7 };
  if (r < 15) return { kind: 'fail-once', ms: 3 };
  if (r < 16) return { kind: 'fail-always', ms: 2 };
  if (r < 18) return { kind: 'snooze-once', ms: 2 };
  return { kind: 'slow', ms: 400 };
}

interface Event {
  job_id: string;
  kind: string;
  detail: { from_state?: string; to_state?: string; reason?: string; handler_started?: boolean };
}

describe('a production day at speed', () => {
  it('ends with every job in one terminal state and a history that agrees', async () => {
    const fleet: WorkerProcess[] = [];
    const spawn = (): WorkerProcess => {
      const p = startWorkerProcess(db.schema, env());
      fleet.push(p);
      return p;
    };
    await Promise.all([spawn(), spawn(), spawn()].map((p) => p.ready));
    const enqueued: string[] = [];
    const cancelled = new Set<string>();
    let kills = 0;
    let n = 0;
    const t0 = Date.now();
    for (let hour = 0; hour < 24; hour++) {
      const count = traffic(hour);
      const items = Array.from({ length: count }, () => {
        const i = n++;
        return i % 97 === 0
          ? batchItem(deadlined, { kind: 'deadline', ms: 1 })
          : batchItem(daywork, behaviour(i));
      });
      for (let i = 0; i < items.length; i += 50) {
        const batch = await tq.enqueueBatch(items.slice(i, i + 50));
        enqueued.push(...batch.jobHandles.map((h) => h.jobId));
      }
      // Operators cancel a few jobs, whatever state they are in.
      for (const id of enqueued.slice(-count).filter((_, k) => k % 53 === 0)) {
        await tq.cancel(id, 'operator');
        cancelled.add(id);
      }
      // Every four hours a worker dies without warning and a new one takes its place.
      if (hour % 4 === 3) {
        const alive = fleet.filter((p) => p.proc.exitCode === null && p.proc.signalCode === null);
        const victim = alive[hour % alive.length]!;
        victim.proc.kill('SIGKILL');
        kills++;
        await spawn().ready;
      }
      // The next hour starts once the fleet has picked up most of this one: traffic follows the
      // fleet's pace, not the wall clock, so a slow machine lives the same day, only longer.
      await waitFor(
        async () => (await waiting()) <= count / 4,
        60_000,
        `the fleet to catch up with hour ${hour}`,
      );
    }
    console.log(
      `day simulated in ${Date.now() - t0} ms: ${enqueued.length} jobs, ${kills} workers killed, ${cancelled.size} cancels`,
    );

    await waitFor(async () => (await tq.countActiveJobs(['day'])) === 0, 120_000, 'every job to finish');
    const alive = fleet.filter((p) => p.proc.exitCode === null && p.proc.signalCode === null);
    const exits = await Promise.all(alive.map((p) => p.stop()));
    for (const e of exits) expect(e.code).toBe(0);

    // --- the tally -------------------------------------------------------------------------------
    const S = `"${db.schema}"`;
    const jobs = (
      await db.pool.query<{
        id: string;
        status: string;
        attempt: number;
        actor: string;
        error_class: string | null;
        payload: { kind: string };
      }>(`SELECT id, status::text, attempt, actor, error_class, payload FROM ${S}.jobs`)
    ).rows;
    expect(jobs).toHaveLength(enqueued.length);
    expect(new Set(jobs.map((j) => j.id))).toEqual(new Set(enqueued));
    const byStatus: Record<string, number> = {};
    for (const j of jobs) byStatus[j.status] = (byStatus[j.status] ?? 0) + 1;
    console.log(`final tally: ${JSON.stringify(byStatus)}`);
    expect(
      Object.keys(byStatus).every((s) =>
        ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'].includes(s),
      ),
    ).toBe(true);
    expect(Object.values(byStatus).reduce((a, b) => a + b, 0)).toBe(enqueued.length);

    const attempts = (
      await db.pool.query<{ job_id: string; outcome: string }>(
        `SELECT job_id, outcome FROM ${S}.job_attempts ORDER BY id`,
      )
    ).rows;
    const events = (
      await db.pool.query<Event>(`SELECT job_id, kind, detail FROM ${S}.job_events ORDER BY id`)
    ).rows;
    const attemptsOf = new Map<string, string[]>();
    for (const a of attempts) attemptsOf.set(a.job_id, [...(attemptsOf.get(a.job_id) ?? []), a.outcome]);
    const eventsOf = new Map<string, Event[]>();
    for (const e of events) eventsOf.set(e.job_id, [...(eventsOf.get(e.job_id) ?? []), e]);

    const problems: string[] = [];
    for (const j of jobs) {
      const outs = attemptsOf.get(j.id) ?? [];
      const evs = (eventsOf.get(j.id) ?? []).filter((e) => e.kind === 'state_change');
      const successes = outs.filter((o) => o === 'succeeded').length;
      if (successes > 1) problems.push(`${j.id}: ${successes} successful attempts`);
      if (j.status === 'succeeded' && outs.at(-1) !== 'succeeded')
        problems.push(`${j.id}: succeeded but last attempt ${outs.at(-1)}`);
      if (j.status === 'crashed' && outs.at(-1) !== 'crashed')
        problems.push(`${j.id}: crashed but last attempt ${outs.at(-1)}`);
      if (j.status !== 'succeeded' && successes > 0)
        problems.push(`${j.id}: ${j.status} after a successful attempt`);
      // The events form one unbroken chain ending in the job's status.
      for (let k = 1; k < evs.length; k++) {
        if (evs[k]!.detail.from_state !== evs[k - 1]!.detail.to_state) {
          problems.push(
            `${j.id}: event ${k} goes from ${evs[k]!.detail.from_state} but the previous ended in ${evs[k - 1]!.detail.to_state}`,
          );
        }
      }
      if (evs.length > 0 && !['pending', 'scheduled'].includes(evs[0]!.detail.from_state ?? ''))
        problems.push(`${j.id}: first event from ${evs[0]!.detail.from_state}`);
      if ((evs.at(-1)?.detail.to_state ?? 'pending') !== j.status)
        problems.push(`${j.id}: last event to ${evs.at(-1)?.detail.to_state}, status ${j.status}`);
      // Attempts: each dispatch ends in an attempt row or a drain (at shutdown, or a reclaim of a job
      // whose handler never started); the counter counts what consumed budget.
      const dispatched = evs.filter((e) => e.detail.reason === 'dispatched').length;
      const drained = evs.filter(
        (e) =>
          e.detail.reason === 'drained' ||
          (e.detail.reason === 'lock_expired' && e.detail.handler_started === false),
      ).length;
      if (dispatched !== outs.length + drained)
        problems.push(`${j.id}: ${dispatched} dispatches but ${outs.length} attempts + ${drained} drains`);
      const givenBack = outs.filter((o) => o === 'snoozed' || o === 'interrupted').length;
      if (j.attempt !== dispatched - givenBack - drained)
        problems.push(
          `${j.id}: attempt ${j.attempt}, expected ${dispatched - givenBack - drained} ` +
            `(status ${j.status}; attempts ${outs.join(',')}; events ${evs.map((e) => `${e.detail.from_state}>${e.detail.to_state}:${e.detail.reason}`).join(' ')})`,
        );
      // Each behaviour ends where it should, unless a cancel or a crash intervened.
      if (!cancelled.has(j.id) && j.status !== 'crashed') {
        const expected =
          j.actor === 'deadlined' ? 'failed' : j.payload.kind === 'fail-always' ? 'failed' : 'succeeded';
        if (j.status !== expected)
          problems.push(`${j.id} (${j.payload.kind}): ${j.status}, expected ${expected}`);
        if (j.actor === 'deadlined' && j.error_class !== 'DeadlineExceeded')
          problems.push(`${j.id}: deadline job ended ${j.error_class}`);
      }
    }
    expect(problems.slice(0, 20)).toEqual([]);
    expect(byStatus.succeeded).toBeGreaterThan(enqueued.length * 0.6);
  }, 240_000);
});
