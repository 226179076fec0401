/**
 * Issue 63, metrics in one process: a worker's instruments on the global MeterProvider (an
 * in-memory reader collects them), the fleet gauges read at most once per `queueDepthInterval` /
 * `reservationSlotsInterval` (reads counted on the worker's backend), and `otelEnabled: false`
 * recording nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { PostgresBackend } from '../../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../../src/client/taskq.js';
import { actor } from '../../../src/core/actor.js';
import type { WorkerSettingsInput } from '../../../src/settings/load-worker-settings.js';
import {
  registerMemoryMetrics,
  sumOf,
  unregisterMemoryMetrics,
  type MetricJson,
} from '../../fixtures/otel-memory.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../../helpers/db.js';
import { startTestWorker } from '../../helpers/in-process-worker.js';
import { waitFor } from '../../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;
let sdk: ReturnType<typeof registerMemoryMetrics>;

beforeAll(async () => {
  sdk = registerMemoryMetrics();
  db = await migratedSchema('wmet');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
  await unregisterMemoryMetrics(sdk.provider);
});

const ok = actor({ name: 'wm_ok', queue: 'wm', payload: z.object({ n: z.number() }) }, (p) => p.n);
const bad = actor(
  { name: 'wm_bad', queue: 'wm', payload: z.object({}), retry: { kind: 'nonRetryable' } },
  () => {
    throw new TypeError('no good');
  },
);
/** Enqueued on a queue no worker serves: it stays pending. */
const idle = actor({ name: 'wm_idle', queue: 'wm_nobody', payload: z.object({}) }, () => undefined);

/** A Postgres backend on the schema that counts its `observeFleet` reads. */
function countingBackend(): { backend: PostgresBackend; reads: () => number } {
  const backend = new PostgresBackend(db.driver, { schema: db.schema });
  const observe = backend.observeFleet.bind(backend);
  let reads = 0;
  backend.observeFleet = (request) => {
    reads++;
    return observe(request);
  };
  return { backend, reads: () => reads };
}

async function startCounted(overrides: WorkerSettingsInput) {
  const counted = countingBackend();
  const worker = await startTestWorker(
    [ok, bad],
    db.schema,
    { queues: ['wm'], ...overrides },
    {
      backend: counted.backend,
    },
  );
  return { worker, reads: counted.reads };
}

describe('worker metrics in one process', () => {
  it('records outcomes, claims, the leader and the fleet gauges; reads the fleet once per interval', async () => {
    const { worker, reads } = await startCounted({
      queueDepthInterval: '1h',
      reservationSlotsInterval: '1h',
    });
    let m: MetricJson[];
    try {
      const handles = [
        ...(await Promise.all([1, 2].map((n) => tq.enqueue(ok, { n })))),
        await tq.enqueue(bad, {}),
      ];
      await tq.enqueue(idle, {});
      for (const h of handles) await tq.waitForTerminal(h.jobId, 10_000);
      await waitFor(() => worker.isLeader, 10_000, 'the worker to lead');
      m = await sdk.reader.points();
      expect(reads()).toBe(1); // six fleet gauges, one read
      await sdk.reader.points();
      expect(reads()).toBe(1); // within the hour
    } finally {
      await worker.stop();
    }
    const w = { 'messaging.destination.name': 'wm' };
    expect(sumOf(m, 'messaging.client.consumed.messages', { ...w, 'taskq.outcome': 'succeeded' })).toBe(2);
    expect(
      sumOf(m, 'messaging.client.consumed.messages', {
        ...w,
        'taskq.actor': 'wm_bad',
        'taskq.outcome': 'failed',
      }),
    ).toBe(1);
    expect(sumOf(m, 'messaging.process.duration', { 'taskq.actor': 'wm_ok' })).toBe(2);
    expect(sumOf(m, 'taskq.dispatch.jobs')).toBe(3);
    expect(sumOf(m, 'taskq.maintenance_leader.is_leader')).toBe(1);
    expect(sumOf(m, 'taskq.worker.slots')).toBe(4);
    expect(sumOf(m, 'taskq.notify.connected')).toBe(1);
    // Fleet-wide: the job on the queue nobody serves, alive workers per queue, the leader.
    expect(
      sumOf(m, 'taskq.queue.jobs', { 'messaging.destination.name': 'wm_nobody', 'taskq.status': 'pending' }),
    ).toBe(1);
    expect(sumOf(m, 'taskq.queue.workers_alive', { 'messaging.destination.name': 'wm_nobody' })).toBe(0);
    expect(sumOf(m, 'taskq.queue.workers_alive', { 'messaging.destination.name': 'wm' })).toBe(1);
    expect(sumOf(m, 'taskq.fleet.leaders')).toBe(1);
  });

  it.each([
    ['queueDepthInterval', { queueDepthInterval: '1s', reservationSlotsInterval: '1h' }],
    [
      'reservationSlotsInterval, whatever queueDepthInterval says',
      { queueDepthInterval: '1h', reservationSlotsInterval: '1s' },
    ],
  ] as const)('reads the fleet again once %s has passed', async (_what, intervals) => {
    const { worker, reads } = await startCounted(intervals);
    try {
      await sdk.reader.points();
      expect(reads()).toBe(1);
      // Collect until the 1 s interval lets a second read through (no fixed sleep).
      await waitFor(
        async () => {
          await sdk.reader.points();
          return reads() >= 2;
        },
        10_000,
        'a second fleet read',
      );
    } finally {
      await worker.stop();
    }
  });

  it('records nothing with otelEnabled false', async () => {
    const quiet = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, otelEnabled: false });
    const { worker, reads } = await startCounted({ otelEnabled: false });
    const before = await sdk.reader.points();
    try {
      const h = await quiet.enqueue(ok, { n: 9 });
      await quiet.waitForTerminal(h.jobId, 10_000);
      await quiet.cancel(h.jobId);
    } finally {
      await worker.stop();
      await quiet.close();
    }
    const after = await sdk.reader.points();
    expect(reads()).toBe(0);
    for (const name of [
      'messaging.client.consumed.messages',
      'taskq.dispatch.jobs',
      'taskq.cancellation.requested',
    ])
      expect(sumOf(after, name), name).toBe(sumOf(before, name));
  });
});
