import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { defineBackendContract } from './backend-contract.js';
import { defineWorkerBackendContract } from './worker-backend-contract.js';
import { defineMaintenanceContract } from './maintenance-contract.js';
import { defineOperatorConfigContract } from './operator-config-contract.js';
import { defineFleetObservationContract } from './fleet-observation-contract.js';
import { defineActivityObservationContract } from './activity-observation-contract.js';
import { defineActorObservationContract } from './actor-observation-contract.js';
import { defineExplainContract } from './explain-contract.js';
import { defineScheduleContract } from './schedule-contract.js';
import { defineBatchContract, type BatchContractHarness } from './batch-contract.js';

async function harness(): Promise<BatchContractHarness> {
  const clock = new FakeClock(Date.now());
  const backend = new InMemoryBackend({ clock });
  return {
    backend,
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
    async setStoredMaxConcurrent(actor, value) {
      const row = backend.actorConfig.get(actor);
      backend.actorConfig.set(actor, {
        actor,
        queue: 'default',
        maxPending: null,
        resultTtlMs: null,
        metadata: {},
        ...row,
        maxConcurrent: value,
        updatedAt: clock.now(),
      });
    },
    async setStoredResultTtl(actor, ms) {
      const row = backend.actorConfig.get(actor);
      backend.actorConfig.set(actor, {
        actor,
        queue: 'default',
        maxPending: null,
        maxConcurrent: null,
        metadata: {},
        ...row,
        resultTtlMs: ms,
        updatedAt: clock.now(),
      });
    },
    async setQueueMode(queue, mode) {
      await backend.setQueueMode(queue, mode);
    },
    async timeTravel(ms) {
      clock.advance(ms);
    },
    async reset() {
      clock.moveTo(Date.now());
      backend.clear();
    },
    async reopenBatch(batchId) {
      // No write path reaches this state: reach into the store, as SQL does on Postgres.
      const store = (backend as unknown as { batches: { rows: Map<string, Record<string, unknown>> } })
        .batches;
      Object.assign(store.rows.get(batchId)!, { status: 'active', completedAt: null });
    },
    async close() {},
  };
}

defineBackendContract('InMemoryBackend', harness);
defineWorkerBackendContract('InMemoryBackend', harness);
defineMaintenanceContract('InMemoryBackend', harness);
defineOperatorConfigContract('InMemoryBackend', harness);
defineFleetObservationContract('InMemoryBackend', harness);
defineActorObservationContract('InMemoryBackend', harness);
defineActivityObservationContract('InMemoryBackend', harness);
defineExplainContract('InMemoryBackend', harness);
defineScheduleContract('InMemoryBackend', harness);
defineBatchContract('InMemoryBackend', harness);
