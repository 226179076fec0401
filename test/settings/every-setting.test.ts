/**
 * No setting that does nothing: every field of the settings table, worker and client, is either
 * marked `notAvailable` (then any value but its default is refused at load with a
 * `SettingNotAvailableError` naming it, through the environment and through an override, and the
 * default still loads) or listed in `PROOF` with the test file that sets it off its default and
 * observes what it changes. A field in neither fails here, by name. The reference's variables that
 * no field holds yet (`NOT_AVAILABLE_ENV_VARS`) are refused by both loaders. docs/configuration.md
 * lists the working settings in its table and the others apart.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { loadWorkerSettings, SettingsError } from '../../src/settings/load-worker-settings.js';
import {
  NOT_AVAILABLE_ENV_VARS,
  settingName,
  WORKER_SETTING_FIELDS,
  type SettingField,
} from '../../src/settings/setting-fields.js';
import { SettingNotAvailableError } from '../../src/settings/settings-error.js';
import { loadTaskQSettings, TASKQ_SETTING_FIELDS } from '../../src/settings/taskq-settings.js';
import type { WorkerSettings } from '../../src/settings/worker-settings.js';
import { Worker } from '../../src/worker/worker.js';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8');

/** Where a wired setting is shown to change behaviour. */
interface Proof {
  /** The test file that sets the setting off its default and observes the effect. */
  file: string;
  /**
   * When the test drives the component the setting is handed to, under the option's name there
   * (`dumpIntervalMs` for `watchdogDumpIntervalMs`): that name, and the source file that passes
   * the setting to it (checked to mention both).
   */
  via?: { name: string; wiredAt: string };
  /** What the test observes, in words. */
  shows: string;
}

const WIRING = 'test/worker/settings-wiring.test.ts';
const HEALTH_SERVER = 'test/obs/health/health-server.test.ts';
const OPEN_HEALTH = 'src/obs/health/open-worker-health.ts';
const WATCHDOG = 'src/worker/watchdog/watchdog.ts';
const UI_SERVE = 'test/cli/cli-ui-serve.test.ts';

