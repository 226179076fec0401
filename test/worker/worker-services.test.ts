/**
 * Worker services against real Postgres, each case with its own in-process worker and queue:
 * polling without NOTIFY, the maxConcurrency bound, the JobContext, the settings' default
 * startToClose, strict FIFO order, and the heartbeat stopping the worker after repeated failures.
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor, type AnyActor } from '../../src/core/actor.js';
import type { Backend } from '../../src/backend/backend.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { JobContext } from '../../src/core/context.js';
import { JobFailed } from '../../src/errors/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { silentLogger } from '../../src/obs/logger.js';
import { StartToCloseTimeout } from '../../src/retry/control-flow.js';
import type { WorkerSettingsInput } from '../../src/settings/load-worker-settings.js';
import { EXIT_CODES } from '../../src/worker/run-worker.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { flushPromises, waitFor } from '../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('wsvc');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

/** A worker with test-friendly graces; `settings` override. Stop it in `finally`. */
function startWorker(
  actors: AnyActor[],
  settings: WorkerSettingsInput,
  extra: { backend?: Backend; logger?: Logger } = {},
): Promise<Worker> {
  return startTestWorker(actors, db.schema, settings, extra);
}

const statuses = async (queue: string): Promise<Record<string, number>> => {
  const res = await db.pool.query<{ status: string; n: number }>(
    `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs WHERE queue = $1 GROUP BY status`,
    [queue],
  );
  return Object.fromEntries(res.rows.map((r) => [r.status, r.n]));
};
const allSucceeded = (queue: string, n: number) => async (): Promise<boolean> =>
  (await statuses(queue)).succeeded === n;

describe('producer', () => {
  it('runs jobs by polling when NOTIFY is disabled', async () => {
    const ran: number[] = [];
    const polled = actor({ name: 'polled', queue: 'svc_poll', payload: z.object({ n: z.number() }) }, (p) => {
      ran.push(p.n);
    });
    const worker = await startWorker([polled], {
      queues: ['svc_poll'],
      notifyEnabled: false,
      pollInterval: '50ms',
    });
    try {
      // No LISTEN connection: the only way to learn about these jobs is the poll.
      expect(worker.notifyListener).toBeNull();
      for (let n = 0; n < 5; n++) await tq.enqueue(polled, { n });
      await waitFor(allSucceeded('svc_poll', 5), 15_000, 'the polled jobs to succeed');
      expect([...ran].sort()).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await worker.stop();
    }
  });
});

describe('consumers', () => {
  it('never runs more than maxConcurrency handlers at once', async () => {
    const C = 3;
    let inFlight = 0;
    let maxInFlight = 0;
    const bounded = actor({ name: 'bounded', queue: 'svc_bound' }, async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      // The first handlers wait for company, so the bound is exercised; every handler then yields a
      // turn of the event loop, so that handlers overlap whenever the worker lets them.
      await waitFor(() => maxInFlight >= 2, 10_000, 'two handlers at once');
      await flushPromises();
      inFlight--;
    });
    await tq.enqueueBatch(Array.from({ length: 200 }, () => batchItem(bounded, {})));
    const worker = await startWorker([bounded], { queues: ['svc_bound'], maxConcurrency: C });
    try {
      await waitFor(allSucceeded('svc_bound', 200), 60_000, '200 jobs to succeed');
      expect(maxInFlight).toBeLessThanOrEqual(C);
      // The bound was actually exercised, not trivially met by running one job at a time.
      expect(maxInFlight).toBeGreaterThanOrEqual(2);
      expect(worker.inFlight).toBe(0);
    } finally {
      await worker.stop();
    }
  });
});

