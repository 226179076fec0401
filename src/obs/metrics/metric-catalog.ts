/**
 * Every instrument TaskQ records, by its OpenTelemetry name: what docs/metrics.md lists, what the
 * instruments are built from, and what the dashboards and alert rules in docs/ops/ may reference
 * (a test holds them to this list). Names the reference design gives are kept as it spells them;
 * the others follow the same `taskq.<area>.<thing>` shape.
 */

/** How an instrument aggregates. `observableCounter` and `gauge` values are read at collection. */
export type MetricKind = 'counter' | 'observableCounter' | 'histogram' | 'gauge';

/** One instrument. */
export interface MetricSpec {
  /** OpenTelemetry instrument name. */
  readonly name: string;
  readonly kind: MetricKind;
  /** UCUM unit: `s` for durations, `{job}` and the like for counts, `1` for ratios and flags. */
  readonly unit: string;
  readonly description: string;
  /** Attribute keys its points carry (a bounded set of values each). */
  readonly attributes: readonly string[];
  /** Who records it: every worker, or the fleet gauges (worker and `taskq health metrics`), or the client. */
  readonly source: 'worker' | 'fleet' | 'client';
}

/** Attribute keys. Values are bounded: queue and actor names, outcomes, loop and detector names. */
export const METRIC_ATTRIBUTES = {
  queue: 'messaging.destination.name',
  actor: 'taskq.actor',
  outcome: 'taskq.outcome',
  status: 'taskq.status',
  kind: 'taskq.kind',
  phase: 'taskq.cancel.phase',
  loop: 'taskq.loop',
  detector: 'taskq.watchdog.detector',
  reporterType: 'reporter_type',
  reservation: 'taskq.reservation',
  workerGroup: 'messaging.consumer.group.name',
} as const;

const A = METRIC_ATTRIBUTES;

