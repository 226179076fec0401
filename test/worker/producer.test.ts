/**
 * The producer's claim sizing, without a database: adaptive prefetch from the handlers' average
 * duration, claims batched to half of the local capacity unless a slot would sit idle, and actors
 * left out of claims while a limit denies all their jobs, one claim in flight at a time, and no
 * claims for freed slots after a claim that drained the queue.
 */
import { describe, expect, it } from 'vitest';

import type { Backend } from '../../src/backend/backend.js';
import type { JobRow } from '../../src/backend/types.js';
import { silentLogger } from '../../src/obs/logger.js';
import { MAX_SETTLE_BACKLOG, MAX_SETTLE_BATCH } from '../../src/worker/completer.js';
import type { JobRunner } from '../../src/worker/job-runner.js';
import { MAX_ACTOR_PAUSE_MS, Producer, type ProducerOptions } from '../../src/worker/producer.js';
import { flushPromises, waitFor } from '../helpers/wait.js';

/** A runner whose counts come from `state` (changed by the test as it goes). */
function fakeRunner(state: {
  averageHandlerMs?: number | null;
  running: number;
  buffered: number;
}): JobRunner {
  return {
    get averageHandlerMs() {
      return state.averageHandlerMs === undefined ? 1 : state.averageHandlerMs;
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
    startsRecordedByClaim: () => Math.max(0, 10 - state.running - state.buffered),
    accept: () => undefined,
  } as unknown as JobRunner;
}

/** A producer with c = 10 over `backend` and `runner`; `options` override the rest. */
function makeProducer(backend: Backend, runner: JobRunner, options: Partial<ProducerOptions>): Producer {
  return new Producer(
    backend,
    runner,
    {
      workerId: '00000000-0000-7000-8000-000000000000',
      queues: ['q'],
      actors: [{ name: 'a', maxConcurrent: null }],
      maxConcurrency: 10,
      prefetch: 0,
      maxSettleBacklog: 1000,
      settleBacklog: () => 0,
      leaseMs: 30_000,
      oversample: 2,
      pollIntervalMs: () => 1000,
      wakeUpsReliable: () => true,
      ...options,
    },
    silentLogger,
  );
}

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
  const producer = makeProducer(backend, fakeRunner(state), {
    actors: [
      { name: 'a', maxConcurrent: null },
      { name: 'b', maxConcurrent: null },
    ],
    prefetch,
  });
  return { producer, limits, actorsClaimed };
}

