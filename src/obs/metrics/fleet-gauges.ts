import type { Meter, ObservableResult } from '@opentelemetry/api';

import type { FleetObservation, FleetObservationRequest } from '../../backend/fleet-observation.js';
import type { Logger } from '../logger.js';
import { METRIC_ATTRIBUTES as A, metricSpec, type MetricName } from './metric-catalog.js';

/** Where the fleet gauges read from, and how fresh each group must be. */
export interface FleetGaugeOptions {
  /** `Backend.observeFleet` (one round trip). */
  observe: (request: FleetObservationRequest) => Promise<FleetObservation>;
  request: FleetObservationRequest;
  /** `queueDepthInterval`: queue and leader gauges are never older than this. */
  queueDepthIntervalMs: number;
  /** `reservationSlotsInterval`: reservation gauges are never older than this. */
  reservationSlotsIntervalMs: number;
  /** Monotonic milliseconds (a test passes its own). Default `performance.now`. */
  now?: () => number;
  logger: Logger;
}

/**
 * The fleet-wide gauges (queue depth by status, oldest pending age, alive workers per queue,
 * reservation slots, live leaders): the same values whichever process reports them, so dashboards
 * aggregate them with `max`. They are read from the database when a collection asks and the last
 * read is older than the group's interval, so a process nobody scrapes never reads them, and a
 * scrape more frequent than the interval costs nothing. One read serves both groups; concurrent
 * collections share it. A failed read is logged (once per failure streak) and its gauges report
 * nothing until a read succeeds: an absent series, not a stale one.
 */
export class FleetGauges {
  private last: { at: number; value: FleetObservation } | null = null;
  private inFlight: Promise<FleetObservation | null> | null = null;
  private failing = false;
  private readonly now: () => number;

  constructor(
    meter: Meter,
    private readonly options: FleetGaugeOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
    const gauge = (
      name: MetricName,
      maxAgeMs: number,
      observe: (r: ObservableResult, f: FleetObservation) => void,
    ) => {
      const spec = metricSpec(name);
      meter
        .createObservableGauge(name, { unit: spec.unit, description: spec.description })
        .addCallback(async (result) => {
          const fleet = await this.snapshot(maxAgeMs);
          if (fleet !== null) observe(result, fleet);
        });
    };
    const q = options.queueDepthIntervalMs;
    const r = options.reservationSlotsIntervalMs;
    gauge('taskq.queue.jobs', q, (result, f) => {
      for (const x of f.queues) {
        result.observe(x.pending, { [A.queue]: x.queue, [A.status]: 'pending' });
        result.observe(x.scheduled, { [A.queue]: x.queue, [A.status]: 'scheduled' });
        result.observe(x.running, { [A.queue]: x.queue, [A.status]: 'running' });
      }
    });
    gauge('taskq.queue.oldest_pending_age', q, (result, f) => {
      for (const x of f.queues) result.observe(x.oldestPendingAgeSeconds ?? 0, { [A.queue]: x.queue });
    });
    gauge('taskq.queue.workers_alive', q, (result, f) => {
      for (const x of f.queues) result.observe(x.workersAlive, { [A.queue]: x.queue });
    });
    gauge('taskq.fleet.leaders', q, (result, f) => result.observe(f.leaders));
    gauge('taskq.reservation.slots', r, (result, f) => {
      for (const x of f.reservations) result.observe(x.slots, { [A.reservation]: x.name });
    });
    gauge('taskq.reservation.slots_held', r, (result, f) => {
      for (const x of f.reservations) result.observe(x.held, { [A.reservation]: x.name });
    });
  }

  /** The last read when it is at most `maxAgeMs` old, else a new one (shared while in flight). */
  async snapshot(maxAgeMs: number): Promise<FleetObservation | null> {
    const last = this.last;
    if (last !== null && this.now() - last.at <= maxAgeMs) return last.value;
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async read(): Promise<FleetObservation | null> {
    const at = this.now();
    try {
      const value = await this.options.observe(this.options.request);
      this.last = { at, value };
      if (this.failing) this.options.logger.info({}, 'fleet-gauges-recovered');
      this.failing = false;
      return value;
    } catch (err) {
      if (!this.failing) this.options.logger.warn({ err }, 'fleet-gauges-read-failed');
      this.failing = true;
      this.last = null;
      return null;
    }
  }
}