/** Every wired setting and its proof. Only list a file that really changes the setting and looks. */
const PROOF: Partial<Record<keyof WorkerSettings, Proof>> = {
  pgDsn: {
    file: 'test/cli/cli-worker.test.ts',
    shows: 'the CLI worker connects with TASKQ_PG_DSN and runs jobs',
  },
  pgDsnDirect: { file: WIRING, shows: 'a worker whose pgDsn is unreachable runs jobs through pgDsnDirect' },
  schema: {
    file: 'test/client/client-size-settings.test.ts',
    shows: 'a client built from TASKQ_SCHEMA_NAME writes its jobs to that (fresh) schema',
  },
  redisUrl: {
    file: 'test/worker/progress.test.ts',
    shows: 'progress is published over the Redis of redisUrl',
  },
  queues: {
    file: 'test/worker/worker-services.test.ts',
    shows: 'workers claim from the queues they are given',
  },
  maxConcurrency: {
    file: 'test/worker/worker-services.test.ts',
    shows: 'maxConcurrency 1 with prefetch 0 runs a FIFO queue one job at a time, in order',
  },
  prefetch: {
    file: 'test/worker/producer.test.ts',
    shows:
      "a fixed prefetch sizes the producer's claims as is; null (adaptive) follows the handlers' average",
  },
  heartbeatIntervalMs: {
    file: 'test/worker/leader-freeze.test.ts',
    shows: 'live workers keep their jobs under a 4 s lease with 1 s heartbeats (weak: the bound is logged)',
  },
  lockLeaseMs: {
    file: 'test/worker/leader-freeze.test.ts',
    shows: "a killed worker's jobs are reclaimed within a 40 s wait, which the default 60 s lease would miss",
  },
  maxHeartbeatFailures: {
    file: 'test/worker/worker-services.test.ts',
    shows: 'the worker stops itself (exit code 1) after maxHeartbeatFailures failed renewals in a row',
  },
  pgCredentialProvider: {
    file: 'test/faults/credential-rotation.test.ts',
    shows:
      'a worker process given TASKQ_PG_CREDENTIAL_PROVIDER authenticates every pool through it, and a SIGHUP after a password change moves them to the new password',
  },
  redisCredentialProvider: {
    file: 'test/credentials/redis-provider-setting.test.ts',
    shows:
      'runWorker given TASKQ_REDIS_CREDENTIAL_PROVIDER connects its Redis clients as the ACL user the provider names',
  },
  reloadIntervalMs: {
    file: 'test/credentials/credential-reloader.test.ts',
    via: { name: 'everyMs', wiredAt: 'src/worker/worker.ts' },
    shows: 'the reload timer requests a credential reload every interval, none at start',
  },
  reloadFactoryTimeoutMs: {
    file: 'test/credentials/credential-reloader.test.ts',
    via: { name: 'timeoutMs', wiredAt: 'src/worker/worker.ts' },
    shows: 'a resource whose reload hangs is reported failed at the timeout and the others still reload',
  },
  dispatcherPoolSize: { file: WIRING, shows: 'at most that many dispatcher-pool statements run at once' },
  dispatcherCommandTimeoutMs: { file: WIRING, shows: "the dispatcher pool's statement_timeout" },
  dispatchOversample: {
    file: WIRING,
    shows: "every dispatch request the worker makes carries it (the statement's use of it: dispatch tests)",
  },
  heartbeatPoolSize: { file: WIRING, shows: 'at most that many heartbeat-pool statements run at once' },
  heartbeatCommandTimeoutMs: { file: WIRING, shows: "the heartbeat pool's statement_timeout" },
  sweepIntervalMs: {
    file: 'test/worker/leader-freeze.test.ts',
    shows: 'reclaim runs on a 1 s sweep (weak: the bound it enters is logged, not asserted)',
  },
  strandedJobsIntervalMs: { file: WIRING, shows: 'the stranded-jobs warning repeats at 1 s' },
  terminationGracePeriodMs: {
    file: 'test/worker/shutdown.test.ts',
    shows: 'what fits in the grace finishes, the rest is aborted or re-pended, and the process exits',
  },
  cancellationGracePeriodMs: {
    file: 'test/worker/cancellation.test.ts',
    shows: 'a handler ignoring its signal is escalated after the cancellation grace',
  },
  cleanupGracePeriodMs: {
    file: 'test/worker/cancellation.test.ts',
    shows: 'an escalated handler is abandoned after the cleanup grace',
  },
  maxRetryBackoffMs: {
    file: 'test/core/retry-classifier.test.ts',
    shows: "retry delays (the policy's and a hook's) are capped by it",
  },
  defaultStartToCloseMs: {
    file: 'test/worker/worker-services.test.ts',
    shows: 'a job without its own start-to-close times out after the default',
  },
  rateLimitPgFallbackEnabled: {
    file: 'test/faults/ratelimit-redis-down.test.ts',
    shows: 'with Redis down, rate limits fall back to Postgres, or fail when it is false',
  },
  maxKeyedReservations: {
    file: 'test/ratelimit/registry-keyed.test.ts',
    shows: 'a keyed reservation beyond the cap is refused',
  },
  maxKeyedRateLimits: {
    file: 'test/ratelimit/registry-keyed.test.ts',
    shows: 'a keyed rate limit beyond the cap is refused',
  },
  pollIntervalMs: {
    file: 'test/worker/worker-services.test.ts',
    shows: 'with NOTIFY off, jobs are found by polling at pollInterval',
  },
  notifyHealthCheckIntervalMs: {
    file: 'test/worker/notify-and-startup.test.ts',
    shows: 'a dropped LISTEN connection is noticed by the health check and re-established',
  },
  notifyReconnectBackoffInitialMs: {
    file: 'test/worker/notify-and-startup.test.ts',
    shows: 'the LISTEN connection is re-established after the backoff',
  },
  notifyListenerSetupTimeoutMs: {
    file: WIRING,
    shows: 'a stalled LISTEN setup gives up after it; the worker polls',
  },
  notifyEnabled: { file: 'test/worker/worker-services.test.ts', shows: 'false: jobs still run, by polling' },
  notifyPollIntervalMs: {
    file: 'test/worker/notify-and-startup.test.ts',
    shows: 'with NOTIFY up, a long safety poll leaves the wake-ups to NOTIFY',
  },
  workerLabel: {
    file: 'test/worker/notify-and-startup.test.ts',
    shows: 'the label is stored in the workers row',
  },
  exceptionMessageMaxChars: { file: WIRING, shows: 'a stored error message is cut at 100 characters' },
  exceptionRedactionEnabled: {
    file: WIRING,
    shows: 'false keeps the Postgres DETAIL line in the stored message',
  },
  otelEnabled: {
    file: 'test/obs/tracing-inprocess.test.ts',
    shows: 'false: the worker and client create no span',
  },
  logFormat: {
    file: 'test/worker/failure-logs.test.ts',
    shows: 'console renders the same error line readable',
  },
  logLevel: {
    file: 'test/worker/failure-logs.test.ts',
    shows: "at error, a worker process writes the job's error line but not its warn and info lines",
  },
  pruneScheduleUtc: { file: WIRING, shows: "the prune's next run is at that time of day" },
  pruneCronExpr: { file: WIRING, shows: "the prune's next run follows the cron expression" },
  pruneBatchSize: {
    file: 'test/worker/maintenance-loops.test.ts',
    shows: '60,000 jobs are archived in 13 batches of 5000',
  },
  pruneRetentionSucceededMs: {
    file: 'test/worker/maintenance-loops.test.ts',
    shows: '0: succeeded jobs are archived at once',
  },
  pruneRetentionFailedMs: {
    file: 'test/worker/maintenance-loops.test.ts',
    shows: '1 d: failed jobs finished a minute ago stay',
  },
  pruneRetentionCancelledMs: { file: WIRING, shows: '0: a cancelled job is archived at once' },
  pruneRetentionAbandonedMs: {
    file: WIRING,
    shows: '30 s: an abandoned job finished a minute ago is archived, one finished now stays',
  },
  archiveRetentionPeriodMs: {
    file: 'test/worker/maintenance-loops.test.ts',
    shows: '0: archived rows expire and are deleted',
  },
  archiveExpiryScheduleUtc: { file: WIRING, shows: "the archive expiry's next run is at that time of day" },
  archiveExpiryCronExpr: { file: WIRING, shows: "the archive expiry's next run follows the cron expression" },
  forceUpdateActorConfig: {
    file: 'test/worker/notify-and-startup.test.ts',
    shows: 'true: a worker starts over a drifted actor_config row and overwrites it',
  },
  progressCoalesceIntervalMs: {
    file: 'test/worker/progress.test.ts',
    shows: 'progress reaches Postgres at the coalesce interval',
  },
  progressDataMaxBytes: {
    file: 'test/worker/progress.test.ts',
    shows: 'progress data over the cap is refused',
  },
  progressPublishGlobal: {
    file: 'test/worker/progress.test.ts',
    shows: 'progress is (or is not) published on the global channel',
  },
  resultMaxBytes: {
    file: 'test/worker/retries.test.ts',
    shows: 'a result over 1024 bytes fails the job with ResultTooLarge',
  },
  idleSettleWindowMs: {
    file: 'test/cli/cli-worker.test.ts',
    shows: '--until-idle exits once the queues stay empty',
  },
  idlePollIntervalMs: {
    file: 'test/cli/cli-worker.test.ts',
    shows: '--until-idle checks the queues at this cadence',
  },
  idleMaxRuntimeMs: { file: 'test/cli/cli-worker.test.ts', shows: '--until-idle is bounded by it (exit 4)' },
  watchdogEnabled: {
    file: 'test/worker/watchdog-worker.test.ts',
    shows: 'the watchdog runs (and trips) only when on',
  },
  watchdogLoopLagBudgetMs: {
    file: 'test/faults/watchdog-loop-lag.test.ts',
    shows: 'a worker whose loop is blocked past the budget ends with exit code 2',
  },
  watchdogLoopLagWarnBudgetMs: {
    file: 'test/faults/watchdog-loop-lag.test.ts',
    shows: 'a stall past the warning budget dumps the stack',
  },
  watchdogLoopLagStartupGraceMs: {
    file: 'test/worker/watchdog-detectors.test.ts',
    via: { name: 'startupGraceMs', wiredAt: WATCHDOG },
    shows: 'the lag detector stays unarmed through the startup grace',
  },
  watchdogTickGraceFactor: {
    file: 'test/worker/watchdog-detectors.test.ts',
    via: { name: 'graceFactor', wiredAt: WATCHDOG },
    shows: 'a loop is stale after its period × the grace factor (at least the floor)',
  },
  watchdogDumpIntervalMs: {
    file: 'test/worker/watchdog-detectors.test.ts',
    via: { name: 'dumpIntervalMs', wiredAt: WATCHDOG },
    shows: 'straggler records come every dump interval',
  },
  watchdogDumpAfterFraction: {
    file: 'test/worker/watchdog-detectors.test.ts',
    via: { name: 'dumpAfterFraction', wiredAt: WATCHDOG },
    shows: 'no straggler record in the front half of the budget at 0.5',
  },
  watchdogStaleFloorMs: {
    file: 'test/worker/watchdog-detectors.test.ts',
    via: { name: 'floorMs', wiredAt: WATCHDOG },
    shows: 'no loop is stale before the floor',
  },
  watchdogCheckIntervalMs: {
    file: 'test/faults/watchdog-loop-lag.test.ts',
    shows: 'the lag thread samples the loop at this cadence',
  },
  healthEnabled: {
    file: 'test/obs/health/worker-health.test.ts',
    shows: 'the Unix socket answers /live and /ready',
  },
  healthSocketPath: {
    file: 'test/obs/health/worker-health.test.ts',
    shows: 'the socket is served at that path',
  },
  healthPgPingTimeoutMs: {
    file: 'test/obs/health/readiness.test.ts',
    via: { name: 'pingTimeoutMs', wiredAt: OPEN_HEALTH },
    shows: "/ready's Postgres ping is bounded by it",
  },
  healthTasksEnabled: {
    file: 'test/faults/health-postgres-down.test.ts',
    shows: '/tasks answers on the Unix socket',
  },
  healthHost: { file: 'test/obs/health/worker-health.test.ts', shows: 'the TCP listener binds that address' },
  healthPort: { file: 'test/obs/health/worker-health.test.ts', shows: 'a TCP listener answers on the port' },
  healthRequestTimeoutMs: {
    file: HEALTH_SERVER,
    via: { name: 'requestTimeoutMs', wiredAt: OPEN_HEALTH },
    shows: 'a request that does not arrive whole in time is dropped',
  },
  healthMaxHeaderBytes: {
    file: HEALTH_SERVER,
    via: { name: 'maxHeaderBytes', wiredAt: OPEN_HEALTH },
    shows: 'headers over the cap are dropped unanswered',
  },
  healthReadinessCheckTimeoutMs: {
    file: 'test/obs/health/worker-health.test.ts',
    shows: 'a hanging readiness check fails /ready after the timeout',
  },
  idempotencyKeyMaxBytes: {
    file: 'test/client/client-size-settings.test.ts',
    shows: 'a 9-byte idempotency key is refused at 8',
  },
  payloadMaxBytes: {
    file: 'test/client/client-size-settings.test.ts',
    shows: 'a 2 KiB payload is refused at 1 KiB',
  },
  metricsPort: {
    file: 'test/obs/prometheus-exposition.test.ts',
    shows: 'the worker serves /metrics on the port, behind the token; a taken port fails the start',
  },
  cronCatchUpWindowMs: {
    file: 'test/worker/cron-firing.test.ts',
    shows: 'a leader back after the window fires only the in-window slots; within it every missed slot',
  },
  cronAutoDisableThreshold: {
    file: 'test/worker/cron-firing.test.ts',
    shows: 'a schedule is disabled after the threshold of consecutive failed slots; enable() resets it',
  },
  queueDepthIntervalMs: {
    file: 'test/obs/metrics/worker-metrics.test.ts',
    shows: 'the fleet gauges are read again once the interval passed, not before',
  },
  reservationSlotsIntervalMs: {
    file: 'test/obs/metrics/worker-metrics.test.ts',
    shows: 'the fleet gauges are read again once the interval passed, whatever queueDepthInterval says',
  },
  healthToken: {
    file: HEALTH_SERVER,
    via: { name: 'token', wiredAt: OPEN_HEALTH },
    shows: 'every route requires the bearer token when one is set',
  },
  environment: {
    file: UI_SERVE,
    shows: 'taskq ui serve starts without authentication with dev, and exits 2 with production or none',
  },
  adminHost: {
    file: UI_SERVE,
    shows: 'taskq ui serve listens on the host given (127.0.0.1, where the test connects)',
  },
  adminPort: { file: UI_SERVE, shows: 'taskq ui serve listens on the port given (0: a free one, printed)' },
  adminMaxSseConnections: { file: UI_SERVE, shows: 'with 1, a second live stream is refused with 503' },
  adminUiPollingIntervalSeconds: {
    file: UI_SERVE,
    shows: "0.5 s reaches the job page's polling fallback as data-poll-ms=500",
  },
  adminWorkerLivenessSeconds: {
    file: UI_SERVE,
    shows: "7 s is the liveness window the overview's banner names",
  },
  adminUiRequireAuth: {
    file: UI_SERVE,
    shows: 'false lets taskq ui serve start without authentication outside dev',
  },
  adminUiFrameAncestors: {
    file: UI_SERVE,
    shows: "self sends frame-ancestors 'self' and X-Frame-Options SAMEORIGIN",
  },
  adminUiSecureCookies: { file: UI_SERVE, shows: 'false drops the Secure flag from the CSRF cookie' },
  adminActionsEnabled: { file: UI_SERVE, shows: 'true shows the retry button on a failed job' },
  migrateOnStart: {
    file: UI_SERVE,
    shows: 'true makes taskq ui serve migrate an empty schema before serving (workers warn instead)',
  },
  adminUrl: {
    file: UI_SERVE,
    shows: 'taskq ui serve prints it as the address to open, and SSO sends the IdP its callback under it',
  },
  ssoBackend: {
    file: UI_SERVE,
    shows:
      'oidc makes taskq ui serve redirect a visitor to /auth/login and require the TASKQ_OIDC_* variables',
  },
  adminUiAllowRateLimitReset: {
    file: UI_SERVE,
    shows: "true (with actions) shows a published rate limit's Reset button and the reset refills it",
  },
};

