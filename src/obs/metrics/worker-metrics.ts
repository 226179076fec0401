import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';

import type { ClaimedJob } from '../../backend/types.js';
import type { Settlement, SettleResult } from '../../backend/worker-types.js';
import { METRIC_ATTRIBUTES as A, metricSpec, type MetricName } from './metric-catalog.js';

/**
 * What a worker's observable instruments read when a collection asks (plain numbers the services
 * keep anyway: with no metrics SDK registered nothing ever reads them).
 */
export interface WorkerMetricSources {
  /** `maxConcurrency`. */
  slots: number;
  jobsActive(): number;
  isLeader(): boolean;
  /** Null when NOTIFY is off (the series is then absent). */
  notify(): { connected: boolean; received: number; cancelReceived: number; reconnects: number } | null;
  /** Cancel phase → jobs moved to it by this worker. */
  cancelTransitions(): ReadonlyMap<string, number>;
  /** Jobs failed by this worker's deadline sweeps (while it led). */
  deadlineFailed(): number;
  /** Leader loop → unexpected errors it tolerated. */
  leaderLoopUnexpectedErrors(): ReadonlyMap<string, number>;
  /** Detector → trips; null when the watchdog is off. */
  watchdogTrips(): Readonly<Record<string, number>> | null;
  /** Seconds since each tracked loop ticked; null when the watchdog is off. */
  loopAges(): readonly { loop: string; ageSeconds: number }[] | null;
  /** Reporter type → failed calls. */
  reporterFailures(): ReadonlyMap<string, number>;
}

/** Histogram bucket bounds in seconds: from a fast claim (1 ms) to a long job (an hour). */
const SECONDS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
];

/**
 * A worker's instruments (docs/metrics.md): the few recorded as they happen (claims, written
 * outcomes, shutdown), and observable ones that read {@link WorkerMetricSources} when collected.
 * Built only when `otelEnabled` is true and there is a meter to record into (the endpoint's, or a
 * MeterProvider registered before the worker started); recording then costs a map lookup and the
 * meter's own work.
 */
export class WorkerMetrics {
  private readonly dispatchDuration: Histogram;
  private readonly dispatchJobs: Counter;
  private readonly processDuration: Histogram;
  private readonly shutdownDuration: Histogram;
  /**
   * Written outcomes per (queue, actor, outcome), with their attribute object made once. The
   * counter is observable and reads these: a synchronous counter would make the SDK hash the
   * attributes once more per job, which a profile showed as a third of the metrics' cost.
   */
  private readonly outcomes = new Map<string, { attributes: Attributes; n: number }>();
  private loopDelay: IntervalHistogram | null = null;

  constructor(meter: Meter, sources: WorkerMetricSources) {
    const histogram = (name: MetricName): Histogram => {
      const spec = metricSpec(name);
      return meter.createHistogram(name, {
        unit: spec.unit,
        description: spec.description,
        advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
      });
    };
    const counter = (name: MetricName): Counter => {
      const spec = metricSpec(name);
      return meter.createCounter(name, { unit: spec.unit, description: spec.description });
    };
    this.dispatchDuration = histogram('taskq.dispatch.duration');
    this.dispatchJobs = counter('taskq.dispatch.jobs');
    this.processDuration = histogram('messaging.process.duration');
    this.shutdownDuration = histogram('taskq.worker.shutdown_duration_seconds');
    this.observe(meter, sources);
  }

  /** One claim statement: its latency and the jobs it returned. */
  dispatched(seconds: number, jobs: number): void {
    this.dispatchDuration.record(seconds);
    if (jobs > 0) this.dispatchJobs.add(jobs);
  }

  /** An attempt's outcome was written (or found not this worker's: `lost`). */
  settled(job: ClaimedJob, outcome: Settlement, written: SettleResult): void {
    const label = outcomeLabel(outcome, written);
    const key = `${job.queue}\u0000${job.actor}\u0000${label}`;
    let entry = this.outcomes.get(key);
    if (entry === undefined) {
      entry = { attributes: { [A.queue]: job.queue, [A.actor]: job.actor, [A.outcome]: label }, n: 0 };
      this.outcomes.set(key, entry);
    }
    entry.n++;
    if (outcome.durationMs !== null) this.processDuration.record(outcome.durationMs / 1000, entry.attributes);
  }

