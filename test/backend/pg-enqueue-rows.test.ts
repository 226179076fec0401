import { describe, expect, it } from 'vitest';

import { insertedRows } from '../../src/backend/postgres/pg-enqueue.js';
import type { EnqueueArgs } from '../../src/backend/types.js';

const args = (id: string) =>
  ({
    id,
    actor: 'a',
    queue: 'q',
    identityKey: null,
    fairnessKey: null,
    payloadJson: '{}',
    payloadSchemaVer: 1,
    priority: 0,
    maxAttempts: 1,
    retryKind: 'transient',
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
  }) as EnqueueArgs;
const returned = (id: string) => ({
  id,
  status: 'scheduled',
  created_ms: 1000,
  scheduled_ms: 5000,
  schedule_to_close_ms: null,
});
const summary = (inserted: number) => ({ id: null, status: null, created_ms: 1000, inserted });

describe('insertedRows (pairing the rows enqueueBatch returns with its items)', () => {
  // a and c carry idempotency keys; b and d do not.
  const list = ['a', 'b', 'c', 'd'].map((id) => ({
    ...args(id),
    idempotencyKey: id === 'a' || id === 'c' ? id : null,
  }));

  it('pairs returned rows in item order; key-less items not returned were inserted pending at the insert time', () => {
    const out = insertedRows(list, [returned('a'), returned('d'), summary(3)]);
    expect(out.map((r) => r?.id)).toEqual(['a', 'b', undefined, 'd']);
    expect(out[0]?.status).toBe('scheduled');
    expect(out[1]?.status).toBe('pending');
    expect(out[1]?.createdAt.getTime()).toBe(1000);
    expect(out[1]?.scheduledAt.getTime()).toBe(1000);
    expect(out[3]?.scheduledAt.getTime()).toBe(5000);
  });

  it('pairs rows by id when they come back in another order', () => {
    const out = insertedRows(list, [returned('d'), returned('a'), summary(3)]);
    expect(out.map((r) => r?.id)).toEqual(['a', 'b', undefined, 'd']);
  });

  it('refuses a result whose count of inserted jobs does not add up', () => {
    expect(() => insertedRows(list, [returned('a'), summary(4)])).toThrow(/4 jobs inserted, 3 accounted for/);
    expect(() => insertedRows(list, [returned('a')])).toThrow(/no summary row/);
  });
});
