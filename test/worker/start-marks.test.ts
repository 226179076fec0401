/**
 * A worker records a job's start in the database before its handler begins (issue 62): the claim
 * for the jobs that go straight to a free slot, `markStarted` for those that waited in the local
 * queue. Drain at shutdown gives the unstarted ones back as the reclaim sweep would. On the
 * in-memory backend, whose rows the test reads as the handlers run.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { silentLogger } from '../../src/obs/logger.js';
import { StartMarks } from '../../src/worker/start-marks.js';
import { Worker } from '../../src/worker/worker.js';
import { flushPromises, waitFor } from '../helpers/wait.js';

let backend: InMemoryBackend;
let worker: Worker | null = null;
afterEach(async () => {
  await worker?.stop();
  worker = null;
  await backend?.close();
});

describe('recording starts', () => {
  it('a job that waited in the local queue is recorded as started before its handler begins', async () => {
    backend = new InMemoryBackend();
    const tq = new TaskQ(backend);
    const seenAtStart = new Map<string, Date | null>();
    const gates = new Map<string, () => void>();
    const gated = actor({ name: 'gated', queue: 'marks' }, async (_p, ctx) => {
      seenAtStart.set(ctx.jobId, (await backend.get(ctx.jobId))!.startedAt);
      await new Promise<void>((resolve) => gates.set(ctx.jobId, resolve));
    });
    const jobs: { jobId: string }[] = [];
    for (let i = 0; i < 3; i++) jobs.push(await tq.enqueue(gated, {}));
    const ids = jobs.map((j) => j.jobId);
    worker = new Worker({
      actors: [gated],
      backend,
      settings: { pgDsn: null, queues: ['marks'], maxConcurrency: 1, prefetch: 2, watchdogEnabled: false },
    });
    await worker.start();
    await waitFor(() => gates.has(ids[0]!), 5000, 'the first handler');
    const rows = await Promise.all(ids.map((id) => backend.get(id)));
    expect(rows.map((r) => r!.status)).toEqual(['running', 'running', 'running']);
    // One slot: the claim recorded the first job as started, the two others wait unrecorded.
    expect(rows.map((r) => r!.startedAt !== null)).toEqual([true, false, false]);

    // The runner records starts ahead when a start's write takes about as long as a handler runs
    // (see JobRunner.lookahead): on a loaded machine a first handler of a few milliseconds would
    // let the third job be recorded with the second. Held for a while, it cannot be.
    await new Promise((resolve) => setTimeout(resolve, 300));
    gates.get(ids[0]!)!();
    await waitFor(() => gates.has(ids[1]!), 5000, 'the second handler');
    expect(seenAtStart.get(ids[1]!)).not.toBeNull();
    expect((await backend.get(ids[2]!))!.startedAt).toBeNull();

    // A cancel for the job still waiting, then a shutdown: the drain ends it cancelled, its attempt
    // given back and no attempt row, as the reclaim sweep would.
    await tq.cancel(ids[2]!, 'stop');
    const stopping = worker.stop();
    await waitFor(async () => (await backend.get(ids[2]!))!.status === 'cancelled', 5000, 'the drain');
    gates.get(ids[1]!)!();
    await stopping;
    worker = null;
    expect((await backend.get(ids[1]!))!.status).toBe('succeeded');
    expect(await backend.get(ids[2]!)).toMatchObject({ status: 'cancelled', attempt: 0 });
    expect(await backend.getAttempts(ids[2]!)).toEqual([]);
    expect(gates.has(ids[2]!)).toBe(false);
  });

  it('a shutdown gives the jobs that never started back to pending with their attempt', async () => {
    backend = new InMemoryBackend();
    const tq = new TaskQ(backend);
    let release: (() => void) | null = null;
    const slow = actor({ name: 'slow', queue: 'marks' }, async () => {
      await new Promise<void>((resolve) => (release = resolve));
    });
    const jobs: { jobId: string }[] = [];
    for (let i = 0; i < 3; i++) jobs.push(await tq.enqueue(slow, {}));
    worker = new Worker({
      actors: [slow],
      backend,
      settings: {
        pgDsn: null,
        queues: ['marks'],
        maxConcurrency: 1,
        prefetch: 2,
        watchdogEnabled: false,
        cancellationGracePeriod: '5s',
      },
    });
    await worker.start();
    await waitFor(() => release !== null, 5000, 'the first handler');
    const stopping = worker.stop();
    await waitFor(async () => (await backend.get(jobs[2]!.jobId))!.status === 'pending', 5000, 'the drain');
    for (const j of jobs.slice(1)) {
      expect(await backend.get(j.jobId)).toMatchObject({ status: 'pending', attempt: 0, startedAt: null });
      expect(await backend.getAttempts(j.jobId)).toEqual([]);
    }
    release!();
    await stopping;
    worker = null;
    expect((await backend.get(jobs[0]!.jobId))!.status).toBe('succeeded');
  });
});

describe('a failed start write', () => {
  it('keeps the job waiting, unstarted, until a retry records it', async () => {
    backend = new InMemoryBackend();
    const tq = new TaskQ(backend);
    const real = backend.markStarted.bind(backend);
    let failures = 0;
    backend.markStarted = async (workerId, jobIds) => {
      if (failures < 2) {
        failures++;
        throw new Error('connection terminated');
      }
      return real(workerId, jobIds);
    };
    const seenAtStart = new Map<string, Date | null>();
    let release: (() => void) | null = null;
    const first = actor({ name: 'first_gate', queue: 'marks' }, async (_p, ctx) => {
      seenAtStart.set(ctx.jobId, (await backend.get(ctx.jobId))!.startedAt);
      if (release === null) await new Promise<void>((resolve) => (release = resolve));
    });
    const a = await tq.enqueue(first, {});
    const b = await tq.enqueue(first, {});
    worker = new Worker({
      actors: [first],
      backend,
      settings: { pgDsn: null, queues: ['marks'], maxConcurrency: 1, prefetch: 1, watchdogEnabled: false },
      logger: silentLogger,
    });
    await worker.start();
    await waitFor(() => release !== null, 5000, 'the first handler');
    release!();
    await waitFor(async () => (await backend.get(b.jobId))!.status === 'succeeded', 5000, 'the second job');
    expect(failures).toBe(2);
    expect(seenAtStart.get(a.jobId)).not.toBeNull();
    expect(seenAtStart.get(b.jobId)).not.toBeNull();
  });
});

describe('StartMarks', () => {
  it('sends one write at a time; jobs added meanwhile share the next', async () => {
    const writes: number[][] = [];
    const pending: (() => void)[] = [];
    const marks = new StartMarks<number>((batch) => {
      writes.push(batch);
      return new Promise<void>((resolve) => pending.push(resolve));
    });
    marks.add([1]);
    marks.add([2]);
    marks.add([3, 4]);
    expect(writes).toEqual([[1]]);
    pending.shift()!();
    await flushPromises();
    expect(writes).toEqual([[1], [2, 3, 4]]);
    pending.shift()!();
    await flushPromises();
    expect(writes).toHaveLength(2);
  });
});