  /** The worker stopped, `seconds` after its first shutdown signal. */
  shutdownFinished(seconds: number): void {
    this.shutdownDuration.record(seconds);
    this.loopDelay?.disable();
  }

  private observe(meter: Meter, s: WorkerMetricSources): void {
    const gauge = (name: MetricName) => {
      const spec = metricSpec(name);
      return meter.createObservableGauge(name, { unit: spec.unit, description: spec.description });
    };
    const observableCounter = (name: MetricName) => {
      const spec = metricSpec(name);
      return meter.createObservableCounter(name, { unit: spec.unit, description: spec.description });
    };
    observableCounter('messaging.client.consumed.messages').addCallback((r) => {
      for (const { attributes, n } of this.outcomes.values()) r.observe(n, attributes);
    });
    gauge('taskq.worker.slots').addCallback((r) => r.observe(s.slots));
    gauge('taskq.worker.jobs_active').addCallback((r) => r.observe(s.jobsActive()));
    gauge('taskq.maintenance_leader.is_leader').addCallback((r) => r.observe(s.isLeader() ? 1 : 0));
    gauge('taskq.notify.connected').addCallback((r) => {
      const n = s.notify();
      if (n !== null) r.observe(n.connected ? 1 : 0);
    });
    observableCounter('taskq.notify.received').addCallback((r) => {
      const n = s.notify();
      if (n !== null) r.observe(n.received);
    });
    observableCounter('taskq.notify.cancel_received').addCallback((r) => {
      const n = s.notify();
      if (n !== null) r.observe(n.cancelReceived);
    });
    observableCounter('taskq.notify.reconnects').addCallback((r) => {
      const n = s.notify();
      if (n !== null) r.observe(n.reconnects);
    });
    observableCounter('taskq.cancellation.phase_transitions').addCallback((r) => {
      for (const [phase, n] of s.cancelTransitions()) r.observe(n, { [A.phase]: phase });
    });
    observableCounter('taskq.deadline_exceeded_sweep.jobs_failed').addCallback((r) =>
      r.observe(s.deadlineFailed()),
    );
    observableCounter('taskq.worker.leader_loop_unexpected_errors_total').addCallback((r) => {
      for (const [loop, n] of s.leaderLoopUnexpectedErrors()) r.observe(n, { [A.loop]: loop });
    });
    observableCounter('taskq.worker.watchdog_trips_total').addCallback((r) => {
      const trips = s.watchdogTrips();
      if (trips === null) return;
      for (const [detector, n] of Object.entries(trips)) r.observe(n, { [A.detector]: detector });
    });
    gauge('taskq.worker.loop_tick_age_seconds').addCallback((r) => {
      for (const { loop, ageSeconds } of s.loopAges() ?? []) r.observe(ageSeconds, { [A.loop]: loop });
    });
    observableCounter('taskq.error_reporter.failures').addCallback((r) => {
      for (const [type, n] of s.reporterFailures()) r.observe(n, { [A.reporterType]: type });
    });
    gauge('taskq.worker.event_loop_delay').addCallback((r) => {
      // Sampled only once something collects: a worker nobody scrapes runs no sampling timer.
      if (this.loopDelay === null) {
        this.loopDelay = monitorEventLoopDelay({ resolution: 20 });
        this.loopDelay.enable();
        return;
      }
      if (this.loopDelay.count > 0) r.observe(this.loopDelay.percentile(99) / 1e9);
      this.loopDelay.reset();
    });
  }
}

/** The `taskq.outcome` of a written attempt: what happened to the job, not what was asked. */
export function outcomeLabel(outcome: Settlement, written: SettleResult): string {
  switch (written.status) {
    case 'noop':
      return 'lost';
    case 'failed':
    case 'cancelled':
    case 'succeeded':
    case 'abandoned':
    case 'crashed':
      return written.status;
    default:
      break;
  }
  switch (outcome.kind) {
    case 'failed':
      return 'retried';
    case 'succeeded':
    case 'cancelled':
      // Written as something else than asked (only the terminal statuses above are expected).
      return written.status;
    case 'reschedule':
      return outcome.outcome;
    case 'release':
      return 'released';
  }
}
