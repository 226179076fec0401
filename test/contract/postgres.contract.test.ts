import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { migratedSchema } from '../helpers/db.js';
import { defineBackendContract, type ContractHarness } from './backend-contract.js';
import { defineWorkerBackendContract } from './worker-backend-contract.js';

async function harness(): Promise<ContractHarness> {
  const db = await migratedSchema('contract');
  const q = `"${db.schema}"`;
  const backend = new PostgresBackend(db.driver, { schema: db.schema });
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
      await db.pool.query(
        `UPDATE ${q}.jobs SET created_at = created_at - $1 * interval '1 millisecond',
           scheduled_at = scheduled_at - $1 * interval '1 millisecond',
           schedule_to_close = schedule_to_close - $1 * interval '1 millisecond',
           finished_at = finished_at - $1 * interval '1 millisecond'`,
        [ms],
      );
    },
    async reset() {
      await db.pool.query(`TRUNCATE ${q}.jobs, ${q}.actor_config, ${q}.queues CASCADE`);
    },
    async close() {
      await db.drop();
    },
  };
}

defineBackendContract('PostgresBackend', harness);
defineWorkerBackendContract('PostgresBackend', harness);