describe('adaptive prefetch', () => {
  it.each([
    [null, 10], // nothing observed yet: maxConcurrency
    [0.01, 1000], // very short jobs: capped at ADAPTIVE_PREFETCH_MAX
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

  it('stops claiming while a full outcome write waits behind the one in flight (MAX_SETTLE_BACKLOG)', async () => {
    let backlog = MAX_SETTLE_BACKLOG;
    const limits: number[] = [];
    const backend = {
      dispatchBatch: async (req: { limit: number }) => {
        limits.push(req.limit);
        return [] as JobRow[];
      },
    } as unknown as Backend;
    const producer = makeProducer(backend, fakeRunner({ running: 0, buffered: 0 }), {
      maxSettleBacklog: MAX_SETTLE_BACKLOG,
      settleBacklog: () => backlog,
    });
    expect(MAX_SETTLE_BACKLOG).toBe(MAX_SETTLE_BATCH);
    expect(producer.freeCapacity()).toBe(0);
    await producer.runOnce();
    expect(limits).toEqual([]); // every slot idle, but the database is a full write behind
    backlog = MAX_SETTLE_BACKLOG - 1;
    await producer.runOnce();
    expect(limits).toEqual([10]);
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
    // 'b''s pause ends 30 ms on: move the producer's clock past it rather than wait.
    const realNow = performance.now.bind(performance);
    performance.now = () => realNow() + 31;
    try {
      await producer.runOnce();
    } finally {
      performance.now = realNow;
    }
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

describe('claims in flight', () => {
  /** A producer whose claims stay in flight until `release()`; `limits` records each claim's size. */
  function heldClaims(maxConcurrent: number | null) {
    const state = { running: 10, buffered: 30 };
    const limits: number[] = [];
    const pending: ((full: boolean) => void)[] = [];
    const backend = {
      dispatchBatch: (req: { limit: number }) => {
        limits.push(req.limit);
        return new Promise<JobRow[]>((resolve) =>
          pending.push((full) =>
            resolve(full ? (Array.from({ length: req.limit }, () => ({})) as JobRow[]) : []),
          ),
        );
      },
    } as unknown as Backend;
    const producer = makeProducer(backend, fakeRunner(state), {
      actors: [{ name: 'a', maxConcurrent }],
      prefetch: 30, // capacity 40: a claim once 20 are free (half of it)
      pollIntervalMs: () => 60_000,
    });
    /** Finishes the claims in flight: with every job they asked for (`full`), or with none. */
    const release = (full = false): void => {
      for (const r of pending.splice(0)) r(full);
    };
    return { producer, state, limits, release };
  }

  // The producer's loop is driven by promises alone (its poll is 60 s away): once the reactions a
  // step queued have run, it has claimed all it will.
  const settle = flushPromises;

  it('never starts a second claim while one is in flight, however much capacity frees', async () => {
    const { producer, state, limits, release } = heldClaims(null);
    producer.start();
    await settle();
    expect(limits).toEqual([]); // nothing free: capacity 40 held
    state.buffered = 10; // 20 free
    producer.notify();
    await settle();
    expect(limits).toEqual([20]); // in flight: its 20 jobs count as held
    release(true); // it came back full: there may be more, so the next claim starts at once
    await settle();
    expect(limits).toEqual([20, 20]);
    state.buffered = -10; // 20 more free while that claim runs: no second claim beside it
    producer.notify();
    await settle();
    expect(limits).toEqual([20, 20]);
    release(); // it found nothing, but a wake-up came meanwhile: claim what is free now
    await settle();
    expect(limits).toEqual([20, 20, 40]);
    release();
    await producer.stop();
  });

  it('a wake-up during a claim waits for it: jobs that trickle in share the next claim', async () => {
    const { producer, state, limits, release } = heldClaims(null);
    producer.start();
    state.buffered = 10;
    producer.notify();
    await settle();
    release(); // nothing there
    await settle();
    state.buffered = 0;
    producer.notify(); // a new job
    await settle();
    expect(limits).toEqual([20, 30]);
    state.buffered = -20; // 30 more free
    producer.notify(); // another, while the claim for the first runs
    await settle();
    expect(limits).toEqual([20, 30]);
    release();
    await settle();
    expect(limits).toEqual([20, 30, 50]); // claimed after the one in flight
    release();
    await producer.stop();
  });

  it('holds to one claim in flight when an actor declares maxConcurrent too (its over-admission bound)', async () => {
    const { producer, state, limits, release } = heldClaims(5);
    producer.start();
    state.buffered = 10;
    producer.notify();
    await settle();
    state.buffered = 0;
    producer.notify();
    await settle();
    expect(limits).toEqual([20]);
    release(); // the claim found nothing; the wake-up during it starts the next one
    await settle();
    expect(limits).toEqual([20, 30]); // the next claim takes all that is free
    release();
    await producer.stop();
  });
});

describe('wake-ups during a claim', () => {
  it('claim again when the claim in flight ends: a job enqueued meanwhile may not be in its snapshot', async () => {
    const limits: number[] = [];
    const pending: (() => void)[] = [];
    const backend = {
      dispatchBatch: (req: { limit: number }) => {
        limits.push(req.limit);
        return new Promise<JobRow[]>((resolve) => pending.push(() => resolve([])));
      },
    } as unknown as Backend;
    const producer = makeProducer(backend, fakeRunner({ running: 0, buffered: 0 }), {
      pollIntervalMs: () => 60_000,
    });
    const tick = flushPromises;
    producer.start();
    await tick();
    expect(limits).toEqual([10]); // the first claim, in flight
    producer.notify(); // a NOTIFY: no room for another claim now
    await tick();
    expect(limits).toEqual([10]);
    pending.shift()!(); // the first claim found nothing
    await tick();
    expect(limits).toEqual([10, 10]); // claimed again at once, not after the 60 s poll
    pending.shift()!(); // nothing arrived during this one: the producer sleeps
    await tick();
    expect(limits).toEqual([10, 10]);
    await producer.stop();
  });
});

describe('drained claims', () => {
  /**
   * A producer over a backend whose claims find nothing and, when `canTell`, report that nothing
   * else was claimable (onDrained). Claims stay in flight until `release()` when `hold` is set.
   */
  function emptyQueue(options: {
    canTell: boolean;
    hold?: boolean;
    pollMs?: number;
    wakeUpsReliable?: () => boolean;
  }) {
    const limits: number[] = [];
    const pending: (() => void)[] = [];
    const backend = {
      dispatchBatch: (req: { limit: number; onDrained?: () => void }) => {
        limits.push(req.limit);
        const finish = (): JobRow[] => {
          if (options.canTell) req.onDrained?.();
          return [];
        };
        if (!options.hold) return Promise.resolve(finish());
        return new Promise<JobRow[]>((resolve) => pending.push(() => resolve(finish())));
      },
    } as unknown as Backend;
    const producer = makeProducer(backend, fakeRunner({ running: 0, buffered: 0 }), {
      pollIntervalMs: () => options.pollMs ?? 60_000,
      wakeUpsReliable: options.wakeUpsReliable ?? (() => true),
    });
    const release = (): void => {
      for (const r of pending.splice(0)) r();
    };
    return { producer, limits, release };
  }
  const tick = flushPromises;

  it('freed slots start no claim after a drained one, until a wake-up says work arrived', async () => {
    const { producer, limits } = emptyQueue({ canTell: true });
    producer.start();
    await tick();
    expect(limits).toEqual([10]); // the first claim: nothing there, and nothing else claimable
    producer.capacityFreed(); // a handler ended, an outcome was written: no claim
    producer.capacityFreed();
    await tick();
    expect(limits).toEqual([10]);
    producer.notify(); // a NOTIFY on the wake channel: claim
    await tick();
    expect(limits).toEqual([10, 10]);
    await producer.stop();
  });

  it('a backend that cannot tell: every freed slot may claim, as it always did', async () => {
    const { producer, limits } = emptyQueue({ canTell: false });
    producer.start();
    await tick();
    producer.capacityFreed();
    await tick();
    expect(limits).toEqual([10, 10]);
    await producer.stop();
  });

  it('without reliable wake-ups (NOTIFY off or down), freed slots claim even after a drained claim', async () => {
    let listening = false;
    const { producer, limits } = emptyQueue({ canTell: true, wakeUpsReliable: () => listening });
    producer.start();
    await tick();
    producer.capacityFreed(); // no listener: this claim is how new work is found before the poll
    await tick();
    expect(limits).toEqual([10, 10]);
    listening = true; // connected again: the last claim was drained, and wake-ups now arrive
    producer.capacityFreed();
    await tick();
    expect(limits).toEqual([10, 10]);
    await producer.stop();
  });

  it('the poll still claims after a drained claim (a wake-up may have been lost)', async () => {
    const { producer, limits } = emptyQueue({ canTell: true, pollMs: 30 });
    producer.start();
    await waitFor(() => limits.length >= 3, 10_000, 'three claims by the poll');
    await producer.stop();
  });

  it('capacity freed during a claim starts another when it ends unless that claim was drained', async () => {
    for (const canTell of [false, true]) {
      const { producer, limits, release } = emptyQueue({ canTell, hold: true });
      producer.start();
      await tick();
      expect(limits).toEqual([10]);
      producer.capacityFreed(); // while the claim is in flight
      release();
      await tick();
      // Not drained: the freed slot may let a held-back job through, so claim again; drained: no.
      expect(limits).toEqual(canTell ? [10] : [10, 10]);
      release();
      await producer.stop();
    }
  });

  it('a wake-up during a drained claim still starts the next claim when it ends', async () => {
    const { producer, limits, release } = emptyQueue({ canTell: true, hold: true });
    producer.start();
    await tick();
    producer.notify(); // a job committed after the claim's snapshot may have been missed
    release();
    await tick();
    expect(limits).toEqual([10, 10]);
    release();
    await tick();
    producer.capacityFreed(); // that claim was drained and nothing came meanwhile
    await tick();
    expect(limits).toEqual([10, 10]);
    await producer.stop();
  });
});
