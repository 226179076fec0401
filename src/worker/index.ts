// `taskq/worker`: running jobs.
export { Worker, type WorkerOptions, type WorkerPhase, type StopReason } from './worker.js';
export { runWorker, EXIT_CODES, type RunWorkerOptions } from './run-worker.js';
export { Providers, type ValueProviderOptions, type FactoryProviderOptions } from '../di/providers.js';
export { token, type Token } from '../di/token.js';
export type { Watchdog } from './watchdog/watchdog.js';
export { ReadinessChecks } from '../obs/health/readiness-checks.js';
export type { ReadinessCheck, CheckResult } from '../obs/health/bounded-check.js';
export type { ReadinessReport } from '../obs/health/readiness-probe.js';
export type { HealthServer } from '../obs/health/health-server.js';
export { EXIT_WATCHDOG, WATCHDOG_DETECTORS, type WatchdogDetector } from './watchdog/watchdog-trip.js';
export { NullErrorReporter, type ErrorReporter } from './error-reporter.js';
export { LeaseLost } from './job-runner.js';
export { isTransientError } from '../db/transient-errors.js';
export type { WorkerSettings } from '../settings/worker-settings.js';
export {
  loadWorkerSettings,
  checkNotAvailable,
  checkWatchdogInvariants,
  SettingNotAvailableError,
  SettingsError,
  workerPoolSize,
  worstCaseShutdownMs,
  type WorkerSettingsInput,
  type LoadWorkerSettingsOptions,
  type LoadedWorkerSettings,
  type SettingProblem,
} from '../settings/load-worker-settings.js';
export { RESERVATION_DENIAL_MAX_DELAY_MS } from './job-runner.js';
export { LOCAL_RETRY_WAITS_MS, RATE_LIMIT_LOCAL_WAIT_MS } from './rate-limit-gate.js';