const FIELDS: readonly SettingField[] = WORKER_SETTING_FIELDS;
const NOT_AVAILABLE = FIELDS.filter((f) => f.notAvailable !== undefined);

/** A valid value other than the default, for each not-available field: [env text, override]. */
function offDefault(field: SettingField): [string, unknown] {
  switch (field.kind) {
    case 'boolean':
      return [String(!field.default), !field.default];
    case 'duration': {
      const ms = (field.default ?? 0) + 60_000;
      return [`${ms}ms`, ms];
    }
    case 'integer':
    case 'float': {
      const n = (field.default ?? 0) + 1;
      return [String(n), n];
    }
    case 'string': {
      const samples: Record<string, string> = {
        pgDsnPooled: 'postgres://app@bouncer:6432/app',
        workgroupInstance: '0190a5b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b',
      };
      const v = samples[field.key];
      if (v === undefined) throw new Error(`no sample value for ${field.key}: add one to offDefault`);
      return [v, v];
    }
    default:
      throw new Error(`no off-default value for ${field.key} (kind ${field.kind}): add one to offDefault`);
  }
}

/** The default as environment text and as an override (null when there is no default). */
function atDefault(field: SettingField): [string | null, unknown] {
  const d = field.default as unknown;
  if (d === null) return [null, null];
  if (field.kind === 'duration') return [`${d as number}ms`, d];
  return [String(d), d];
}

