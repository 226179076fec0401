import type { ActorConfigRow, QueueMode } from '../backend/types.js';
import type { Driver } from '../db/driver.js';
import { toMsOrNull, type Duration } from '../duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { renderSql, validateSchemaName } from '../schema-name.js';
import { checkActorName, checkQueueName } from '../text-checks.js';
import * as SQL from './sql.generated.js';

/** A `queues` row: dispatch mode and optional fleet-wide cap of one queue. */
export interface QueueConfigRow {
  name: string;
  mode: QueueMode;
  /** Fleet-wide cap on running jobs of the queue (enforced with reservation slots), or null. */
  maxConcurrent: number | null;
  updatedAt: Date;
}

type Raw = Record<string, unknown>;

const toQueue = (r: Raw): QueueConfigRow => ({
  name: r.name as string,
  mode: r.mode as QueueMode,
  maxConcurrent: r.max_concurrent === null ? null : Number(r.max_concurrent),
  updatedAt: r.updated_at as Date,
});

const toActorConfig = (r: Raw): ActorConfigRow => ({
  actor: r.actor as string,
  queue: r.queue as string,
  maxConcurrent: r.max_concurrent === null ? null : Number(r.max_concurrent),
  maxPending: r.max_pending === null ? null : Number(r.max_pending),
  resultTtlMs: r.result_ttl_ms === null ? null : Number(r.result_ttl_ms),
  metadata: r.metadata as Record<string, unknown>,
  updatedAt: r.updated_at as Date,
});

/**
 * Operator configuration stored in Postgres: queue modes and caps (`queues`) and actors'
 * operator-owned capacity (`actor_config`). Postgres only; used by the `taskq queues` and
 * `taskq actor-config` commands.
 */
export class AdminClient {
  private readonly sql: Record<keyof typeof SQL, string>;

  constructor(
    private readonly driver: Driver,
    schema = 'taskq',
  ) {
    const s = validateSchemaName(schema);
    this.sql = Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, renderSql(v, s)])) as Record<
      keyof typeof SQL,
      string
    >;
  }

  /** Every configured queue. */
  async listQueues(): Promise<QueueConfigRow[]> {
    return (await this.driver.query(this.sql.listQueues)).rows.map(toQueue);
  }

  /** Sets a queue's dispatch mode (creates its row). */
  async setQueueMode(queue: string, mode: QueueMode): Promise<QueueConfigRow> {
    checkQueueName(queue, 'queue');
    if (mode !== 'strict_fifo' && mode !== 'round_robin')
      throw new InvalidArgumentError('mode', mode, 'must be strict_fifo or round_robin');
    const res = await this.driver.query(this.sql.upsertQueueMode, [queue, mode]);
    return toQueue(res.rows[0] as Raw);
  }

  /**
   * Sets (or with `null`, clears) a queue's fleet-wide cap. Workers read it at startup: restart them
   * after a change.
   */
  async setQueueMaxConcurrent(queue: string, maxConcurrent: number | null): Promise<QueueConfigRow> {
    checkQueueName(queue, 'queue');
    if (maxConcurrent !== null && (!Number.isInteger(maxConcurrent) || maxConcurrent < 1)) {
      throw new InvalidArgumentError(
        'maxConcurrent',
        maxConcurrent,
        'must be an integer >= 1 (or null to clear; 0 is not a cap, use the actor-level maxConcurrent 0 to drain)',
      );
    }
    const res = await this.driver.query(this.sql.upsertQueueMaxConcurrent, [queue, maxConcurrent]);
    return toQueue(res.rows[0] as Raw);
  }

  /** Stored actor configuration (all, or one actor). */
  async listActorConfigs(actor?: string): Promise<ActorConfigRow[]> {
    return (await this.driver.query(this.sql.listActorConfigs, [actor ?? null])).rows.map(toActorConfig);
  }

  /**
   * Changes an actor's operator-owned capacity: `undefined` leaves a field as it is, `null` clears
   * it (the code literal applies again), a value stores it. Returns null when the actor has no row
   * (no worker has registered it yet).
   */
  async setActorCapacity(
    actor: string,
    changes: { maxConcurrent?: number | null; maxPending?: number | null; resultTtl?: Duration | null },
  ): Promise<ActorConfigRow | null> {
    checkActorName(actor, 'actor');
    const intOrNull = (v: number | null | undefined, field: string): number | null => {
      if (v === undefined || v === null) return null;
      if (!Number.isInteger(v) || v < 0)
        throw new InvalidArgumentError(field, v, 'must be an integer >= 0 (or null to clear)');
      return v;
    };
    const res = await this.driver.query(this.sql.setActorCapacity, [
      actor,
      intOrNull(changes.maxConcurrent, 'maxConcurrent'),
      intOrNull(changes.maxPending, 'maxPending'),
      toMsOrNull(changes.resultTtl, 'resultTtl', 'nonNegative'),
      changes.maxConcurrent !== undefined,
      changes.maxPending !== undefined,
      changes.resultTtl !== undefined,
    ]);
    return res.rows[0] ? toActorConfig(res.rows[0]) : null;
  }
}
