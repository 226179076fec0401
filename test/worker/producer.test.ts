/**
 * The producer's claim sizing, without a database: adaptive prefetch from the handlers' average
 * duration, claims batched to half of the local capacity unless a slot would sit idle, and actors
 * left out of claims while a limit denies all their jobs.
 */
import { describe, expect, it } from 'vitest';

import type { Backend } from '../../src/backend/backend.js';
import type { JobRow } from '../../src/backend/types.js';
import { silentLogger } from '../../src/obs/logger.js';
import type { JobRunner } from '../../src/worker/job-runner.js';
import { MAX_ACTOR_PAUSE_MS, Producer, type ProducerOptions } from '../../src/worker/producer.js';

function setup(
  prefetch: ProducerOptions['prefetch'],
  state: { averageHandlerMs: number | null; running: number; buffered: number },
) {
  const limits: number[] = [];
  const actorsClaimed: string[][] = [];
  const backend = {
    dispatchBatch: async (req: { limit: number; actors: { name: string }[] }) => {
      limits.push(req.limit);
      actorsClaimed.push(req.actors.map((a) => a.name));
      return [] as JobRow[];
    },
  } as unknown as Backend;
  const runner = {
    get averageHandlerMs() {
      return state.averageHandlerMs;
    },
    get running() {
      return state.running;
    },
    get buffered() {
      return state.buffered;
    },
    get held() {
      return state.running + state.buffered;
    },
    accept: () => undefined,
  } as unknown as JobRunner;
  const producer = new Producer(
    backend,
    runner,
    {
      workerId: '00000000-0000-7000-8000-000000000000',
      queues: ['q'],
      actors: [
        { name: 'a', maxConcurrent: null },
        { name: 'b', maxConcurrent: null },
      ],
      maxConcurrency: 10,
      prefetch,
      maxSettleBacklog: 1000,
      settleBacklog: () => 0,
      leaseMs: 30_000,
      oversample: 2,
      pollIntervalMs: () => 1000,
    },
    silentLogger,
  );
  return { producer, limits, actorsClaimed };
}

describe('adaptive prefetch', () => {
  it.each([
    [null, 10], // nothing observed yet: maxConcurrency
    [0.01, 200], // very short jobs: capped at 200
    [5, 100], // 50 ms of work at 5 ms a job, 10 at a time
    [100, 5],
    [10_000, 0], // long jobs: nothing held back from other workers
  ])('average %s ms → prefetch %i', (avg, expected) => {
    const { producer } = setup('adaptive', { averageHandlerMs: avg, running: 0, buffered: 0 });
    expect(producer.prefetch()).toBe(expected);
  });

  it('a fixed prefetch is used as is', () => {
    const { producer } = setup(3, { averageHandlerMs: 0.01, running: 0, buffered: 0 });
    expect(producer.prefetch()).toBe(3);
  });
});

describe('claim batching', () => {
  it('waits for half the local capacity while the local queue feeds every slot', async () => {
    // capacity 10 + 100 = 110: claims of at least 55 while jobs are still queued.
    const state = { averageHandlerMs: 5, running: 10, buffered: 60 };
    const { producer, limits } = setup('adaptive', state);
    await producer.runOnce();
    expect(limits).toEqual([]); // 40 free: not worth a round trip yet
    state.buffered = 40;
    await producer.runOnce();
    expect(limits).toEqual([60]);
  });

  it('claims at once, however little, when a slot would otherwise sit idle', async () => {
    const state = { averageHandlerMs: 5, running: 9, buffered: 0 };
    const { producer, limits } = setup(0, state);
    await producer.runOnce();
    expect(limits).toEqual([1]);
  });
});

describe('actors paused by a denial', () => {
  it('are left out of claims until the pause ends; with every actor paused nothing is claimed', async () => {
    const state = { averageHandlerMs: 5, running: 0, buffered: 0 };
    const { producer, actorsClaimed } = setup(0, state);
    producer.pauseActor('a', 60_000);
    await producer.runOnce();
    expect(actorsClaimed).toEqual([['b']]);
    producer.pauseActor('b', 30);
    await producer.runOnce();
    expect(actorsClaimed).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 40));
    await producer.runOnce();
    expect(actorsClaimed.at(-1)).toEqual(['b']);
  });

  it('caps a pause, so a limit that was reset is noticed within MAX_ACTOR_PAUSE_MS', async () => {
    const state = { averageHandlerMs: 5, running: 0, buffered: 0 };
    const { producer, actorsClaimed } = setup(0, state);
    const realNow = performance.now.bind(performance);
    producer.pauseActor('a', 3_600_000);
    let offset = MAX_ACTOR_PAUSE_MS + 1;
    const spy = (): number => realNow() + offset;
    performance.now = spy;
    try {
      await producer.runOnce();
    } finally {
      performance.now = realNow;
      offset = 0;
    }
    // Resumed, but throttled: 'a' is claimed on its own, one job at first.
    expect(actorsClaimed).toEqual([['a'], ['b']]);
  });

  it('claims a throttled actor a few jobs at a time: one more per admitted job, one again after a denial', async () => {
    const state = { averageHandlerMs: 5, running: 0, buffered: 0 };
    const { producer, limits, actorsClaimed } = setup(0, state);
    producer.pauseActor('a', 0);
    await producer.runOnce();
    expect(actorsClaimed).toEqual([['a'], ['b']]);
    expect(limits).toEqual([1, 10]);
    producer.actorAdmitted('a');
    producer.actorAdmitted('a');
    producer.actorAdmitted('b'); // not throttled: no effect
    await producer.runOnce();
    expect(limits.slice(2)).toEqual([3, 10]);
    producer.pauseActor('a', 0);
    await producer.runOnce();
    expect(limits.slice(4)).toEqual([1, 10]);
    // Once a claim could take the whole capacity, the throttle is lifted.
    for (let i = 0; i < 10; i++) producer.actorAdmitted('a');
    await producer.runOnce();
    expect(actorsClaimed.at(-1)).toEqual(['a', 'b']);
  });
});