function notAvailableError(run: () => unknown): SettingNotAvailableError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(SettingNotAvailableError);
    return err as SettingNotAvailableError;
  }
  throw new Error('expected a SettingNotAvailableError, but the settings loaded');
}

function expectNamed(err: SettingNotAvailableError, field: SettingField, source: string): void {
  const name = settingName(field);
  expect(err).toBeInstanceOf(SettingsError);
  expect(err.code).toBe('TASKQ_SETTING_NOT_AVAILABLE');
  expect(err.problems).toEqual([
    expect.objectContaining({ setting: name, source, notAvailable: field.notAvailable }),
  ]);
  const line = err.message.split('\n').find((l) => l.includes(source)) ?? '';
  for (const part of [name, field.key, field.env, 'is not available yet', field.notAvailable!])
    expect(line).toContain(part);
}

describe('every setting is wired or refused', () => {
  it('each table field is marked not available, or has a proof (a missing one is named)', () => {
    const missing: string[] = [];
    const both: string[] = [];
    for (const f of FIELDS) {
      const proved = PROOF[f.key] !== undefined;
      if (f.notAvailable !== undefined && proved) both.push(f.key);
      if (f.notAvailable === undefined && !proved) missing.push(`${f.key} (${f.env})`);
    }
    expect(missing, 'settings neither wired with a PROOF entry nor marked notAvailable').toEqual([]);
    expect(both, 'settings marked notAvailable that also claim a proof').toEqual([]);
    const unknown = Object.keys(PROOF).filter((k) => !FIELDS.some((f) => f.key === k));
    expect(unknown, 'PROOF entries for keys that are not settings').toEqual([]);
  });

  it.each(Object.entries(PROOF))('%s: its proof file exists and sets it', (key, proof) => {
    const field = FIELDS.find((f) => f.key === key)!;
    expect(existsSync(resolve(ROOT, proof!.file)), `${proof!.file} (proof of ${key})`).toBe(true);
    const text = read(proof!.file);
    const names = [field.key, settingName(field), field.env, ...(proof!.via ? [proof!.via.name] : [])];
    expect(
      names.some((n) => new RegExp(`\\b${n}\\b`).test(text)),
      `${proof!.file} mentions none of ${names.join(', ')}`,
    ).toBe(true);
    if (proof!.via) {
      // The component option the test drives is the one the setting is handed to.
      const src = read(proof!.via.wiredAt);
      expect(src, `${proof!.via.wiredAt} passes ${key}`).toContain(key);
      expect(src, `${proof!.via.wiredAt} passes it as ${proof!.via.name}`).toContain(proof!.via.name);
    }
  });
});

