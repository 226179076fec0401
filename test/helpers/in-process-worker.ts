import type { AnyActor } from '../../src/core/actor.js';
import type { Backend } from '../../src/backend/backend.js';
import type { Logger } from '../../src/obs/logger.js';
import { silentLogger } from '../../src/obs/logger.js';
import type { WorkerSettingsInput } from '../../src/settings/load-worker-settings.js';
import { Worker } from '../../src/worker/worker.js';
import { TEST_DSN } from './db.js';

/**
 * Settings for an in-process test worker: short heartbeat, lease and graces so stops and
 * cancellations finish quickly, the watchdog and the health endpoints off; `overrides` win.
 */
export function testWorkerSettings(schema: string, overrides: WorkerSettingsInput = {}): WorkerSettingsInput {
  return {
    pgDsn: TEST_DSN,
    schema,
    maxConcurrency: 4,
    heartbeatInterval: '1s',
    lockLease: '10s',
    cancellationGracePeriod: '1s',
    cleanupGracePeriod: '1s',
    watchdogEnabled: false,
    // No listener on the machine's shared default socket path; health tests enable it on a path of their own.
    healthEnabled: false,
    ...overrides,
  };
}

/** Starts an in-process worker with {@link testWorkerSettings}. Stop it in `afterAll` / `finally`. */
export async function startTestWorker(
  actors: AnyActor[],
  schema: string,
  overrides: WorkerSettingsInput = {},
  extra: { backend?: Backend; logger?: Logger } = {},
): Promise<Worker> {
  const worker = new Worker({
    actors,
    settings: testWorkerSettings(schema, overrides),
    logger: extra.logger ?? silentLogger,
    ...(extra.backend ? { backend: extra.backend } : {}),
  });
  await worker.start();
  return worker;
}
