import { loadWorkerSettings, type WorkerSettingsInput } from '../settings/load-worker-settings.js';
import { resolveCredentialProvider } from '../credentials/provider-reference.js';
import { createLogger } from '../obs/logger.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { Worker, WORKER_OPTION_KEYS, type StopReason, type WorkerOptions } from './worker.js';

/** Options of {@link runWorker}. */
export interface RunWorkerOptions extends Omit<WorkerOptions, 'settings'> {
  /** Settings over the environment (these win). */
  settings?: WorkerSettingsInput;
  /** Environment to read `TASKQ_*` settings from. Default `process.env` (runWorker is an entry point). */
  env?: Record<string, string | undefined>;
  /**
   * Install SIGTERM/SIGINT handlers (1st: graceful stop, 2nd: escalate, 3rd: exit 1) and SIGHUP
   * (credential reload, see docs/credentials.md). Default true.
   */
  handleSignals?: boolean;
  /** Called with the worker once it has started (tests, embedding). */
  onStarted?: (worker: Worker) => void;
}

/** The keys of {@link RunWorkerOptions}: the worker's, and three of runWorker's own. */
const RUN_WORKER_OPTION_KEYS: readonly string[] = [
  ...WORKER_OPTION_KEYS,
  'env',
  'handleSignals',
  'onStarted',
];

/** Exit codes of a worker process. */
export const EXIT_CODES: Readonly<Record<StopReason, number>> = {
  requested: 0,
  idle: 0,
  'idle-timeout': 4,
  fatal: 1,
  watchdog: 2,
};

/**
 * Runs a worker until it is told to stop, and resolves with the process exit code. Settings come
 * from the environment (`TASKQ_*`) overlaid with `settings`; a bad value throws `SettingsError`
 * naming the variable, the value and the rule before anything connects.
 *
 * ```ts
 * import { runWorker } from 'taskq/worker';
 * process.exitCode = await runWorker({ actors: [sendEmail], settings: { queues: ['emails'], maxConcurrency: 16 } });
 * ```
 */
export async function runWorker(options: RunWorkerOptions): Promise<number> {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('runWorker.options', options, 'must be an object ({ actors, ... })');
  // Before the settings load: a misspelt `onStarted` must not start a worker that never calls it.
  checkKnownKeys(options, RUN_WORKER_OPTION_KEYS, 'runWorker', 'an option of runWorker()');
  // runWorker's own options stay here: the Worker refuses keys that are not its options.
  const { env, handleSignals, onStarted, settings: overrides, ...workerOptions } = options;
  const { settings, warnings } = loadWorkerSettings({
    env: env ?? process.env,
    overrides: overrides ?? {},
  });
  const logger =
    workerOptions.logger ?? createLogger({ level: settings.logLevel, format: settings.logFormat });
  for (const w of warnings) logger.warn({ warning: w }, 'settings-warning');
  // A provider named in the settings (TASKQ_PG_CREDENTIAL_PROVIDER) is imported here, once; one given
  // as an object in the options wins.
  const pgCredentialProvider =
    workerOptions.pgCredentialProvider ??
    (settings.pgCredentialProvider === null
      ? undefined
      : await resolveCredentialProvider(settings.pgCredentialProvider, 'pg', 'pgCredentialProvider'));
  const redisCredentialProvider =
    workerOptions.redisCredentialProvider ??
    (settings.redisCredentialProvider === null
      ? undefined
      : await resolveCredentialProvider(
          settings.redisCredentialProvider,
          'redis',
          'redisCredentialProvider',
        ));
  const worker = new Worker({
    ...workerOptions,
    settings,
    logger,
    ...(pgCredentialProvider ? { pgCredentialProvider } : {}),
    ...(redisCredentialProvider ? { redisCredentialProvider } : {}),
  });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    logger.info({ signal: sig, count: signals }, 'worker-signal');
    if (signals === 1) void worker.stop();
    else if (signals === 2) worker.escalate();
    else process.exit(1);
  };
  // Signals that arrive during a reload coalesce in the reloader; the outcome is in its log line.
  const onHangup = (): void => {
    logger.info({ signal: 'SIGHUP' }, 'worker-signal');
    void worker.reloadOnSignal();
  };
  const handle = handleSignals ?? true;
  if (handle) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', onHangup);
  }
  try {
    await worker.start();
    onStarted?.(worker);
    const reason = await worker.stopped;
    return EXIT_CODES[reason];
  } finally {
    if (handle) {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.off('SIGHUP', onHangup);
    }
  }
}