describe('not-available settings are refused, their defaults load', () => {
  it('some fields are marked (the table declares the marker)', () => {
    expect(NOT_AVAILABLE.map((f) => f.key).length).toBeGreaterThan(0);
  });

  it.each(NOT_AVAILABLE.map((f) => [f.key, f] as const))('%s', (_key, field) => {
    const [text, value] = offDefault(field);
    const fromEnv = notAvailableError(() => loadWorkerSettings({ env: { [field.env]: text } }));
    expectNamed(fromEnv, field, field.env);
    const name = settingName(field);
    const fromOverride = notAvailableError(() => loadWorkerSettings({ overrides: { [name]: value } }));
    expectNamed(fromOverride, field, `settings.${name}`);

    // A value that breaks the field's own rule is still answered with "not available".
    const bad = notAvailableError(() => loadWorkerSettings({ env: { [field.env]: 'not-a-value' } }));
    expectNamed(bad, field, field.env);

    // The default loads: unset, given as text, and given as an override.
    const [defaultText, defaultValue] = atDefault(field);
    expect(loadWorkerSettings({}).settings[field.key]).toEqual(
      field.key === 'pgDsnPooled' ? null : field.default,
    );
    if (defaultText !== null)
      expect(() => loadWorkerSettings({ env: { [field.env]: defaultText } })).not.toThrow();
    expect(() => loadWorkerSettings({ overrides: { [name]: defaultValue } })).not.toThrow();
    if (TASKQ_SETTING_FIELDS.includes(field)) {
      expectNamed(
        notAvailableError(() => loadTaskQSettings({ env: { [field.env]: text } })),
        field,
        field.env,
      );
    }
  });

  it.each(NOT_AVAILABLE.map((f) => [f.key, f] as const))(
    '%s: a worker given resolved settings (not loaded) refuses it too',
    (key, field) => {
      const resolved = loadWorkerSettings({ overrides: { pgDsn: 'postgres://u@db/app' } }).settings;
      const a = actor({ name: 'every_setting' }, async () => undefined);
      expect(() => new Worker({ actors: [a], settings: resolved })).not.toThrow();
      const err = notAvailableError(
        () => new Worker({ actors: [a], settings: { ...resolved, [key]: offDefault(field)[1] } }),
      );
      expect(err.problems).toEqual([
        expect.objectContaining({ setting: settingName(field), source: `settings.${key}` }),
      ]);
      expect(err.message).toContain(field.notAvailable);
    },
  );

  it('reports other problems of the same load too, in the one typed error', () => {
    const err = notAvailableError(() =>
      loadWorkerSettings({
        env: { TASKQ_WORKGROUP_INSTANCE: '0190a5b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b', TASKQ_MAX_CONCURRENCY: '0' },
      }),
    );
    expect(err.problems.map((p) => [p.source, p.notAvailable !== undefined])).toEqual([
      ['TASKQ_MAX_CONCURRENCY', false],
      ['TASKQ_WORKGROUP_INSTANCE', true],
    ]);
  });
});

