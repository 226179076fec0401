/**
 * A job whose handler has finished keeps its lease until its outcome is written. Outcomes are
 * written behind the handlers, in batches, one write after another; when a write is slow (here: a
 * row lock held by another transaction, as a batch's abort or a long sweep holds one), the outcomes
 * queued behind it wait too. Their leases are renewed meanwhile, and the heartbeat does not wait on
 * the locked row, so no reclaim mistakes a finished job for a crashed one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, waitForBlockedBy, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { holdsFor, waitFor } from '../helpers/wait.js';

const LEASE_MS = 3000;

/** Handlers that run until the test lets them return. */
const gates = new Map<string, () => void>();
const gated = actor(
  { name: 'gated', queue: 'settling', retry: { maxAttempts: 1 } },
  async (p: { name: string }) => {
    await new Promise<void>((resolve) => gates.set(p.name, resolve));
    return p.name;
  },
);

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('settling');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = await startTestWorker([gated], db.schema, {
    queues: ['settling'],
    maxConcurrency: 2,
    heartbeatInterval: '750ms',
    lockLease: `${LEASE_MS}ms`,
    sweepInterval: '1s',
  });
});
afterAll(async () => {
  await worker?.stop();
  await tq?.close();
  await db.drop();
});

describe('a finished job whose outcome waits for its write', () => {
  it('keeps its lease while the write ahead of it waits on a lock, and ends as its handler did', async () => {
    const first = await tq.enqueue(gated, { name: 'first' });
    const second = await tq.enqueue(gated, { name: 'second' });
    await waitFor(() => gates.has('first') && gates.has('second'), 10_000, 'both handlers to run');

    // Another transaction holds the first job's row: its outcome write waits for it.
    const holder: pg.PoolClient = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${db.schema}".jobs WHERE id = $1 FOR UPDATE`, [first.jobId]);
      gates.get('first')!();
      await waitForBlockedBy(db.pool, holder, 'the first outcome write to wait on the row lock');
      // The second outcome queues behind that write.
      gates.get('second')!();

      // Well past two leases and the sweeps between them, the second job is still this worker's.
      await holdsFor(
        async () => (await tq.getRow(second.jobId))?.status === 'running',
        2 * LEASE_MS + 1500,
        'the second job running (its outcome not yet written, its lease renewed)',
      );
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }

    expect(await first.wait({ timeout: '10s' })).toBe('first');
    expect(await second.wait({ timeout: '10s' })).toBe('second');
    for (const h of [first, second])
      expect((await h.attempts()).map((a) => a.outcome)).toEqual(['succeeded']);
  }, 30_000);
});
