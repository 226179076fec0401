import type { Backend } from '../../backend/backend.js';
import type { AnyActor } from '../../core/actor.js';
import { TASKQ_VERSION } from '../../core/version.js';
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import { isKeyedReservationRef } from '../../ratelimit/keyed-refs.js';
import type { WorkerSettings } from '../../settings/worker-settings.js';
import type { Logger } from '../logger.js';
import { createNoopMeter, metrics, type Meter } from '@opentelemetry/api';
import { FleetGauges } from './fleet-gauges.js';
import { PrometheusEndpoint } from './prometheus-endpoint.js';

/**
 * A worker's Prometheus endpoint from its settings (`metricsPort` on `healthHost`, behind
 * `healthToken`), or null when `metricsPort` is unset.
 * @throws InvalidArgumentError naming `metricsPort` when the port is taken; MissingDependencyError
 */
export async function openWorkerMetricsEndpoint(
  s: WorkerSettings,
  logger: Logger,
): Promise<PrometheusEndpoint | null> {
  if (s.metricsPort === null) return null;
  try {
    return await PrometheusEndpoint.open({
      host: s.healthHost,
      port: s.metricsPort,
      token: s.healthToken,
      requestTimeoutMs: s.healthRequestTimeoutMs,
      maxHeaderBytes: s.healthMaxHeaderBytes,
      logger,
    });
  } catch (err) {
    // The bare EADDRINUSE names an address, not the setting that chose it.
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    throw new InvalidArgumentError(
      'metricsPort',
      s.metricsPort,
      `${s.healthHost}:${s.metricsPort} (healthHost:metricsPort) is in use by another listener: ` +
        'give each worker a port of its own (0 = any free port)',
    );
  }
}

/**
 * The meter a worker's instruments record into: the `metricsPort` endpoint's, else the global
 * MeterProvider's. Null when that is the API's no-op meter (no provider registered): every
 * instrument would be a no-op for the worker's life, since the metrics API does not forward its
 * meters to a provider registered later, so the worker builds none and no job records into them.
 */
export function workerMeter(endpoint: PrometheusEndpoint | null): Meter | null {
  const meter = endpoint?.meter ?? metrics.getMeter('taskq', TASKQ_VERSION);
  return meter === createNoopMeter() ? null : meter;
}

/**
 * A worker's fleet gauges on `meter`, read through `backend` on collection; keyed reservations
 * are summed under the base names of the worker's actors' keyed refs.
 */
export function startWorkerFleetGauges(
  meter: Meter,
  backend: Backend,
  s: WorkerSettings,
  actors: Iterable<AnyActor>,
  logger: Logger,
): FleetGauges {
  const keyedBases = new Set<string>();
  for (const a of actors)
    for (const r of a.reservations) if (isKeyedReservationRef(r)) keyedBases.add(r.baseName);
  return new FleetGauges(meter, {
    observe: (request) => backend.observeFleet(request),
    // A worker unseen for a whole lease is as good as gone: its jobs are being reclaimed.
    request: { aliveWithinMs: s.lockLeaseMs, keyedReservationBases: [...keyedBases] },
    queueDepthIntervalMs: s.queueDepthIntervalMs,
    reservationSlotsIntervalMs: s.reservationSlotsIntervalMs,
    logger,
  });
}
