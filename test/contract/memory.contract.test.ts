import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { defineBackendContract, type ContractHarness } from './backend-contract.js';

defineBackendContract('InMemoryBackend', async (): Promise<ContractHarness> => {
  const clock = new FakeClock(Date.now());
  let backend = new InMemoryBackend({ clock });
  return {
    get backend() {
      return backend;
    },
    async begin() {
      const tx = backend.beginTransaction();
      return { conn: tx, commit: () => tx.commit(), rollback: () => tx.rollback() };
    },
    async setStoredMaxPending(actor, value) {
      backend.actorConfig.set(actor, {
        actor,
        queue: 'default',
        maxConcurrent: null,
        maxPending: value,
        resultTtlMs: null,
        metadata: {},
        updatedAt: clock.now(),
      });
    },
    async timeTravel(ms) {
      clock.advance(ms);
    },
    async reset() {
      clock.moveTo(Date.now());
      backend = new InMemoryBackend({ clock });
    },
    async close() {},
  };
});
