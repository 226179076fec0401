/**
 * Job context on log lines (docs/logging.md): `ctx.log`, `jobLogger()` / `currentJob()` from code a
 * handler calls (across awaits and timers, apart between concurrent handlers), and the worker's own
 * lines about an attempt's outcome. On the in-memory backend, which hands the worker whole rows
 * (trace id included); the process-level test (failure-logs.test.ts) runs on Postgres.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { currentJob, jobLogger } from '../../src/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Snooze } from '../../src/retry/control-flow.js';
import { Worker } from '../../src/worker/worker.js';
import { waitFor } from '../helpers/wait.js';

type Line = Record<string, unknown> & { msg: string; level: number };

const lines: Line[] = [];
const logger = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s) as Line) });
const SECRET = 'payload-secret-7f3a91';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** "User code" at module level: no ctx, logs through the helper after an await and from a timer. */
async function chargeCard(n: number): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  jobLogger().info({ n, where: 'after-await' }, 'user-helper');
  await new Promise<void>((resolve) =>
    setTimeout(() => {
      jobLogger().info({ n, where: 'timer' }, 'user-helper');
      resolve();
    }, 1),
  );
}

// Every handler waits until all four run at once before logging again: their lines interleave.
let started = 0;
let releaseAll!: () => void;
const allStarted = new Promise<void>((resolve) => (releaseAll = resolve));

const chatty = actor({ name: 'log_chatty', queue: 'logs' }, async (p: { n: number }, ctx) => {
  ctx.log.info({ n: p.n }, 'user-ctx');
  if (++started === 4) releaseAll();
  await allStarted;
  await chargeCard(p.n);
  return { sawOwnJob: currentJob()?.jobId === ctx.jobId };
});

class CardDeclined extends Error {}

const declines = actor(
  {
    name: 'log_declines',
    queue: 'logs',
    retry: { maxAttempts: 2, base: 10, jitter: 0 },
    // A hook is the job's code too: its jobLogger() lines carry the job's fields.
    onRetryExhausted: async () => {
      await Promise.resolve();
      jobLogger().warn({}, 'user-hook');
    },
  },
  async (p: { card: string }) => {
    throw new CardDeclined(
      `card declined by postgres://shop:hunter2@pay.example/charge (card ${p.card.length} chars)`,
    );
  },
);

let snoozed = false;
const sleepy = actor({ name: 'log_sleepy', queue: 'logs' }, async () => {
  if (!snoozed) {
    snoozed = true;
    throw new Snooze(10);
  }
  return 'awake';
});

let backend: InMemoryBackend;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  backend = new InMemoryBackend();
  tq = new TaskQ(backend);
  worker = new Worker({
    actors: [chatty, declines, sleepy],
    backend,
    logger: logger as unknown as Logger,
    settings: { pgDsn: null, queues: ['logs'], maxConcurrency: 4, watchdogEnabled: false },
  });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await backend?.close();
});

const of = (msg: string): Line[] => lines.filter((l) => l.msg === msg);

describe('job context on log lines', () => {
  it('ctx.log and jobLogger() lines carry the job fields, across awaits and timers, apart between concurrent handlers', async () => {
    const handles = await Promise.all(
      [0, 1, 2, 3].map((n) => tq.enqueue(chatty, { n }, n === 0 ? { traceId: TRACE_ID } : {})),
    );
    const results = await Promise.all(handles.map((h) => h.wait({ timeout: 10_000 })));
    expect(results).toEqual(Array(4).fill({ sawOwnJob: true }));

    const jobOf = new Map(handles.map((h, n) => [n, h.jobId]));
    for (const msg of ['user-ctx', 'user-helper']) {
      const got = of(msg);
      expect(got).toHaveLength(msg === 'user-ctx' ? 4 : 8);
      for (const line of got) {
        const n = line.n as number;
        expect(line).toMatchObject({ jobId: jobOf.get(n), actor: 'log_chatty', queue: 'logs', attempt: 1 });
        if (n === 0) expect(line.traceId).toBe(TRACE_ID);
        else expect(line).not.toHaveProperty('traceId');
      }
    }
    // The four handlers' helper lines really interleaved (all four had started before any logged).
    const firstHelper = lines.indexOf(of('user-helper')[0]!);
    expect(of('user-ctx').every((l) => lines.indexOf(l) < firstHelper)).toBe(true);
  });

  it('outside a job, jobLogger() is the fallback (silent by default) and currentJob() is undefined', () => {
    expect(currentJob()).toBeUndefined();
    expect(jobLogger()).toBe(silentLogger);
    const mine = pino({ level: 'info' }) as unknown as Logger;
    expect(jobLogger(mine)).toBe(mine);
  });
});

describe("the worker's lines about outcomes", () => {
  it('a retried failure logs job-attempt-failed (warn), the terminal one job-failed (error): class, masked message, never the payload; the hook logs with the job fields', async () => {
    const h = await tq.enqueue(declines, { card: SECRET });
    await waitFor(async () => (await backend.get(h.jobId))?.status === 'failed');
    await waitFor(() => of('job-failed').some((l) => l.jobId === h.jobId));

    const retry = of('job-attempt-failed').find((l) => l.jobId === h.jobId)!;
    expect(retry).toMatchObject({
      level: 40,
      actor: 'log_declines',
      queue: 'logs',
      attempt: 1,
      errorClass: 'CardDeclined',
      retryInMs: 10,
    });
    expect(retry.message).toBe('card declined by postgres://***@pay.example/charge (card 21 chars)');
    expect(typeof retry.retryAt).toBe('string');

    const failed = of('job-failed').find((l) => l.jobId === h.jobId)!;
    expect(failed).toMatchObject({ level: 50, attempt: 2, errorClass: 'CardDeclined' });
    expect(failed.message).toContain('card declined by postgres://***@');
    expect(String(failed.stack)).toContain('job-logs.test.ts');

    await waitFor(() => of('user-hook').length > 0);
    expect(of('user-hook')[0]).toMatchObject({ jobId: h.jobId, actor: 'log_declines', attempt: 2 });

    const about = lines.filter((l) => l.jobId === h.jobId);
    expect(JSON.stringify(about)).not.toContain(SECRET);
    expect(JSON.stringify(about)).not.toContain('hunter2');
  });

  it('a snooze logs job-snoozed at debug with the delay', async () => {
    const h = await tq.enqueue(sleepy, {});
    await h.wait({ timeout: 10_000 });
    expect(of('job-snoozed').find((l) => l.jobId === h.jobId)).toMatchObject({
      level: 20,
      actor: 'log_sleepy',
      retryInMs: 10,
    });
    expect(lines.filter((l) => l.jobId === h.jobId && l.level >= 40)).toEqual([]);
  });
});
