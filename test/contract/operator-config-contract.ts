/**
 * Operator configuration through the Backend (queue modes and caps, actors' capacity), schema
 * verification and the rate-limit stores, run unchanged against both backends.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../src/errors/index.js';
import { silentLogger } from '../../src/obs/logger.js';
import type { ContractHarness } from './backend-contract.js';

export function defineOperatorConfigContract(
  name: string,
  makeHarness: () => Promise<ContractHarness>,
): void {
  describe(`Backend operator configuration: ${name}`, () => {
    let h: ContractHarness;
    beforeAll(async () => {
      h = await makeHarness();
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(async () => {
      await h.reset();
    });

    it('creates queue rows on first change and keeps the other field', async () => {
      expect(await h.backend.listQueues()).toEqual([]);
      const a = await h.backend.setQueueMode('q_b', 'round_robin');
      expect(a).toMatchObject({ name: 'q_b', mode: 'round_robin', maxConcurrent: null });
      expect(a.updatedAt).toBeInstanceOf(Date);
      const b = await h.backend.setQueueMaxConcurrent('q_b', 4);
      expect(b).toMatchObject({ name: 'q_b', mode: 'round_robin', maxConcurrent: 4 });
      await h.backend.setQueueMaxConcurrent('q_a', 2);
      expect((await h.backend.listQueues()).map((q) => [q.name, q.mode, q.maxConcurrent])).toEqual([
        ['q_a', 'strict_fifo', 2],
        ['q_b', 'round_robin', 4],
      ]);
      expect(await h.backend.setQueueMaxConcurrent('q_b', null)).toMatchObject({ maxConcurrent: null });
    });

    it('refuses a bad queue name, mode or cap and writes nothing', async () => {
      await expect(h.backend.setQueueMode('bad name', 'strict_fifo')).rejects.toThrow(InvalidArgumentError);
      await expect(h.backend.setQueueMode('q', 'fifo' as 'strict_fifo')).rejects.toThrow(
        /strict_fifo or round_robin/,
      );
      await expect(h.backend.setQueueMaxConcurrent('q', 0)).rejects.toThrow(/integer >= 1/);
      await expect(h.backend.setQueueMaxConcurrent('q', 1.5)).rejects.toThrow(InvalidArgumentError);
      expect(await h.backend.listQueues()).toEqual([]);
    });

    it('changes only the named capacity fields of a registered actor; null for an unknown one', async () => {
      expect(await h.backend.setActorCapacity('nobody', { maxPending: 3 })).toBeNull();
      await h.backend.syncActorConfig([{ actor: 'cap_actor', queue: 'default', metadata: {} }], {
        force: false,
      });
      const a = await h.backend.setActorCapacity('cap_actor', { maxPending: 3, resultTtlMs: 60_000 });
      expect(a).toMatchObject({
        actor: 'cap_actor',
        maxPending: 3,
        maxConcurrent: null,
        resultTtlMs: 60_000,
      });
      const b = await h.backend.setActorCapacity('cap_actor', { maxConcurrent: 0, maxPending: null });
      expect(b).toMatchObject({ maxConcurrent: 0, maxPending: null, resultTtlMs: 60_000 });
      await expect(h.backend.setActorCapacity('cap_actor', { maxPending: -1 })).rejects.toThrow(
        /integer >= 0/,
      );
      expect((await h.backend.getActorConfigs(['cap_actor']))[0]).toMatchObject({ maxPending: null });
    });

    it('verifies its schema and builds its rate-limit stores', async () => {
      await h.backend.verifySchema();
      const stores = h.backend.rateLimitStores({ pgFallback: true, logger: silentLogger });
      expect(stores.shared).toBeDefined();
      expect(stores.redis).toBeNull();
      await stores.close();
    });
  });
}