/** The catalog, in the order docs/metrics.md lists it. */
export const METRIC_CATALOG = [
  // Dispatch and execution.
  {
    name: 'taskq.dispatch.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Latency of one claim statement (dispatch_batch), whatever it returned.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.dispatch.jobs',
    kind: 'counter',
    unit: '{job}',
    description: 'Jobs claimed by this worker.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'messaging.process.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Handler run time of an attempt, by queue, actor and outcome (attempts that ran a handler).',
    attributes: [A.queue, A.actor, A.outcome],
    source: 'worker',
  },
  {
    name: 'messaging.client.consumed.messages',
    kind: 'observableCounter',
    unit: '{job}',
    description:
      'Attempts whose outcome was written, by queue, actor and outcome (succeeded, failed, retried, ' +
      'cancelled, snoozed, retry_after, rate_limit_denied, reservation_denied, released, lost).',
    attributes: [A.queue, A.actor, A.outcome],
    source: 'worker',
  },
  {
    name: 'taskq.worker.jobs_active',
    kind: 'gauge',
    unit: '{job}',
    description: 'Jobs holding one of this worker’s slots.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.worker.slots',
    kind: 'gauge',
    unit: '{slot}',
    description: 'This worker’s concurrency slots (maxConcurrency).',
    attributes: [],
    source: 'worker',
  },
  // Enqueue and cancellation (the client: TaskQ).
  {
    name: 'taskq.backpressure.errors',
    kind: 'counter',
    unit: '{error}',
    description:
      'Enqueues refused by maxPending (MaxPendingExceededError), by actor and kind (single, batch).',
    attributes: [A.actor, A.kind],
    source: 'client',
  },
  {
    name: 'taskq.cancellation.requested',
    kind: 'counter',
    unit: '{call}',
    description: 'cancel() and cancelWhere() calls, whatever they found (kind: job, where).',
    attributes: [A.kind],
    source: 'client',
  },
  {
    name: 'taskq.cancellation.phase_transitions',
    kind: 'observableCounter',
    unit: '{transition}',
    description:
      'Cancel phases this worker moved its jobs to (1 cooperative, 2 forced or adopted, abandoned).',
    attributes: [A.phase],
    source: 'worker',
  },
  // Maintenance.
  {
    name: 'taskq.deadline_exceeded_sweep.jobs_failed',
    kind: 'observableCounter',
    unit: '{job}',
    description: 'Jobs the leader’s deadline sweep failed (DeadlineExceeded).',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.maintenance_leader.is_leader',
    kind: 'gauge',
    unit: '1',
    description: '1 while this worker holds the maintenance leadership.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.worker.leader_loop_unexpected_errors_total',
    kind: 'observableCounter',
    unit: '{error}',
    description: 'Unexpected (non-transient) errors the leader’s loops tolerated, by loop.',
    attributes: [A.loop],
    source: 'worker',
  },
  // NOTIFY.
  {
    name: 'taskq.notify.received',
    kind: 'observableCounter',
    unit: '{notification}',
    description: 'NOTIFY wake-ups and cancel requests received by this worker.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.notify.cancel_received',
    kind: 'observableCounter',
    unit: '{notification}',
    description: 'Cancel NOTIFYs for jobs of this worker.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.notify.reconnects',
    kind: 'observableCounter',
    unit: '{reconnect}',
    description: 'Times the LISTEN connection was re-established.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.notify.connected',
    kind: 'gauge',
    unit: '1',
    description: '1 while the LISTEN connection is healthy (0 means the worker polls).',
    attributes: [],
    source: 'worker',
  },
  // Watchdog, loops, shutdown.
  {
    name: 'taskq.worker.watchdog_trips_total',
    kind: 'observableCounter',
    unit: '{trip}',
    description: 'Watchdog trips, by detector (a trip ends the process: read it from the last scrape).',
    attributes: [A.detector],
    source: 'worker',
  },
  {
    name: 'taskq.worker.loop_tick_age_seconds',
    kind: 'gauge',
    unit: 's',
    description: 'Seconds since each interval-driven loop last ticked (watchdog on).',
    attributes: [A.loop],
    source: 'worker',
  },
  {
    name: 'taskq.worker.event_loop_delay',
    kind: 'gauge',
    unit: 's',
    description: 'p99 event-loop delay of this worker over the last collection interval.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.worker.shutdown_duration_seconds',
    kind: 'histogram',
    unit: 's',
    description: 'From the first shutdown signal to a stopped worker.',
    attributes: [],
    source: 'worker',
  },
  {
    name: 'taskq.error_reporter.failures',
    kind: 'observableCounter',
    unit: '{failure}',
    description: 'ErrorReporter calls that threw or timed out, by reporter type.',
    attributes: [A.reporterType],
    source: 'worker',
  },
  // Fleet gauges (read from the database at most once per interval, on collection).
  {
    name: 'taskq.queue.jobs',
    kind: 'gauge',
    unit: '{job}',
    description: 'Jobs per queue in pending, scheduled and running (every queue with any).',
    attributes: [A.queue, A.status],
    source: 'fleet',
  },
  {
    name: 'taskq.queue.oldest_pending_age',
    kind: 'gauge',
    unit: 's',
    description: 'Age of the oldest pending job per queue (since it became due).',
    attributes: [A.queue],
    source: 'fleet',
  },
  {
    name: 'taskq.queue.workers_alive',
    kind: 'gauge',
    unit: '{worker}',
    description: 'Workers with a recent heartbeat that serve the queue.',
    attributes: [A.queue],
    source: 'fleet',
  },
  {
    name: 'taskq.reservation.slots',
    kind: 'gauge',
    unit: '{slot}',
    description: 'Concurrency-reservation slots, per reservation (keyed ones summed under their base name).',
    attributes: [A.reservation],
    source: 'fleet',
  },
  {
    name: 'taskq.reservation.slots_held',
    kind: 'gauge',
    unit: '{slot}',
    description: 'Reservation slots held under a live lease, per reservation (keyed ones summed).',
    attributes: [A.reservation],
    source: 'fleet',
  },
  {
    name: 'taskq.fleet.leaders',
    kind: 'gauge',
    unit: '{worker}',
    description: 'Maintenance leaders with a live lease (1 when healthy; 0 means sweeps are not running).',
    attributes: [],
    source: 'fleet',
  },
] as const satisfies readonly MetricSpec[];

/** An instrument name of the catalog. */
export type MetricName = (typeof METRIC_CATALOG)[number]['name'];

/** The catalog entry of `name`. */
export function metricSpec(name: MetricName): MetricSpec {
  return METRIC_CATALOG.find((m) => m.name === name)!;
}

/**
 * The name a Prometheus scrape shows for `spec` (through `@opentelemetry/exporter-prometheus`):
 * dots become underscores and counters end in `_total`; the unit is not appended.
 */
export function prometheusName(spec: Pick<MetricSpec, 'name' | 'kind'>): string {
  const base = spec.name.replace(/[^a-zA-Z0-9_:]/g, '_');
  const counter = spec.kind === 'counter' || spec.kind === 'observableCounter';
  return counter && !base.endsWith('_total') ? `${base}_total` : base;
}
