/**
 * The metric catalog against its docs, the outcome labels, and the fleet gauges' read policy
 * (read on collection, at most once per interval, shared, absent after a failed read), with a
 * collecting reader and a counted fake `observeFleet`.
 */
import { readFileSync } from 'node:fs';

import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';

import type { FleetObservation } from '../../../src/backend/fleet-observation.js';
import type { Settlement, SettleResult } from '../../../src/backend/worker-types.js';
import { METRIC_CATALOG, prometheusName } from '../../../src/obs/metrics/metric-catalog.js';
import { FleetGauges } from '../../../src/obs/metrics/fleet-gauges.js';
import { outcomeLabel } from '../../../src/obs/metrics/worker-metrics.js';
import { silentLogger } from '../../../src/obs/logger.js';
import { CollectingReader, sumOf } from '../../fixtures/otel-memory.js';

describe('the metric catalog', () => {
  it('has unique names, each documented in docs/metrics.md with its Prometheus name', () => {
    const names = METRIC_CATALOG.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    const doc = readFileSync(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');
    for (const m of METRIC_CATALOG) {
      expect(doc, m.name).toContain(`\`${m.name}\``);
      expect(doc, m.name).toContain(`\`${prometheusName(m)}\``);
    }
    expect(prometheusName({ name: 'messaging.client.consumed.messages', kind: 'counter' })).toBe(
      'messaging_client_consumed_messages_total',
    );
    expect(prometheusName({ name: 'taskq.worker.watchdog_trips_total', kind: 'observableCounter' })).toBe(
      'taskq_worker_watchdog_trips_total',
    );
    expect(prometheusName({ name: 'taskq.queue.jobs', kind: 'gauge' })).toBe('taskq_queue_jobs');
  });
});

describe('outcome labels', () => {
  const base = { jobId: 'j', workerId: 'w', handlerStartedAt: null, durationMs: 1 };
  const written = (status: SettleResult['status']): SettleResult => ({
    jobId: 'j',
    status,
    errorClass: null,
  });
  const error = { errorClass: 'Error', message: 'x', traceback: null };
  it('names what happened to the job, not what was asked', () => {
    const failed: Settlement = { ...base, kind: 'failed', error, retryDelayMs: 10 };
    expect(outcomeLabel(failed, written('scheduled'))).toBe('retried');
    expect(outcomeLabel(failed, written('failed'))).toBe('failed');
    expect(outcomeLabel(failed, written('cancelled'))).toBe('cancelled');
    expect(outcomeLabel(failed, written('noop'))).toBe('lost');
    const denied: Settlement = {
      ...base,
      kind: 'reschedule',
      delayMs: 5,
      consumeBudget: false,
      outcome: 'rate_limit_denied',
      error: null,
    };
    expect(outcomeLabel(denied, written('scheduled'))).toBe('rate_limit_denied');
    const retryAfter: Settlement = { ...denied, consumeBudget: true, outcome: 'retry_after' };
    expect(outcomeLabel(retryAfter, written('failed'))).toBe('failed');
    expect(outcomeLabel({ ...base, kind: 'release', error: null }, written('pending'))).toBe('released');
    const ok: Settlement = {
      ...base,
      kind: 'succeeded',
      resultJson: null,
      resultSizeBytes: null,
      fallbackResultTtlMs: null,
    };
    expect(outcomeLabel(ok, written('succeeded'))).toBe('succeeded');
  });
});

describe('fleet gauges', () => {
  const fleet: FleetObservation = {
    queues: [
      { queue: 'a', pending: 3, scheduled: 1, running: 2, oldestPendingAgeSeconds: 7.5, workersAlive: 2 },
      { queue: 'b', pending: 0, scheduled: 0, running: 0, oldestPendingAgeSeconds: null, workersAlive: 0 },
    ],
    reservations: [{ name: 'pdf', keyed: false, slots: 4, held: 1 }],
    leaders: 1,
  };

  function setup(reads: { fail?: boolean }) {
    let now = 0;
    let calls = 0;
    const reader = new CollectingReader();
    const provider = new MeterProvider({ readers: [reader] });
    new FleetGauges(provider.getMeter('taskq'), {
      observe: async () => {
        calls++;
        if (reads.fail) throw new Error('database down');
        return fleet;
      },
      request: { aliveWithinMs: 1000, keyedReservationBases: [] },
      queueDepthIntervalMs: 15_000,
      reservationSlotsIntervalMs: 60_000,
      now: () => now,
      logger: silentLogger,
    });
    return {
      reader,
      calls: () => calls,
      advance: (ms: number) => {
        now += ms;
      },
    };
  }

  it('reads once per collection that needs it, and reports every queue, reservation and the leaders', async () => {
    const t = setup({});
    expect(t.calls()).toBe(0); // nothing is read until something collects
    const m = await t.reader.points();
    expect(t.calls()).toBe(1); // six gauges, one shared read
    expect(
      sumOf(m, 'taskq.queue.jobs', { 'messaging.destination.name': 'a', 'taskq.status': 'pending' }),
    ).toBe(3);
    expect(
      sumOf(m, 'taskq.queue.jobs', { 'messaging.destination.name': 'a', 'taskq.status': 'running' }),
    ).toBe(2);
    expect(sumOf(m, 'taskq.queue.jobs', { 'messaging.destination.name': 'b' })).toBe(0);
    expect(sumOf(m, 'taskq.queue.oldest_pending_age', { 'messaging.destination.name': 'a' })).toBe(7.5);
    expect(sumOf(m, 'taskq.queue.workers_alive', { 'messaging.destination.name': 'a' })).toBe(2);
    expect(sumOf(m, 'taskq.reservation.slots', { 'taskq.reservation': 'pdf' })).toBe(4);
    expect(sumOf(m, 'taskq.reservation.slots_held', { 'taskq.reservation': 'pdf' })).toBe(1);
    expect(sumOf(m, 'taskq.fleet.leaders')).toBe(1);

    t.advance(10_000);
    await t.reader.points();
    expect(t.calls()).toBe(1); // within both intervals
    t.advance(6_000);
    await t.reader.points();
    expect(t.calls()).toBe(2); // the queue gauges' 15 s passed; one read serves the reservations too
  });

  it('reports nothing after a failed read (absent, not stale)', async () => {
    const t = setup({ fail: true });
    const m = await t.reader.points();
    expect(t.calls()).toBe(1);
    expect(sumOf(m, 'taskq.queue.jobs')).toBe(0);
    expect(m.find((x) => x.name === 'taskq.fleet.leaders')?.points ?? []).toEqual([]);
    await t.reader.points();
    expect(t.calls()).toBe(2); // a failure is not cached
  });
});
