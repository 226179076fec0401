/**
 * Stored values follow the reference schema where it names them: `jobs.retry_kind` stores
 * `non_retryable`, while the TypeScript API keeps `nonRetryable`. The Postgres backend maps the
 * value on every write path (single insert, gated insert, batch insert, COPY) and when it reads a
 * row back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { EnqueueArgs, RetryKind } from '../../src/backend/types.js';
import { newJobId } from '../../src/core/ids.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
let backend: PostgresBackend;
beforeAll(async () => {
  db = await migratedSchema('stored');
  backend = new PostgresBackend(db.driver, { schema: db.schema });
});
afterAll(async () => {
  await db.drop();
});

function args(retryKind: RetryKind, overrides: Partial<EnqueueArgs> = {}): EnqueueArgs {
  return {
    id: newJobId(),
    actor: 'stored_values',
    queue: 'q',
    identityKey: null,
    fairnessKey: null,
    payloadJson: '{}',
    payloadSchemaVer: 1,
    priority: 0,
    maxAttempts: 3,
    retryKind,
    scheduledAt: null,
    scheduledDelayMs: null,
    scheduleToClose: null,
    scheduleToCloseIntervalMs: null,
    startToCloseMs: null,
    heartbeatTimeoutMs: null,
    idempotencyKey: null,
    idempotencyScope: '',
    traceId: null,
    spanId: null,
    metadata: {},
    tags: [],
    maxPending: null,
    singleton: false,
    uniqueForMs: null,
    uniqueStates: [],
    ...overrides,
  };
}

/** `retry_kind` as stored, by job id. */
async function stored(ids: readonly string[]): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ id: string; retry_kind: string }>(
    `SELECT id, retry_kind FROM "${db.schema}".jobs WHERE id = ANY ($1::uuid[])`,
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.id, r.retry_kind]));
}

const KINDS: readonly RetryKind[] = ['transient', 'indefinite', 'nonRetryable'];
const STORED: Record<RetryKind, string> = {
  transient: 'transient',
  indefinite: 'indefinite',
  nonRetryable: 'non_retryable',
};

describe('jobs.retry_kind', () => {
  it('is stored under the reference names by every enqueue path and read back under the API names', async () => {
    const single = KINDS.map((k) => args(k));
    const gated = KINDS.map((k, i) => args(k, { idempotencyKey: `stored-${i}` }));
    const batch = KINDS.map((k) => args(k));
    // Every item agrees: the batch statement takes one value for the column instead of an array.
    const uniform = [args('nonRetryable'), args('nonRetryable')];
    const fast = KINDS.map((k) => args(k));

    for (const a of [...single, ...gated]) expect((await backend.enqueue(a)).retryKind).toBe(a.retryKind);
    for (const list of [batch, uniform])
      expect((await backend.enqueueBatch(list)).map((r) => r.retryKind)).toEqual(
        list.map((a) => a.retryKind),
      );
    expect(await backend.enqueueBatchFast(fast)).toBe(fast.length);

    const all = [...single, ...gated, ...batch, ...uniform, ...fast];
    expect(await stored(all.map((a) => a.id))).toEqual(
      Object.fromEntries(all.map((a) => [a.id, STORED[a.retryKind]])),
    );
    for (const a of all) expect((await backend.get(a.id))?.retryKind).toBe(a.retryKind);
  });

  it('refuses the API spelling in the table', async () => {
    await expect(
      db.pool.query(
        `INSERT INTO "${db.schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
         VALUES (gen_random_uuid(), 'a', 'q', '{}', 'pending', 1, 'nonRetryable', now())`,
      ),
    ).rejects.toMatchObject({ code: '23514', constraint: 'jobs_retry_kind_check' });
  });
});