describe('reference variables no field holds yet', () => {
  it.each(NOT_AVAILABLE_ENV_VARS.map((v) => [v.env, v] as const))(
    '%s is refused by the worker and the client loaders',
    (env, v) => {
      for (const load of [
        () => loadWorkerSettings({ env: { [env]: 'x' } }),
        () => loadTaskQSettings({ env: { [env]: 'x' } }),
      ]) {
        const err = notAvailableError(load);
        expect(err.code).toBe('TASKQ_SETTING_NOT_AVAILABLE');
        expect(err.problems).toEqual([
          expect.objectContaining({
            setting: v.setting,
            source: env,
            value: 'x',
            notAvailable: v.notAvailable,
          }),
        ]);
        expect(err.message).toContain(`${v.setting} (${env}) is not available yet: ${v.notAvailable}`);
      }
      // Blank counts as unset, as for every variable.
      expect(() => loadWorkerSettings({ env: { [env]: ' ' } })).not.toThrow();
    },
  );

  it('none of them is also a field', () => {
    const fieldEnvs = new Set<string>(FIELDS.map((f) => f.env));
    expect(NOT_AVAILABLE_ENV_VARS.filter((v) => fieldEnvs.has(v.env))).toEqual([]);
  });
});

describe('docs/configuration.md lists only what works', () => {
  const doc = read('docs/configuration.md');
  const section = (title: string): string => {
    const start = doc.indexOf(title);
    expect(start, `docs/configuration.md has a "${title}" section`).toBeGreaterThanOrEqual(0);
    const next = doc.indexOf('\n#', start + title.length);
    return doc.slice(start, next === -1 ? undefined : next);
  };
  /** The variables named in a table's first two cells (env var and setting, in either order). */
  const rowsOf = (text: string): Set<string> =>
    new Set(
      text
        .split('\n')
        .filter((l) => l.startsWith('| '))
        .flatMap((l) =>
          [
            ...l
              .split('|')
              .slice(1, 3)
              .join('|')
              .matchAll(/`(TASKQ_[A-Z_]+)`/g),
          ].map((m) => m[1]!),
        ),
    );

  it('the worker and client tables hold every wired setting and no not-available one', () => {
    const client = rowsOf(section('## Client settings'));
    expect(TASKQ_SETTING_FIELDS.filter((f) => !client.has(f.env)).map((f) => f.env)).toEqual([]);
    const table = new Set([...rowsOf(section('### Settings')), ...client]);
    const wired = FIELDS.filter((f) => f.notAvailable === undefined);
    expect(wired.filter((f) => !table.has(f.env)).map((f) => f.env)).toEqual([]);
    expect(NOT_AVAILABLE.filter((f) => table.has(f.env)).map((f) => f.env)).toEqual([]);
  });

  it('the not-available section names each not-available setting and variable, with its reason', () => {
    const apart = section('### Accepted names, not available yet');
    for (const f of NOT_AVAILABLE) expect(apart).toContain(`\`${f.env}\``);
    for (const v of NOT_AVAILABLE_ENV_VARS)
      expect(apart).toContain(v.env.replace(/^(TASKQ_(OIDC|SAML))_.*/, '$1_'));
  });
});
