/**
 * A batch's finalizer that snoozed while its children ran runs again as soon as the batch ends, on
 * a real worker against Postgres: the batch's trigger makes it pending and its NOTIFY wakes the
 * producer. The snooze and the producer's polls (with and without NOTIFY) are 60 s, longer than
 * the test waits: without the wake, the finalizer would run only at the next poll.
 */
import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

/** Children run until the test lets them return. */
let releaseChildren!: () => void;
const childrenMayEnd = new Promise<void>((resolve) => (releaseChildren = resolve));
const child = actor({ name: 'fw_child', queue: 'fwake', retry: { kind: 'nonRetryable' } }, async () => {
  await childrenMayEnd;
});

let tq: TaskQ;
/** Each run of the finalizer: how many children it found succeeded, or null when it snoozed. */
const runs: (number | null)[] = [];
const finalizer = actor({ name: 'fw_final', queue: 'fwake' }, async (p: { batchId: string }) => {
  try {
    const status = await tq.waitForBatch(p.batchId, { snoozeInterval: '60s' });
    runs.push(status.succeeded);
  } catch (err) {
    runs.push(null);
    throw err;
  }
});

let db: TestSchema;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('fwake');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = await startTestWorker([child, finalizer], db.schema, {
    queues: ['fwake'],
    maxConcurrency: 8,
    pollInterval: '60s',
    notifyPollInterval: '60s',
  });
});
afterAll(async () => {
  releaseChildren();
  await worker?.stop();
  await tq?.close();
  await db.drop();
});

describe('a snoozed finalizer', () => {
  it('runs as soon as its batch ends, long before its snooze runs out', async () => {
    const batchId = randomUUID();
    const handle = await tq.enqueueBatch([batchItem(child, {}), batchItem(child, {}), batchItem(child, {})], {
      batchId,
      finalizer: batchItem(finalizer, { batchId }),
    });
    const finalizerId = handle.finalizerHandle!.jobId;
    await waitFor(() => runs.length === 1, 10_000, 'the finalizer to run and snooze');
    expect(runs).toEqual([null]);
    await waitFor(
      async () => (await tq.getRow(finalizerId))?.status === 'scheduled',
      10_000,
      'the snooze to be written',
    );

    releaseChildren();
    await waitFor(
      async () => (await tq.getRow(finalizerId))?.status === 'succeeded',
      20_000,
      'the finalizer to succeed once the batch ended',
    );
    expect(runs).toEqual([null, 3]);
    const events = await db.pool.query<{ detail: Record<string, unknown> }>(
      `SELECT detail FROM "${db.schema}".job_events WHERE job_id = $1 AND kind = 'state_change' ORDER BY id`,
      [finalizerId],
    );
    expect(events.rows.map((r) => r.detail.reason)).toContain('batch_ended');
  });
});
