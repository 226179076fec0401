/**
 * `tq.explain(jobId)` on real Postgres with a real in-process worker: the states a running fleet
 * produces (a rate-limit denial the worker recorded, a job running on it, the actor's stored cap in
 * use by it, the queue left without a worker once it stops), and bad input. The contract suite
 * (test/contract/explain-contract.ts) covers every reason on both backends from states set up
 * directly.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { ExplainReason, JobExplanation } from '../../src/client/job-explanation.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { TokenBucket } from '../../src/ratelimit/index.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const QUEUE = 'explain_client';
const run = randomBytes(4).toString('hex');

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('explain');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

function reason<K extends ExplainReason['kind']>(
  e: JobExplanation,
  kind: K,
): Extract<ExplainReason, { kind: K }> {
  const r = e.reasons.find((x) => x.kind === kind);
  expect(r, `${kind} in ${JSON.stringify(e.reasons.map((x) => x.kind))}`).toBeDefined();
  return r as Extract<ExplainReason, { kind: K }>;
}

describe('bad input', () => {
  it('refuses a jobId that is not a UUID, naming jobId, before reading anything', async () => {
    for (const bad of ['nope', '', 42, null]) {
      const err = await tq.explain(bad as string).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ field: 'jobId', rule: 'must be a UUID' });
    }
  });

  it('refuses unknown options (with the nearest name) and out-of-range values', async () => {
    const id = '018f0000-0000-7000-8000-0000000e0aaa';
    await expect(tq.explain(id, { listLimt: 3 } as never)).rejects.toMatchObject({
      field: 'explain.options.listLimt',
      rule: 'is not an option of explain() (did you mean listLimit?)',
    });
    await expect(tq.explain(id, { listLimit: -1 })).rejects.toMatchObject({ field: 'explain.listLimit' });
    await expect(tq.explain(id, { listLimit: 1.5 })).rejects.toMatchObject({ field: 'explain.listLimit' });
    await expect(tq.explain(id, { workerAliveWithin: 'soon' })).rejects.toMatchObject({
      field: 'explain.workerAliveWithin',
    });
    await expect(tq.explain(id, null as never)).rejects.toMatchObject({ field: 'explain.options' });
  });

  it('answers null for a job that does not exist (as get does), in any letter case', async () => {
    expect(await tq.explain('018F0000-0000-7000-8000-0000000E0BBB')).toBeNull();
    expect(await tq.get('018F0000-0000-7000-8000-0000000E0BBB')).toBeNull();
  });
});

describe('with a real worker', () => {
  it('rate-limit: the denial the worker recorded names the bucket and lifts at the rescheduled time', async () => {
    // One token, then one every 1,000 s: the second job's denial reschedules it far ahead.
    const bucket = new TokenBucket(`explain-bucket-${run}`, {
      capacity: 1,
      refillPerSecond: 0.001,
      backend: 'postgres',
    });
    const metered = actor({ name: 'explain_metered', queue: QUEUE, rateLimits: [bucket] }, async () => 'ran');
    const worker = await startTestWorker([metered], db.schema, { queues: [QUEUE] });
    try {
      const first = await tq.enqueue(metered, {});
      expect(await first.wait({ timeout: '15s' })).toBe('ran');
      const second = await tq.enqueue(metered, {});
      await waitFor(
        async () => (await tq.getRow(second.jobId))?.status === 'scheduled',
        15_000,
        'the denied job rescheduled',
      );
      const row = (await tq.getRow(second.jobId))!;
      const e = (await tq.explain(second.jobId))!;
      expect(e).toMatchObject({ status: 'scheduled', verdict: 'waiting' });
      expect(e.reasons.map((r) => r.kind)).toEqual(['rate-limit']);
      const r = reason(e, 'rate-limit');
      expect(r.limit).toBe(bucket.name);
      expect(r.liftsAt.getTime()).toBe(row.scheduledAt.getTime());
      expect(r.message).toContain(bucket.name);
      const attempts = await tq.backend.getAttempts(second.jobId);
      expect(attempts.at(-1)!.outcome).toBe('rate_limit_denied');
      expect(r.deniedAt.getTime()).toBe(attempts.at(-1)!.finishedAt.getTime());
    } finally {
      await worker.stop();
    }
  });

  it('running, then actor-max-concurrent from the stored cap, then no-worker once it stops', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const blocking = actor({ name: 'explain_blocking', queue: `${QUEUE}_b` }, async () => {
      await gate;
      return 'done';
    });
    const worker = await startTestWorker([blocking], db.schema, { queues: [`${QUEUE}_b`] });
    let stopped = false;
    try {
      // The operator's cap (the code's literal is not in the database, so explain cannot see it).
      await tq.actors.setCapacity('explain_blocking', { maxConcurrent: 1 });
      const first = await tq.enqueue(blocking, {});
      await waitFor(
        async () => (await tq.getRow(first.jobId))?.startedAt != null,
        15_000,
        'the first job started',
      );
      const running = (await tq.explain(first.jobId))!;
      expect(running.verdict).toBe('running');
      expect(reason(running, 'running')).toMatchObject({
        workerId: worker.workerId,
        hostname: hostname(),
        workerAlive: true,
      });
      expect(reason(running, 'running').message).toContain(worker.workerId);

      const second = await tq.enqueue(blocking, {});
      const held = (await tq.explain(second.jobId))!;
      expect(held.reasons.map((r) => r.kind)).toEqual(['actor-max-concurrent']);
      expect(reason(held, 'actor-max-concurrent')).toMatchObject({
        maxConcurrent: 1,
        running: 1,
        runningJobIds: [first.jobId],
      });

      release();
      expect(await first.wait({ timeout: '15s' })).toBe('done');
      expect(await second.wait({ timeout: '15s' })).toBe('done');
      const finished = (await tq.explain(second.jobId))!;
      expect(finished).toMatchObject({
        verdict: 'finished',
        reasons: [{ kind: 'terminal', status: 'succeeded' }],
      });

      await worker.stop();
      stopped = true;
      const orphan = await tq.enqueue(blocking, {});
      const e = (await tq.explain(orphan.jobId))!;
      expect(e.reasons.map((r) => r.kind)).toEqual(['no-worker']);
      expect(reason(e, 'no-worker').queue).toBe(`${QUEUE}_b`);
    } finally {
      release();
      if (!stopped) await worker.stop();
    }
  });
});
