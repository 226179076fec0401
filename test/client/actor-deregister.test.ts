import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { Backend } from '../../src/backend/backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import {
  ActorDeregistrationError,
  ActorHasActiveJobsError,
  ActorHasEnabledSchedulesError,
  ActorNotFoundError,
  InvalidArgumentError,
} from '../../src/errors/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;
let s: string;
const WORKER = '00000000-0000-7000-8000-00000000d0d0';

beforeAll(async () => {
  db = await migratedSchema('dereg');
  s = `"${db.schema}"`;
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

const register = (backend: Backend, name: string, queue = 'default'): Promise<unknown> =>
  backend.syncActorConfig([{ actor: name, queue, metadata: {} }], { force: false });

/** Everything a deregistration could write, counted, to prove a refusal wrote nothing. */
async function everything(): Promise<Record<string, unknown>> {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM ${s}.actor_config)::int AS configs,
            (SELECT count(*) FROM ${s}.queues)::int AS queues,
            (SELECT count(*) FROM ${s}.job_events)::int AS events,
            (SELECT count(*) FROM ${s}.cron_schedules WHERE enabled)::int AS enabled_schedules,
            (SELECT jsonb_object_agg(status, n) FROM
              (SELECT status::text, count(*)::int AS n FROM ${s}.jobs GROUP BY status) x) AS jobs`,
  );
  return rows[0] as Record<string, unknown>;
}

async function makeRunning(jobId: string): Promise<void> {
  await db.pool.query(
    `UPDATE ${s}.jobs SET status = 'running', locked_by_worker = $1, attempt = 1,
       started_at = clock_timestamp(), lock_expires_at = clock_timestamp() + interval '1 hour'
     WHERE id = $2`,
    [WORKER, jobId],
  );
}

async function makeSucceeded(jobId: string): Promise<void> {
  await db.pool.query(
    `UPDATE ${s}.jobs SET status = 'succeeded', finished_at = clock_timestamp() WHERE id = $1`,
    [jobId],
  );
}

const configRow = async (name: string): Promise<number> =>
  (await db.pool.query(`SELECT 1 FROM ${s}.actor_config WHERE actor = $1`, [name])).rowCount ?? 0;

describe('tq.actors.deregister on Postgres', () => {
  it('refuses an actor without an actor_config row: ActorNotFoundError', async () => {
    const err = await tq.actors.deregister('dr_ghost').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorNotFoundError);
    expect(err).toBeInstanceOf(ActorDeregistrationError);
    expect(err).toMatchObject({ actor: 'dr_ghost', code: 'TASKQ_ACTOR_NOT_FOUND' });
    expect((err as Error).message).toContain('taskq actor-config list');
  });

  it('refuses while jobs are not finished (ActorHasActiveJobsError); with force, running jobs still refuse; nothing written', async () => {
    const a = actor({ name: 'dr_busy' }, async () => undefined);
    await register(tq.backend, a.name);
    await tq.enqueue(a, {});
    await tq.enqueue(a, {});
    await tq.enqueue(a, {}, { delay: '1h' });
    await makeRunning((await tq.enqueue(a, {})).jobId);
    const before = await everything();

    const plain = await tq.actors.deregister(a.name).catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(ActorHasActiveJobsError);
    expect(plain).toMatchObject({
      actor: a.name,
      activeCount: 4,
      statusCounts: { pending: 2, scheduled: 1, running: 1 },
      force: false,
      code: 'TASKQ_ACTOR_HAS_ACTIVE_JOBS',
    });
    expect((plain as Error).message).toContain('force');

    const forced = await tq.actors.deregister(a.name, { force: true }).catch((e: unknown) => e);
    expect(forced).toBeInstanceOf(ActorHasActiveJobsError);
    expect(forced).toMatchObject({ activeCount: 1, force: true });
    expect((forced as Error).message).toContain('force does not cancel running jobs');

    expect(await everything()).toEqual(before);
    expect(await configRow(a.name)).toBe(1);
  });

  it('refuses while cron schedules are enabled (ActorHasEnabledSchedulesError); nothing written', async () => {
    const a = actor({ name: 'dr_cron' }, async () => undefined);
    await register(tq.backend, a.name);
    const one = await tq.createSchedule(a, '0 * * * *', { name: 'hourly' });
    const two = await tq.createSchedule(a, '0 0 * * *', { name: 'daily' });
    const off = await tq.createSchedule(a, '0 0 1 * *', { name: 'monthly' });
    await tq.updateSchedule(off.id, { enabled: false });
    const before = await everything();
    const err = await tq.actors.deregister(a.name).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorHasEnabledSchedulesError);
    expect(err).toBeInstanceOf(ActorDeregistrationError);
    expect((err as ActorHasEnabledSchedulesError).scheduleIds.toSorted()).toEqual(
      [one.id, two.id].toSorted(),
    );
    expect(await everything()).toEqual(before);
  });

  it('with force cancels pending and scheduled jobs as cancelWhere does and disables schedules', async () => {
    const a = actor({ name: 'dr_force', queue: 'dr_force_q' }, async () => undefined);
    await register(tq.backend, a.name, 'dr_force_q');
    const pending = await tq.enqueue(a, {});
    const scheduled = await tq.enqueue(a, {}, { delay: '1h' });
    const done = await tq.enqueue(a, {});
    await makeSucceeded(done.jobId);
    const sched = await tq.createSchedule(a, '*/5 * * * *');

    const r = await tq.actors.deregister(a.name, { force: true });
    expect(r).toEqual({
      actor: a.name,
      queue: 'dr_force_q',
      actorConfigDeleted: true,
      schedulesDisabled: 1,
      jobsCancelled: 2,
      terminalJobsRemaining: 3,
      queuePurged: false,
    });
    expect(await configRow(a.name)).toBe(0);
    const { rows } = await db.pool.query(
      `SELECT j.id::text, j.status::text, j.error_message,
              (SELECT count(*)::int FROM ${s}.job_events e
               WHERE e.job_id = j.id AND e.kind = 'state_change' AND e.detail->>'to_state' = 'cancelled') AS events
       FROM ${s}.jobs j WHERE j.actor = $1 ORDER BY j.id`,
      [a.name],
    );
    const byId = new Map(rows.map((x) => [x.id as string, x]));
    for (const id of [pending.jobId, scheduled.jobId])
      expect(byId.get(id)).toMatchObject({
        status: 'cancelled',
        error_message: 'actor deregistered (force)',
        events: 1,
      });
    expect(byId.get(done.jobId)).toMatchObject({ status: 'succeeded', events: 0 });
    // The done notification went out: a waiter learns the job ended.
    expect(await pending.status()).toBe('cancelled');
    expect((await tq.getSchedule(sched.id))?.record.enabled).toBe(false);
  });

  it('purgeQueue deletes the queue row only when no other actor or unfinished job uses the queue', async () => {
    const solo = actor({ name: 'dr_pq_solo', queue: 'dr_pq_solo' }, async () => undefined);
    const shared1 = actor({ name: 'dr_pq_a', queue: 'dr_pq_shared' }, async () => undefined);
    const shared2 = actor({ name: 'dr_pq_b', queue: 'dr_pq_shared' }, async () => undefined);
    const busy = actor({ name: 'dr_pq_busy', queue: 'dr_pq_busy' }, async () => undefined);
    const stranger = actor({ name: 'dr_pq_stranger', queue: 'dr_pq_busy' }, async () => undefined);
    await register(tq.backend, solo.name, solo.queue);
    await register(tq.backend, shared1.name, shared1.queue);
    await register(tq.backend, shared2.name, shared2.queue);
    await register(tq.backend, busy.name, busy.queue);
    for (const q of ['dr_pq_solo', 'dr_pq_shared', 'dr_pq_busy'])
      await tq.backend.setQueueMode(q, 'round_robin');
    // A job of an actor without a config row still uses the queue.
    await tq.enqueue(stranger, {});
    const queueRow = async (q: string): Promise<number> =>
      (await db.pool.query(`SELECT 1 FROM ${s}.queues WHERE name = $1`, [q])).rowCount ?? 0;

    expect((await tq.actors.deregister(solo.name, { purgeQueue: true })).queuePurged).toBe(true);
    expect(await queueRow('dr_pq_solo')).toBe(0);
    expect((await tq.actors.deregister(shared1.name, { purgeQueue: true })).queuePurged).toBe(false);
    expect(await queueRow('dr_pq_shared')).toBe(1);
    // The last actor of the queue goes: now the row does too.
    expect((await tq.actors.deregister(shared2.name, { purgeQueue: true })).queuePurged).toBe(true);
    expect(await queueRow('dr_pq_shared')).toBe(0);
    expect((await tq.actors.deregister(busy.name, { purgeQueue: true })).queuePurged).toBe(false);
    expect(await queueRow('dr_pq_busy')).toBe(1);
  });

  it.each([
    ['', undefined, 'actor'],
    [42, undefined, 'actor'],
    ['dr_bad', { force: 'yes' }, 'force'],
    ['dr_bad', { purgeQueue: 1 }, 'purgeQueue'],
    ['dr_bad', { forse: true }, 'options.forse'],
    ['dr_bad', 'force', 'options'],
  ])('rejects bad input %j %j naming %s, writing nothing', async (name, options, field) => {
    await register(tq.backend, 'dr_bad');
    const before = await everything();
    const err = await tq.actors.deregister(name as string, options as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe(field);
    expect(await everything()).toEqual(before);
  });

  it('an enqueue in flight when the deregistration starts is seen: the deregistration waits for its commit', async () => {
    const a = actor({ name: 'dr_inflight' }, async () => undefined);
    await register(tq.backend, a.name);
    const conn = await db.pool.connect();
    try {
      await conn.query('BEGIN');
      const job = await tq.enqueue(a, {}, { connection: conn });
      const deregistering = tq.actors.deregister(a.name, { force: true });
      await waitFor(
        async () =>
          ((
            await db.pool.query(
              `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND mode = 'ExclusiveLock'`,
            )
          ).rowCount ?? 0) > 0,
        10_000,
        'the deregistration to wait for the enqueue lock',
      );
      await conn.query('COMMIT');
      const r = await deregistering;
      expect(r.jobsCancelled).toBe(1);
      expect(await job.status()).toBe('cancelled');
    } finally {
      conn.release();
    }
  });

  it('an enqueue that arrives during a deregistration waits for it, then lands after it', async () => {
    const a = actor({ name: 'dr_after' }, async () => undefined);
    await register(tq.backend, a.name);
    const blocker = await db.pool.connect();
    try {
      // Hold the config row: the deregistration takes the enqueue lock, then waits here.
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM ${s}.actor_config WHERE actor = $1 FOR UPDATE`, [a.name]);
      const deregistering = tq.actors.deregister(a.name);
      const waiting = async (mode: string): Promise<boolean> =>
        ((
          await db.pool.query(
            `SELECT 1 FROM pg_locks l JOIN pg_stat_activity p ON p.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.mode = $1 AND l.granted = $2`,
            [mode, mode === 'ExclusiveLock'],
          )
        ).rowCount ?? 0) > 0;
      await waitFor(() => waiting('ExclusiveLock'), 10_000, 'the deregistration to hold the enqueue lock');
      const enqueueing = tq.enqueue(a, {});
      await waitFor(() => waiting('ShareLock'), 10_000, 'the enqueue to wait for the enqueue lock');
      await blocker.query('COMMIT');
      const r = await deregistering;
      expect(r.jobsCancelled).toBe(0);
      const job = await enqueueing;
      // The job is the actor's first after the deregistration: pending, with no config row.
      expect(await job.status()).toBe('pending');
      expect(await configRow(a.name)).toBe(0);
    } finally {
      blocker.release();
    }
  });

  it('50 enqueues racing a forced deregistration: every job committed before it is cancelled, every survivor came after', async () => {
    const a = actor({ name: 'dr_race' }, async () => undefined);
    await register(tq.backend, a.name);
    for (let i = 0; i < 10; i++) await tq.enqueue(a, {});
    const racers = Array.from({ length: 50 }, (_, i) =>
      i % 5 === 0 ? tq.enqueueBatch([{ actor: a, payload: { i } }]) : tq.enqueue(a, { i }),
    );
    const r = await tq.actors.deregister(a.name, { force: true });
    await Promise.all(racers);
    const { rows } = await db.pool.query<{
      status: string;
      n: number;
      first_created: Date;
      last_finished: Date;
    }>(
      `SELECT status::text, count(*)::int AS n, min(created_at) AS first_created, max(finished_at) AS last_finished
       FROM ${s}.jobs WHERE actor = $1 GROUP BY status`,
      [a.name],
    );
    const by = new Map(rows.map((x) => [x.status, x]));
    const cancelled = by.get('cancelled');
    const pending = by.get('pending');
    expect((cancelled?.n ?? 0) + (pending?.n ?? 0)).toBe(60);
    expect(cancelled?.n).toBe(r.jobsCancelled);
    expect(r.jobsCancelled).toBeGreaterThanOrEqual(10);
    // A survivor took the enqueue lock after the deregistration committed, so its creation time (read
    // after the lock) is later than every cancellation the deregistration wrote.
    if (pending)
      expect(pending.first_created.getTime()).toBeGreaterThanOrEqual(cancelled!.last_finished.getTime());
    console.log(
      `race: ${r.jobsCancelled} cancelled by the deregistration, ${pending?.n ?? 0} enqueued after it`,
    );
  });

  it('a worker that re-creates a deregistered actor row logs actor-reregistered; a new actor does not', async () => {
    const again = actor({ name: 'dr_again', queue: 'dr_w' }, async () => undefined);
    const fresh = actor({ name: 'dr_fresh', queue: 'dr_w' }, async () => undefined);
    await register(tq.backend, again.name, 'dr_w');
    await makeSucceeded((await tq.enqueue(again, {})).jobId);
    await tq.actors.deregister(again.name);
    const lines: { msg: string; fields: Record<string, unknown> }[] = [];
    const keep = (obj: object, msg?: string): void => {
      lines.push({ msg: msg ?? '', fields: obj as Record<string, unknown> });
    };
    const logger: Logger = { debug() {}, info: keep, warn: keep, error: keep, child: () => logger };
    const worker = new Worker({
      actors: [again, fresh],
      settings: {
        pgDsn: TEST_DSN,
        schema: db.schema,
        queues: ['dr_w'],
        heartbeatInterval: '1s',
        lockLease: '10s',
        cancellationGracePeriod: '1s',
        cleanupGracePeriod: '1s',
        terminationGracePeriod: '10s',
        watchdogEnabled: false,
      },
      logger,
    });
    await worker.start();
    await worker.stop();
    const warned = lines.filter((l) => l.msg === 'actor-reregistered');
    expect(warned.map((l) => l.fields.actor)).toEqual([again.name]);
    expect(await configRow(again.name)).toBe(1);
  });
});