describe('execution', () => {
  it('hands every JobContext field to the handler', async () => {
    const seen: { payload: unknown; ctx: JobContext<{ n: number; tag: string }> }[] = [];
    const introspect = actor(
      {
        name: 'introspect',
        queue: 'svc_ctx',
        // The default shows the handler receives the schema's output, not the stored input.
        payload: z.object({ n: z.number(), tag: z.string().default('defaulted') }),
        retry: { maxAttempts: 2, base: 10, jitter: 0 },
      },
      (payload, ctx) => {
        seen.push({ payload, ctx });
        ctx.log.info({ step: 'start' }, 'introspect-running');
        if (ctx.attempt === 1) throw new Error('again, to see attempt 2');
        return 'ok';
      },
    );
    const worker = await startWorker([introspect], { queues: ['svc_ctx', 'svc_ctx_other'] });
    try {
      // Sent to a queue other than the actor's home queue: ctx.queue is where it was claimed from.
      const h = await tq.enqueue(introspect, { n: 41 }, { queue: 'svc_ctx_other' });
      expect(await h.wait({ timeout: '15s' })).toBe('ok');
      expect(seen.map((s) => s.ctx.attempt)).toEqual([1, 2]);
      for (const { payload, ctx } of seen) {
        expect(ctx.jobId).toBe(h.jobId);
        expect(ctx.actor).toBe('introspect');
        expect(ctx.queue).toBe('svc_ctx_other');
        expect(ctx.workerId).toBe(worker.workerId);
        expect(ctx.payload).toEqual({ n: 41, tag: 'defaulted' });
        expect(ctx.payload).toBe(payload);
        for (const level of ['info', 'warn', 'error'] as const)
          expect(typeof ctx.log[level]).toBe('function');
        expect(ctx.signal).toBeInstanceOf(AbortSignal);
        expect(ctx.signal.aborted).toBe(false);
        expect(ctx.shouldAbort()).toBe(false);
      }
      expect(seen[0]!.ctx.signal).not.toBe(seen[1]!.ctx.signal);
      // The workers table knows the id the handler saw.
      const w = await db.pool.query(`SELECT 1 FROM "${db.schema}".workers WHERE id = $1`, [worker.workerId]);
      expect(w.rowCount).toBe(1);
    } finally {
      await worker.stop();
    }
  });

  it("applies the settings' defaultStartToClose when neither enqueue nor actor sets one", async () => {
    let stopIgnoring!: () => void;
    const ignoring = new Promise<void>((r) => (stopIgnoring = r));
    let abortReason: unknown = null;
    const stubborn = actor(
      { name: 'stubborn_default_stc', queue: 'svc_stc', retry: { maxAttempts: 1 } },
      async (_p, ctx) => {
        ctx.signal.addEventListener('abort', () => (abortReason = ctx.signal.reason), { once: true });
        await ignoring; // ignores its deadline on purpose
      },
    );
    const worker = await startWorker([stubborn], {
      queues: ['svc_stc'],
      defaultStartToClose: '300ms',
      // Long enough that the ignored handler still holds its slot when the test looks.
      cleanupGracePeriod: '20s',
      lockLease: '30s',
    });
    try {
      const h = await tq.enqueue(stubborn, {});
      expect(h.row.startToCloseMs).toBeNull();
      const err = await h.wait({ timeout: '15s' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(JobFailed);
      expect((err as JobFailed).row).toMatchObject({ status: 'failed', errorClass: 'StartToCloseTimeout' });
      expect(abortReason).toBeInstanceOf(StartToCloseTimeout);
      expect((abortReason as StartToCloseTimeout).timeoutMs).toBe(300);
      const attempts = await h.attempts();
      expect(attempts.map((a) => [a.outcome, a.errorClass])).toEqual([['failed', 'StartToCloseTimeout']]);
      // The handler is still running in the background and keeps its slot until it settles.
      expect(worker.inFlight).toBe(1);
    } finally {
      stopIgnoring();
      await waitFor(() => worker.inFlight === 0, 10_000, 'the orphaned handler to settle');
      await worker.stop();
    }
  });

  it('runs a strict FIFO queue by priority DESC, scheduled_at, id', async () => {
    const order: string[] = [];
    const fifo = actor(
      { name: 'fifo', queue: 'svc_fifo', payload: z.object({ label: z.string() }) },
      (p) => void order.push(p.label),
    );
    // Enqueued in an order that matches neither their priorities nor their scheduled times. A past
    // `scheduledAt` is stored as "now" (docs/enqueue.md), so the times are set afterwards in SQL;
    // all are in the past, so every job is due and `pending`.
    const plan: [label: string, priority: number, secondsAgo: number][] = [
      ['p0-10s', 0, 10],
      ['p0-30s', 0, 30],
      ['p5-5s', 5, 5],
      ['p0-20s-first', 0, 20],
      ['p5-50s', 5, 50],
      ['p0-40s', 0, 40],
      ['p-1-60s', -1, 60],
      // Same priority and time as p0-20s-first, enqueued later: the id (UUIDv7) breaks the tie.
      ['p0-20s-second', 0, 20],
    ];
    const now = Date.now();
    for (const [label, priority, secondsAgo] of plan) {
      const h = await tq.enqueue(fifo, { label }, { priority });
      await db.pool.query(`UPDATE "${db.schema}".jobs SET scheduled_at = $2 WHERE id = $1`, [
        h.jobId,
        new Date(now - secondsAgo * 1000),
      ]);
    }
    expect((await statuses('svc_fifo')).pending).toBe(8);

    const worker = await startWorker([fifo], { queues: ['svc_fifo'], maxConcurrency: 1, prefetch: 0 });
    try {
      await waitFor(allSucceeded('svc_fifo', 8), 15_000, 'the FIFO jobs to succeed');
      expect(order).toEqual([
        'p5-50s',
        'p5-5s',
        'p0-40s',
        'p0-30s',
        'p0-20s-first',
        'p0-20s-second',
        'p0-10s',
        'p-1-60s',
      ]);
    } finally {
      await worker.stop();
    }
  });
});

describe('heartbeat', () => {
  it('stops the worker (reason fatal, exit code 1) after maxHeartbeatFailures failed renewals in a row', async () => {
    // The worker's own backend, with the heartbeat's two statements failing on demand.
    const real = new PostgresBackend(db.driver, { schema: db.schema, logger: silentLogger });
    let failing = false;
    const broken = new Proxy(real, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if ((prop === 'touchWorker' || prop === 'heartbeatJobs') && failing)
          return () => Promise.reject(new Error('heartbeat statement failed (test)'));
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const lines: { level: string; msg?: string; obj: Record<string, unknown> }[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: (obj, msg) => void lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
      warn: (obj, msg) => void lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
      error: (obj, msg) => void lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
      child: () => logger,
    };
    const idle = actor({ name: 'hb_idle', queue: 'svc_hb' }, () => undefined);
    const worker = await startWorker(
      [idle],
      { queues: ['svc_hb'], heartbeatInterval: '500ms', lockLease: '3s', maxHeartbeatFailures: 2 },
      { backend: broken, logger },
    );
    let stopped = false;
    try {
      failing = true;
      const reason = await worker.stopped;
      stopped = true;
      expect(reason).toBe('fatal');
      expect(EXIT_CODES[reason]).toBe(1);
      expect(worker.phase).toBe('stopped');
      const fatalAt = lines.findIndex((l) => l.msg === 'worker-self-terminating');
      expect(lines[fatalAt]?.obj.reason).toBe('2 consecutive heartbeats failed');
      // Exactly the configured number of failures came before it, counted 1, 2.
      const before = lines.slice(0, fatalAt).filter((l) => l.msg === 'heartbeat-failed');
      expect(before.map((l) => [l.obj.failures, l.obj.max])).toEqual([
        [1, 2],
        [2, 2],
      ]);
    } finally {
      failing = false;
      if (!stopped) await worker.stop();
    }
  }, 30_000);
});
