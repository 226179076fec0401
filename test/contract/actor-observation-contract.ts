/**
 * `Backend.observeActors` (the admin UI's actors page), part of the Backend contract, run unchanged
 * against both backends. Time passes only through the harness's `timeTravel`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { ActorObservation } from '../../src/backend/actor-observation.js';
import type { WorkerRegistration } from '../../src/backend/worker-types.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import type { ContractHarness } from './backend-contract.js';

const alpha = actor({ name: 'obs_alpha', queue: 'obs_q1' }, async () => undefined);
const beta = actor({ name: 'obs_beta', queue: 'obs_q2' }, async () => undefined);
const idle = actor({ name: 'obs_idle', queue: 'obs_q3' }, async () => undefined);
const unregistered = actor({ name: 'obs_unregistered', queue: 'obs_q1' }, async () => undefined);
const W_OLD = '018f0000-0000-7000-8000-00000000a001';
const W_NEW = '018f0000-0000-7000-8000-00000000a002';
const HOUR = 3_600_000;

const registration = (workerId: string, queues: string[]): WorkerRegistration => ({
  workerId,
  hostname: 'obs-host',
  pid: 1,
  label: null,
  queues,
  maxConcurrency: 4,
  version: 'test',
});

/** Zero counts for an actor, overridden by `o`. */
const actorOf = (name: string, queue: string, o: Partial<ActorObservation> = {}): ActorObservation => ({
  actor: name,
  queue,
  pending: 0,
  scheduled: 0,
  running: 0,
  workersAlive: 0,
  ...o,
});

export function defineActorObservationContract(
  name: string,
  makeHarness: () => Promise<ContractHarness>,
): void {
  describe(`Backend actor observation contract: ${name}`, () => {
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

    const register = (...refs: (typeof alpha)[]) =>
      h.backend.syncActorConfig(
        refs.map((a) => ({ actor: a.name, queue: a.queue, metadata: {} })),
        { force: false },
      );

    it('is empty without actor rows, whatever jobs exist', async () => {
      await client.enqueue(alpha, {});
      expect(await h.backend.observeActors({ aliveWithinMs: HOUR })).toEqual([]);
    });

    it('counts each registered actor’s pending, scheduled and running jobs in every queue, by name', async () => {
      await register(beta, alpha, idle);
      for (let i = 0; i < 3; i++) await client.enqueue(alpha, {});
      // A keyed job sits in the other pending dispatch index; a job sent to another queue counts too.
      await client.enqueue(alpha, {}, { fairnessKey: 'tenant-1' });
      await client.enqueue(alpha, {}, { queue: 'obs_elsewhere' });
      await client.enqueue(alpha, {}, { delay: '2h' });
      await client.enqueue(alpha, {}, { queue: 'obs_elsewhere', delay: '2h' });
      const claimed = await h.backend.dispatchBatch({
        workerId: W_OLD,
        queues: ['obs_q1'],
        actors: [{ name: 'obs_alpha', maxConcurrent: null }],
        limit: 2,
        leaseMs: HOUR,
        oversample: 2,
      });
      expect(claimed).toHaveLength(2);
      const cancelled = await client.enqueue(beta, {});
      await client.cancel(cancelled.jobId);
      await client.enqueue(beta, {}, { delay: '1h' });
      await client.enqueue(unregistered, {});

      expect(await h.backend.observeActors({ aliveWithinMs: HOUR })).toEqual([
        actorOf('obs_alpha', 'obs_q1', { pending: 3, scheduled: 2, running: 2 }),
        actorOf('obs_beta', 'obs_q2', { scheduled: 1 }),
        actorOf('obs_idle', 'obs_q3'),
      ]);
    });

    it("counts the alive workers serving each actor's home queue, once per worker", async () => {
      await register(alpha, beta);
      await h.backend.registerWorker(registration(W_OLD, ['obs_q1', 'obs_q2']));
      await h.timeTravel(2 * 60_000);
      await h.backend.registerWorker(registration(W_NEW, ['obs_q1', 'obs_q1']));

      expect(await h.backend.observeActors({ aliveWithinMs: 60_000 })).toEqual([
        actorOf('obs_alpha', 'obs_q1', { workersAlive: 1 }),
        actorOf('obs_beta', 'obs_q2'),
      ]);
      expect(await h.backend.observeActors({ aliveWithinMs: HOUR })).toEqual([
        actorOf('obs_alpha', 'obs_q1', { workersAlive: 2 }),
        actorOf('obs_beta', 'obs_q2', { workersAlive: 1 }),
      ]);
    });

    it('refuses a malformed request, naming the field', async () => {
      for (const bad of [-1, Number.NaN, '30s'])
        await expect(h.backend.observeActors({ aliveWithinMs: bad as number })).rejects.toThrow(
          InvalidArgumentError,
        );
      await expect(h.backend.observeActors({ aliveWithinMs: -1 })).rejects.toThrow(/aliveWithinMs/);
    });
  });
}