describe('deregisterActor in memory', () => {
  it('applies the same rules', async () => {
    const backend = new InMemoryBackend();
    const mem = new TaskQ(backend);
    try {
      const a = actor({ name: 'mdr', queue: 'mdr_q' }, async () => undefined);
      await expect(mem.actors.deregister('mdr')).rejects.toBeInstanceOf(ActorNotFoundError);
      await register(backend, a.name, 'mdr_q');
      await backend.setQueueMode('mdr_q', 'round_robin');
      const pending = await mem.enqueue(a, {});
      await mem.enqueue(a, {}, { delay: '1h' });
      const sched = await mem.createSchedule(a, '0 * * * *');
      await expect(mem.actors.deregister(a.name)).rejects.toMatchObject({
        activeCount: 2,
        statusCounts: { pending: 1, scheduled: 1 },
      });
      await mem.cancel(pending.jobId);
      await expect(mem.actors.deregister(a.name, { force: 'no' as never })).rejects.toMatchObject({
        field: 'force',
      });
      const r = await mem.actors.deregister(a.name, { force: true, purgeQueue: true });
      expect(r).toEqual({
        actor: a.name,
        queue: 'mdr_q',
        actorConfigDeleted: true,
        schedulesDisabled: 1,
        jobsCancelled: 1,
        terminalJobsRemaining: 2,
        queuePurged: true,
      });
      expect((await mem.getSchedule(sched.id))?.record.enabled).toBe(false);
      expect(await backend.listQueues()).toEqual([]);
      expect(await mem.actors.get(a.name)).toBeNull();
      let told: readonly string[] = [];
      await backend.syncActorConfig([{ actor: a.name, queue: 'mdr_q', metadata: {} }], {
        force: false,
        reregistered: (actors) => (told = actors),
      });
      expect(told).toEqual([a.name]);
    } finally {
      await mem.close();
    }
  });
});
