import { describe, expect, it } from 'vitest';

import { insertedRows } from '../src/backend/postgres/pg-enqueue.js';
import type { EnqueueArgs } from '../src/backend/types.js';

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
  status: 'pending',
  created_ms: 1,
  scheduled_ms: 1,
  schedule_to_close_ms: null,
});

describe('insertedRows (pairing RETURNING rows with batch items)', () => {
  const list = ['a', 'b', 'c', 'd'].map(args);

  it('pairs rows returned in item order, leaving skipped items undefined', () => {
    const out = insertedRows(list, [returned('a'), returned('c'), returned('d')]);
    expect(out.map((r) => r?.id)).toEqual(['a', undefined, 'c', 'd']);
  });

  it('pairs rows by id when they come back in another order', () => {
    const out = insertedRows(list, [returned('d'), returned('a'), returned('b')]);
    expect(out.map((r) => r?.id)).toEqual(['a', 'b', undefined, 'd']);
  });
});
