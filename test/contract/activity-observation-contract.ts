/**
 * `Backend.observeActivity` (the admin UI's overview: workers and recent outcomes), part of the
 * Backend contract, run unchanged against both backends. Time passes only through the harness's
 * `timeTravel`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { Settlement } from '../../src/backend/worker-types.js';
import type { WorkerRegistration } from '../../src/backend/worker-types.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { failed, succeeded } from '../helpers/settlements.js';
import type { ContractHarness } from './backend-contract.js';

const W1 = '018f0000-0000-7000-8000-00000000b001';
const W2 = '018f0000-0000-7000-8000-00000000b002';
const MINUTE = 60_000;
const work = actor(
  { name: 'act_work', queue: 'act_q1', retry: { kind: 'nonRetryable' } },
  async () => undefined,
);
const other = actor({ name: 'act_other', queue: 'act_q2' }, async () => undefined);

const registration = (workerId: string, hostname: string, queues: string[]): WorkerRegistration => ({
  workerId,
  hostname,
  pid: 7,
  label: null,
  queues,
  maxConcurrency: 4,
  version: 'test',
});
const ok = (jobId: string): Settlement => succeeded(W1, jobId);
const fail = (jobId: string): Settlement => failed(W1, jobId);

export function defineActivityObservationContract(
  name: string,
  makeHarness: () => Promise<ContractHarness>,
): void {
  describe(`Backend activity observation contract: ${name}`, () => {
    let h: ContractHarness;
    let client: TaskQ;

    beforeAll(async () => {
      h = await makeHarness();
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(async () => {
      await h.reset();
      client = new TaskQ(h.backend, { capacityCacheTtl: 0 });
    });

    /** Enqueues `n` jobs of `work`, claims them on W1 and settles them with `outcome`. */
    async function finish(n: number, outcome: (id: string) => Settlement): Promise<string[]> {
      for (let i = 0; i < n; i++) await client.enqueue(work, {});
      const claimed = await h.backend.dispatchBatch({
        workerId: W1,
        queues: ['act_q1'],
        actors: [{ name: work.name, maxConcurrent: null }],
        limit: n,
        leaseMs: MINUTE,
        oversample: 2,
      });
      expect(claimed).toHaveLength(n);
      const settled = await h.backend.settle(claimed.map((c) => outcome(c.id)));
      expect(settled.every((r) => r.status !== 'noop')).toBe(true);
      return claimed.map((c) => c.id);
    }

    it('lists every worker, alive ones first, with its age on the backend clock', async () => {
      await h.backend.registerWorker(registration(W1, 'host-b', ['act_q1']));
      await h.timeTravel(10 * MINUTE);
      await h.backend.registerWorker(registration(W2, 'host-a', ['act_q1', 'act_q2']));
      const seen = await h.backend.observeActivity({
        aliveWithinMs: MINUTE,
        finishedWithinMs: MINUTE,
        maxCounted: 100,
      });
      expect(seen.workers.map((w) => [w.workerId, w.alive])).toEqual([
        [W2, true],
        [W1, false],
      ]);
      const [fresh, stale] = seen.workers;
      expect(fresh).toMatchObject({
        hostname: 'host-a',
        pid: 7,
        queues: ['act_q1', 'act_q2'],
        maxConcurrency: 4,
      });
      expect(fresh?.lastSeenAgeSeconds).toBeLessThan(30);
      expect(stale?.lastSeenAgeSeconds).toBeGreaterThanOrEqual(600);
      expect(stale?.startedAt.getTime()).toBeLessThanOrEqual(stale?.lastSeenAt.getTime() ?? 0);
    });

    it('counts the jobs finished within the window per queue and outcome, not older ones', async () => {
      await finish(2, fail);
      await h.timeTravel(10 * MINUTE);
      await finish(3, ok);
      await finish(1, fail);
      const cancelled = await client.enqueue(other, {});
      await client.cancel(cancelled.jobId);
      await client.enqueue(work, {}); // pending: not finished
      const seen = await h.backend.observeActivity({
        aliveWithinMs: MINUTE,
        finishedWithinMs: 5 * MINUTE,
        maxCounted: 100,
      });
      expect(seen.finished).toEqual([
        { queue: 'act_q1', succeeded: 3, failed: 1, other: 0 },
        { queue: 'act_q2', succeeded: 0, failed: 0, other: 1 },
      ]);
      expect(seen.finishedCapped).toBe(false);
      expect(seen.workers).toEqual([]);
    });

    it('counts only the newest maxCounted and says the count was cut', async () => {
      await finish(2, ok);
      await h.timeTravel(1000);
      await finish(3, fail);
      const cut = await h.backend.observeActivity({
        aliveWithinMs: MINUTE,
        finishedWithinMs: MINUTE,
        maxCounted: 3,
      });
      expect(cut.finished).toEqual([{ queue: 'act_q1', succeeded: 0, failed: 3, other: 0 }]);
      expect(cut.finishedCapped).toBe(true);
    });

    it('refuses a malformed request naming the field', async () => {
      const bad: [Record<string, unknown>, string][] = [
        [{ aliveWithinMs: -1, finishedWithinMs: 1, maxCounted: 1 }, 'aliveWithinMs'],
        [{ aliveWithinMs: 1, finishedWithinMs: Number.NaN, maxCounted: 1 }, 'finishedWithinMs'],
        [{ aliveWithinMs: 1, finishedWithinMs: 1, maxCounted: 0 }, 'maxCounted'],
        [{ aliveWithinMs: 1, finishedWithinMs: 1, maxCounted: 1.5 }, 'maxCounted'],
      ];
      for (const [request, field] of bad) {
        const err = await h.backend.observeActivity(request as never).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).message).toContain(field);
      }
    });
  });
}
