/**
 * Issue 63, metrics: jobs enqueued in this process (an in-memory metrics SDK registered) run in a
 * worker process with its own in-memory SDK, which prints its metrics at exit. Successes, a retry,
 * a failure and a cancel must be counted by outcome on the worker's side; the cancel call and a
 * `maxPending` refusal on this side.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { MaxPendingExceededError } from '../../src/errors/backpressure-errors.js';
import {
  registerMemoryMetrics,
  sumOf,
  unregisterMemoryMetrics,
  type MetricJson,
} from '../fixtures/otel-memory.js';
import { tracedFail, tracedFlaky, tracedOk, tracedWaits } from '../fixtures/tracing-actors.js';
import { useProcessFleet } from '../helpers/process-fleet.js';
import { waitFor } from '../helpers/wait.js';
import { z } from 'zod';

const fleet = useProcessFleet('metricsx', { TASKQ_QUEUES: 'traced' });
let sdk: ReturnType<typeof registerMemoryMetrics>;

beforeAll(() => {
  sdk = registerMemoryMetrics();
});
afterAll(async () => {
  await unregisterMemoryMetrics(sdk.provider);
});

/** The metrics the worker process printed at exit. */
function workerMetrics(stdout: string[]): MetricJson[] {
  for (const line of stdout) {
    if (!line.startsWith('{')) continue;
    const msg = JSON.parse(line) as { event?: string; metrics?: MetricJson[] };
    if (msg.event === 'metrics') return msg.metrics!;
  }
  throw new Error(`the worker printed no metrics: ${stdout.join('\n').slice(-2000)}`);
}

/** Never run: only enqueued, against its maxPending. */
const capped = actor(
  { name: 'metrics_capped', queue: 'metrics_nowhere', payload: z.object({}), maxPending: 1 },
  () => undefined,
);

describe('metrics across processes', () => {
  it('counts outcomes by actor on the worker, and cancels and refusals on the client', async () => {
    const tq = fleet.tq;
    const w = fleet.start({ TQ_FIXTURE_ACTORS: 'tracing', TQ_FIXTURE_OTEL: 'memory' });
    await w.ready;
    const ok = await Promise.all([1, 2, 3].map((n) => tq.enqueue(tracedOk, { n })));
    const failed = await tq.enqueue(tracedFail, { n: 4 });
    const flaky = await tq.enqueue(tracedFlaky, { n: 5 });
    const waits = await tq.enqueue(tracedWaits, { n: 6 });
    await waitFor(
      async () => (await tq.getRow(waits.jobId))?.status === 'running',
      30_000,
      'the waiting job to run',
    );
    await tq.cancel(waits.jobId);
    for (const h of [...ok, failed, flaky, waits]) await tq.waitForTerminal(h.jobId, 30_000);

    await tq.enqueue(capped, {});
    await expect(tq.enqueue(capped, {})).rejects.toBeInstanceOf(MaxPendingExceededError);

    expect((await w.stop()).code).toBe(0);
    const m = workerMetrics(w.stdout);
    const consumed = (actorName: string, outcome: string): number =>
      sumOf(m, 'messaging.client.consumed.messages', {
        'messaging.destination.name': 'traced',
        'taskq.actor': actorName,
        'taskq.outcome': outcome,
      });
    expect(consumed('traced_ok', 'succeeded')).toBe(3);
    expect(consumed('traced_fail', 'failed')).toBe(1);
    expect(consumed('traced_flaky', 'retried')).toBe(1);
    expect(consumed('traced_flaky', 'succeeded')).toBe(1);
    expect(consumed('traced_waits', 'cancelled')).toBe(1);
    expect(sumOf(m, 'messaging.client.consumed.messages')).toBe(7);
    // Every attempt ran a handler: one duration each.
    expect(sumOf(m, 'messaging.process.duration')).toBe(7);
    expect(sumOf(m, 'messaging.process.duration', { 'taskq.actor': 'traced_flaky' })).toBe(2);
    // Seven attempts were claimed; some claims found nothing.
    expect(sumOf(m, 'taskq.dispatch.jobs')).toBe(7);
    expect(sumOf(m, 'taskq.dispatch.duration')).toBeGreaterThanOrEqual(1);
    expect(sumOf(m, 'taskq.cancellation.phase_transitions', { 'taskq.cancel.phase': '1' })).toBe(1);
    expect(sumOf(m, 'taskq.notify.received')).toBeGreaterThanOrEqual(1);
    // A cancel is announced on the shared events channel and on the worker's own: two deliveries.
    expect(sumOf(m, 'taskq.notify.cancel_received')).toBe(2);
    expect(sumOf(m, 'taskq.worker.shutdown_duration_seconds')).toBe(1);
    expect(sumOf(m, 'taskq.worker.slots')).toBeGreaterThan(0);

    const here = await sdk.reader.points();
    expect(sumOf(here, 'taskq.cancellation.requested', { 'taskq.kind': 'job' })).toBe(1);
    expect(
      sumOf(here, 'taskq.backpressure.errors', { 'taskq.actor': 'metrics_capped', 'taskq.kind': 'single' }),
    ).toBe(1);
    console.log(
      `metrics across processes: the worker process reported ${m.length} instruments, ` +
        `${sumOf(m, 'taskq.dispatch.duration')} claims`,
    );
  });
});
