import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { migratedSchema } from '../helpers/db.js';
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
  const db = await migratedSchema('contract');
  const q = `"${db.schema}"`;
  const backend = new PostgresBackend(db.driver, { schema: db.schema });
  // Every claim tries the lean statement first, so each case runs it (and its hand-over to the
  // full one where the case needs that) instead of only the cases before the first hand-over.
  backend.dispatcher.leanPauseMs = 0;
  return {
    backend,
    async begin() {
      const conn = await db.pool.connect();
      await conn.query('BEGIN');
      return {
        conn,
        async commit() {
          await conn.query('COMMIT');
          conn.release();
        },
        async rollback() {
          await conn.query('ROLLBACK');
          conn.release();
        },
      };
    },
    async setStoredMaxPending(actor, value) {
      await db.pool.query(
        `INSERT INTO ${q}.actor_config (actor, queue, max_pending) VALUES ($1, 'default', $2)
         ON CONFLICT (actor) DO UPDATE SET max_pending = EXCLUDED.max_pending`,
        [actor, value],
      );
    },
    async setStoredMaxConcurrent(actor, value) {
      await db.pool.query(
        `INSERT INTO ${q}.actor_config (actor, queue, max_concurrent) VALUES ($1, 'default', $2)
         ON CONFLICT (actor) DO UPDATE SET max_concurrent = EXCLUDED.max_concurrent`,
        [actor, value],
      );
    },
    async setStoredResultTtl(actor, ms) {
      await db.pool.query(
        `INSERT INTO ${q}.actor_config (actor, queue, result_ttl) VALUES ($1, 'default', $2 * interval '1 millisecond')
         ON CONFLICT (actor) DO UPDATE SET result_ttl = EXCLUDED.result_ttl`,
        [actor, ms],
      );
    },
    async setQueueMode(queue, mode) {
      await db.pool.query(
        `INSERT INTO ${q}.queues (name, mode) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET mode = EXCLUDED.mode`,
        [queue, mode],
      );
    },
    async timeTravel(ms) {
      // Moving every stored time back is, for the database clock, the same as time moving forward.
      const back = (cols: string[]): string =>
        cols.map((c) => `${c} = ${c} - $1 * interval '1 millisecond'`).join(', ');
      await db.pool.query(
        `UPDATE ${q}.jobs SET ${back(['created_at', 'scheduled_at', 'schedule_to_close', 'finished_at', 'started_at', 'lock_expires_at', 'cancel_requested_at', 'last_heartbeat_at', 'result_expires_at'])}`,
        [ms],
      );
      await db.pool.query(`UPDATE ${q}.job_event_log SET ${back(['occurred_at'])}`, [ms]);
      await db.pool.query(`UPDATE ${q}.workers SET ${back(['last_seen_at', 'started_at'])}`, [ms]);
      await db.pool.query(
        `UPDATE ${q}.jobs_archive SET ${back(['archived_at', 'expire_at', 'finished_at'])}`,
        [ms],
      );
      await db.pool.query(
        `UPDATE ${q}.maintenance_leader SET ${back(['acquired_at', 'last_seen_at', 'expires_at'])}`,
        [ms],
      );
      await db.pool.query(
        `UPDATE ${q}.reservation_slots SET ${back(['acquired_at', 'lease_expires_at', 'last_used_at'])}`,
        [ms],
      );
      await db.pool.query(
        `UPDATE ${q}.cron_schedules SET ${back(['next_fire_at', 'last_fired_at', 'created_at', 'updated_at'])}`,
        [ms],
      );
      await db.pool.query(`UPDATE ${q}.cron_fires SET ${back(['fire_at', 'fired_at'])}`, [ms]);
      await db.pool.query(`UPDATE ${q}.batches SET ${back(['created_at', 'completed_at'])}`, [ms]);
    },
    async reset() {
      await db.pool.query(
        `TRUNCATE ${q}.jobs, ${q}.actor_config, ${q}.queues, ${q}.workers, ${q}.jobs_archive,
           ${q}.reservation_slots, ${q}.rate_limit_buckets, ${q}.rate_limit_window_entries,
           ${q}.cron_schedules, ${q}.cron_fires, ${q}.batches CASCADE`,
      );
      await db.pool.query(`UPDATE ${q}.maintenance_leader SET expires_at = '-infinity', holds_lock = false`);
    },
    async reopenBatch(batchId) {
      await db.pool.query(`UPDATE ${q}.batches SET status = 'active', completed_at = NULL WHERE id = $1`, [
        batchId,
      ]);
    },
    async close() {
      await db.drop();
    },
  };
}

defineBackendContract('PostgresBackend', harness);
defineWorkerBackendContract('PostgresBackend', harness);
defineMaintenanceContract('PostgresBackend', harness);
defineOperatorConfigContract('PostgresBackend', harness);
defineFleetObservationContract('PostgresBackend', harness);
defineActorObservationContract('PostgresBackend', harness);
defineActivityObservationContract('PostgresBackend', harness);
defineExplainContract('PostgresBackend', harness);
defineScheduleContract('PostgresBackend', harness);
defineBatchContract('PostgresBackend', harness);
