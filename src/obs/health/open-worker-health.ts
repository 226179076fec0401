import type { Logger } from '../logger.js';
import { DEFAULT_HEALTH_SOCKET_PATH } from '../../settings/setting-fields.js';
import type { WorkerSettings } from '../../settings/worker-settings.js';
import { HealthServer } from './health-server.js';
import type { ReadinessChecks } from './readiness-checks.js';
import { ReadinessProbe } from './readiness-probe.js';

/** What the health endpoints read from a worker. */
export interface WorkerHealthView {
  /** The worker's phase. */
  phase: () => string;
  /** `Backend.ping`. */
  ping: () => Promise<void>;
  /** The checks registered on `worker.health`. */
  checks: ReadinessChecks;
  /** `/tasks`'s report. */
  tasks: () => unknown;
}

/**
 * Opens a worker's health listeners from its settings (`healthEnabled`: the Unix socket;
 * `healthPort`: TCP), or returns null when both are off. A socket path you set that another live
 * process answers on fails the start; the default path is then skipped with a warning, so workers
 * started with default settings side by side on one host all start.
 *
 * @throws when the TCP port cannot be bound, or the socket path cannot be used
 */
export async function openWorkerHealth(
  s: WorkerSettings,
  view: WorkerHealthView,
  logger: Logger,
): Promise<HealthServer | null> {
  if (!s.healthEnabled && s.healthPort === null) return null;
  const probe = new ReadinessProbe({
    phase: view.phase,
    ping: view.ping,
    pingTimeoutMs: s.healthPgPingTimeoutMs,
    checks: view.checks,
    checkTimeoutMs: s.healthReadinessCheckTimeoutMs,
  });
  const server = new HealthServer({
    tcp: s.healthPort === null ? null : { host: s.healthHost, port: s.healthPort },
    socket: s.healthEnabled
      ? { path: s.healthSocketPath, required: s.healthSocketPath !== DEFAULT_HEALTH_SOCKET_PATH }
      : null,
    token: s.healthToken,
    requestTimeoutMs: s.healthRequestTimeoutMs,
    maxHeaderBytes: s.healthMaxHeaderBytes,
    phase: view.phase,
    ready: () => probe.evaluate(),
    tasks: s.healthTasksEnabled ? view.tasks : null,
    logger,
  });
  await server.start();
  return server;
}
