import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { JobFailed } from '../../src/errors/index.js';
import { RetryAfter, Snooze } from '../../src/retry/control-flow.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { silentLogger } from '../../src/obs/logger.js';

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;
const seen: string[] = [];

const add = actor(
  {
    name: 'add',
    queue: 'math',
    payload: z.object({ a: z.number(), b: z.number() }),
    result: z.object({ sum: z.number() }),
  },
  async (p) => ({ sum: p.a + p.b }),
);
const flaky = actor(
  { name: 'flaky', queue: 'math', retry: { maxAttempts: 3, base: 10, jitter: 0 } },
  async (_p, ctx) => {
    seen.push(`flaky:${ctx.attempt}`);
    if (ctx.attempt < 3) throw new Error(`boom ${ctx.attempt}`);
    return 'third time lucky';
  },
);
const broken = actor(
  { name: 'broken', queue: 'math', retry: { maxAttempts: 2, base: 10, jitter: 0 } },
  async () => {
    throw new TypeError('always');
  },
);
const sleepy = actor({ name: 'sleepy', queue: 'math' }, async (_p, ctx) => {
  seen.push(`sleepy:${ctx.attempt}`);
  if (seen.filter((s) => s.startsWith('sleepy')).length === 1) throw new Snooze(20);
  if (seen.filter((s) => s.startsWith('sleepy')).length === 2)
    throw new RetryAfter(20, { consumeBudget: false });
  return 'awake';
});

beforeAll(async () => {
  db = await migratedSchema('wk');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = new Worker({
    actors: [add, flaky, broken, sleepy],
    settings: {
      pgDsn: TEST_DSN,
      schema: db.schema,
      queues: ['math'],
      maxConcurrency: 4,
      heartbeatInterval: '1s',
      lockLease: '10s',
      cancellationGracePeriod: '1s',
      cleanupGracePeriod: '1s',
      terminationGracePeriod: '10s',
      watchdogEnabled: false,
    },
    logger: silentLogger,
  });
  await worker.start();
});
afterAll(async () => {
  await worker.stop();
  await tq.close();
  await db.drop();
});

describe('Worker (in-process, real Postgres)', () => {
  it('runs a job and wait() returns the validated result', async () => {
    const h = await tq.enqueue(add, { a: 2, b: 3 });
    expect(await h.wait({ timeout: '10s' })).toEqual({ sum: 5 });
    const attempts = await h.attempts();
    expect(attempts.map((a) => a.outcome)).toEqual(['succeeded']);
  });

  it('retries transient failures until they succeed', async () => {
    const h = await tq.enqueue(flaky, {});
    expect(await h.wait({ timeout: '10s' })).toBe('third time lucky');
    const attempts = await h.attempts();
    expect(attempts.map((a) => a.outcome)).toEqual(['failed', 'failed', 'succeeded']);
    // Durations are recorded to the microsecond, on the failure and the success paths alike.
    for (const a of attempts) {
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
      expect(Math.round(a.durationMs! * 1000) / 1000).toBe(a.durationMs);
    }
  });

  it('fails for good after maxAttempts and wait() throws JobFailed with the row', async () => {
    const h = await tq.enqueue(broken, {});
    const err = await h.wait({ timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobFailed);
    expect((err as JobFailed).row).toMatchObject({
      status: 'failed',
      errorClass: 'TypeError',
      errorMessage: 'always',
      attempt: 2,
    });
  });

  it('snoozes and RetryAfter(consumeBudget false) without using attempts', async () => {
    const h = await tq.enqueue(sleepy, {});
    expect(await h.wait({ timeout: '10s' })).toBe('awake');
    const attempts = await h.attempts();
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'snoozed'],
      [1, 'retry_after'],
      [1, 'succeeded'],
    ]);
  });
});
