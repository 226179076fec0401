/**
 * The polling defaults of live streams, against real Postgres with no Redis and no worker (the
 * jobs are changed by raw SQL, which sends no NOTIFY): `JobHandle.progressStream()` polls every
 * 500 ms by default, and `TaskQ.stream()` re-reads the row at least every `pollTimeout` while its
 * LISTEN is live, so a change nobody announced still reaches the consumer.
 *
 * The watch every stream runs on is wrapped (not replaced) to record the cadence it was given:
 * the default is checked as a value, never by timing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { STREAM_POLL_INTERVAL_MS, type JobWatchTiming } from '../../src/progress/job-watch.js';
import type { JobEvent, ProgressEvent } from '../../src/progress/progress-event.js';
import type * as JobWatchModule from '../../src/progress/job-watch.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const watches = vi.hoisted(() => [] as { jobId: string; redis: unknown; timing: JobWatchTiming }[]);
vi.mock('../../src/progress/job-watch.js', async (importOriginal) => {
  const real = await importOriginal<typeof JobWatchModule>();
  return {
    ...real,
    watchJob: (...args: Parameters<typeof real.watchJob>) => {
      const [jobId, sources, timing] = args;
      watches.push({ jobId, redis: sources.redis, timing: { ...timing } });
      return real.watchJob(...args);
    },
  };
});

/** No worker runs this actor: its jobs stay pending unless the test changes them. */
const idle = actor({ name: 'polled', queue: 'nobody_listens' }, async () => undefined);

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('pspoll');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq?.close();
  await db?.drop();
});

/** A progress change written behind TaskQ's back: a plain UPDATE, no pg_notify, no Redis. */
async function writeProgressSilently(jobId: string, seq: number, step: string): Promise<void> {
  await db.pool.query(
    `UPDATE "${db.schema}".jobs SET progress_seq = $2, progress_state = jsonb_build_object('step', $3::text) WHERE id = $1`,
    [jobId, seq, step],
  );
}

/** Connections of this schema's job streams (their last statement is the LISTEN on the progress channel). */
async function listenConnections(): Promise<number> {
  const r = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name LIKE 'taskq-listen%' AND query LIKE $1`,
    [`%taskq_progress_${db.schema}%`],
  );
  return r.rows[0]!.n;
}

describe('JobHandle.progressStream() without Redis', () => {
  it('polls Postgres every 500 ms by default, and so sees changes no NOTIFY announced', async () => {
    expect(STREAM_POLL_INTERVAL_MS).toBe(500);
    expect(tq.redis).toBeNull();
    const h = await tq.enqueue(idle, {});
    const it = h.progressStream();
    const first = it.next();
    try {
      await waitFor(() => watches.some((w) => w.jobId === h.jobId), 10_000, 'the watch to start');
      const watch = watches.find((w) => w.jobId === h.jobId)!;
      expect(watch.redis).toBeNull();
      expect(watch.timing).toMatchObject({ pollIntervalMs: 500, listenCoversProgress: false });

      await writeProgressSilently(h.jobId, 3, 'silent');
      expect((await first).value).toMatchObject({
        kind: 'progress',
        seq: 3,
        step: 'silent',
        terminal: false,
      });
      await tq.cancel(h.jobId);
      const rest: ProgressEvent[] = [];
      for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
      expect(rest).toHaveLength(1);
      expect(rest[0]).toMatchObject({ terminal: true, status: 'cancelled', seq: 3 });
    } finally {
      await it.return!();
    }
  });
});

describe('TaskQ.stream() pollTimeout', () => {
  it('re-reads the row at least every pollTimeout while LISTEN is live, even with no NOTIFY', async () => {
    const h = await tq.enqueue(idle, {});
    const it = tq.stream(h.jobId, { pollTimeout: '200ms' });
    try {
      expect((await it.next()).value).toEqual({
        jobId: h.jobId,
        status: 'pending',
        progressState: {},
        progressSeq: 0,
        terminal: false,
      });
      const watch = watches.find((w) => w.jobId === h.jobId)!;
      expect(watch.timing).toMatchObject({ pollTimeoutMs: 200, listenCoversProgress: true });

      // The next() call subscribes; once LISTEN is live the stream only re-reads on a NOTIFY or
      // when pollTimeout runs out. The silent writes below can only be seen the second way.
      const second = it.next();
      await waitFor(async () => (await listenConnections()) >= 1, 10_000, 'LISTEN');
      await writeProgressSilently(h.jobId, 5, 'first silent write');
      expect((await second).value).toMatchObject({
        status: 'pending',
        progressSeq: 5,
        progressState: { step: 'first silent write' },
        terminal: false,
      } satisfies Partial<JobEvent>);
      await writeProgressSilently(h.jobId, 6, 'second silent write');
      expect((await it.next()).value).toMatchObject({
        progressSeq: 6,
        progressState: { step: 'second silent write' },
        terminal: false,
      });
      await tq.cancel(h.jobId);
      expect((await it.next()).value).toMatchObject({ status: 'cancelled', progressSeq: 6, terminal: true });
      expect(await it.next()).toEqual({ done: true, value: undefined });
    } finally {
      await it.return!();
    }
  });
});
