import { metrics, type Counter, type MeterProvider } from '@opentelemetry/api';

import { TASKQ_VERSION } from '../../core/version.js';
import { MaxPendingExceededError } from '../../errors/backpressure-errors.js';
import { METRIC_ATTRIBUTES as A, metricSpec, type MetricName } from './metric-catalog.js';

/**
 * The client's instruments (`TaskQ`, with `otelEnabled`), on the global meter provider: enqueues
 * refused by `maxPending`, and cancel calls. A worker's `metricsPort` endpoint does not show them;
 * an application that wants them registers its own MeterProvider (docs/metrics.md).
 */
export class ClientMetrics {
  private provider: MeterProvider | null = null;
  private backpressure!: Counter;
  private cancellations!: Counter;

  /**
   * The instruments of the global provider in place now. The metrics API hands out no-op meters
   * until an SDK is registered and does not forward them afterwards, so a client built before the
   * application registered its MeterProvider would otherwise count into the void for good.
   */
  private instruments(): this {
    const provider = metrics.getMeterProvider();
    if (provider === this.provider) return this;
    this.provider = provider;
    const meter = provider.getMeter('taskq', TASKQ_VERSION);
    const counter = (name: MetricName): Counter => {
      const spec = metricSpec(name);
      return meter.createCounter(name, { unit: spec.unit, description: spec.description });
    };
    this.backpressure = counter('taskq.backpressure.errors');
    this.cancellations = counter('taskq.cancellation.requested');
    return this;
  }

  /** Counts `err` when it is a `maxPending` refusal (`kind`: which enqueue refused it). */
  refused(err: unknown, kind: 'single' | 'batch' | 'batch_fast'): void {
    if (err instanceof MaxPendingExceededError)
      this.instruments().backpressure.add(1, { [A.actor]: err.actor, [A.kind]: kind });
  }

  /** One `cancel()` (`job`) or `cancelWhere()` (`where`) call, whatever it found. */
  cancelRequested(kind: 'job' | 'where'): void {
    this.instruments().cancellations.add(1, { [A.kind]: kind });
  }
}
