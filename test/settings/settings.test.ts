import { describe, expect, it } from 'vitest';

import { TaskQError } from '../../src/errors/taskq-error.js';
import {
  loadWorkerSettings,
  SettingsError,
  workerPoolSize,
  worstCaseShutdownMs,
  type SettingProblem,
  type WorkerSettingsInput,
} from '../../src/settings/load-worker-settings.js';
import { settingName, WORKER_SETTING_FIELDS } from '../../src/settings/setting-fields.js';
import type { WorkerSettings } from '../../src/settings/worker-settings.js';

type Env = Record<string, string | undefined>;

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

function fromEnv(env: Env): WorkerSettings {
  return loadWorkerSettings({ env }).settings;
}

function settingsError(options: Parameters<typeof loadWorkerSettings>[0]): SettingsError {
  try {
    loadWorkerSettings(options);
  } catch (err) {
    if (err instanceof SettingsError) return err;
    throw err;
  }
  throw new Error('expected a SettingsError');
}

function onlyProblem(options: Parameters<typeof loadWorkerSettings>[0]): SettingProblem {
  const { problems } = settingsError(options);
  expect(problems).toHaveLength(1);
  return problems[0] as SettingProblem;
}

describe('loadWorkerSettings defaults', () => {
  it('match the reference (spec-inventory §19.3) when nothing is given', () => {
    const { settings, warnings } = loadWorkerSettings();
    expect(warnings).toEqual([]);
    expect(settings).toEqual({
      pgDsn: null,
      pgDsnDirect: null,
      pgDsnPooled: null,
      schema: 'taskq',
      redisUrl: null,
      queues: ['default'],
      maxConcurrency: 8,
      prefetch: null,
      heartbeatIntervalMs: 10 * S,
      lockLeaseMs: 60 * S,
      maxHeartbeatFailures: 3,
      dispatcherPoolSize: 4,
      dispatcherCommandTimeoutMs: 5 * S,
      dispatchOversample: 2,
      dispatchScopeByHomeQueue: false,
      heartbeatPoolSize: 4,
      heartbeatCommandTimeoutMs: 2 * S,
      sweepIntervalMs: 30 * S,
      queueDepthIntervalMs: 15 * S,
      reservationSlotsIntervalMs: 15 * S,
      strandedJobsIntervalMs: 60 * S,
      terminationGracePeriodMs: 75 * S,
      cancellationGracePeriodMs: 30 * S,
      cleanupGracePeriodMs: 10 * S,
      reclaimEventVisibilityDelayMs: 2 * S,
      maxRetryBackoffMs: 24 * H,
      defaultStartToCloseMs: null,
      rateLimitPgFallbackEnabled: true,
      maxKeyedReservations: 10_000,
      maxKeyedRateLimits: 10_000,
      pollIntervalMs: S,
      notifyHealthCheckIntervalMs: 5 * S,
      notifyReconnectBackoffInitialMs: S,
      notifyListenerSetupTimeoutMs: 10 * S,
      notifyEnabled: true,
      notifyPollIntervalMs: 5 * S,
      workerLabel: null,
      workgroupInstance: null,
      exceptionMessageMaxChars: 2000,
      exceptionRedactionEnabled: true,
      otelEnabled: true,
      logFormat: 'json',
      logLevel: 'info',
      pruneScheduleUtc: '03:00',
      pruneCronExpr: null,
      pruneBatchSize: 10_000,
      pruneRetentionPeriodMs: 30 * D,
      pruneRetentionSucceededMs: 30 * D,
      pruneRetentionFailedMs: 90 * D,
      pruneRetentionCancelledMs: 30 * D,
      pruneRetentionAbandonedMs: 90 * D,
      archiveRetentionPeriodMs: 365 * D,
      archiveExpiryScheduleUtc: '04:00',
      archiveExpiryCronExpr: null,
      forceUpdateActorConfig: false,
      progressCoalesceIntervalMs: 500,
      progressDataMaxBytes: 16_384,
      progressPublishGlobal: true,
      resultMaxBytes: 65_536,
      cronCatchUpWindowMs: H,
      cronAutoDisableThreshold: 3,
      idleSettleWindowMs: 2 * S,
      idlePollIntervalMs: S,
      idleMaxRuntimeMs: null,
      reloadIntervalMs: null,
      reloadFactoryTimeoutMs: 30_000,
      watchdogEnabled: true,
      watchdogLoopLagBudgetMs: 30 * S,
      watchdogLoopLagWarnBudgetMs: 5 * S,
      watchdogLoopLagStartupGraceMs: 30 * S,
      watchdogTickGraceFactor: 5,
      watchdogDumpIntervalMs: 5 * S,
      watchdogDumpAfterFraction: 0.5,
      watchdogStaleFloorMs: 10 * S,
      watchdogCheckIntervalMs: S,
      healthEnabled: true,
      healthSocketPath: '/tmp/taskq_health.sock',
      healthPgPingTimeoutMs: 200,
      healthTasksEnabled: false,
      healthHost: '0.0.0.0',
      healthPort: null,
      metricsPort: null,
      healthRequestTimeoutMs: 2 * S,
      healthMaxHeaderBytes: 16_384,
      healthReadinessCheckTimeoutMs: 5 * S,
      idempotencyKeyMaxBytes: 1024,
      payloadMaxBytes: 1024 * 1024,
      healthToken: null,
      pgCredentialProvider: null,
      redisCredentialProvider: null,
      environment: null,
      adminHost: '0.0.0.0',
      adminPort: 8080,
      adminMaxSseConnections: 50,
      adminUiPollingIntervalSeconds: 2,
      adminWorkerLivenessSeconds: 30,
      adminUiRequireAuth: true,
      adminUiFrameAncestors: 'none',
      adminUiSecureCookies: true,
      adminActionsEnabled: false,
      adminUrl: null,
      ssoBackend: 'none',
      adminUiAllowRateLimitReset: false,
      migrateOnStart: false,
    } satisfies WorkerSettings);
  });

  it('never reads process.env by itself', () => {
    const before = process.env.TASKQ_MAX_CONCURRENCY;
    process.env.TASKQ_MAX_CONCURRENCY = '99';
    try {
      expect(loadWorkerSettings().settings.maxConcurrency).toBe(8);
    } finally {
      if (before === undefined) delete process.env.TASKQ_MAX_CONCURRENCY;
      else process.env.TASKQ_MAX_CONCURRENCY = before;
    }
  });

  it('hands out a fresh queues array each time', () => {
    loadWorkerSettings().settings.queues.push('mutated');
    expect(loadWorkerSettings().settings.queues).toEqual(['default']);
  });

  it('has one table row per setting, named after the env var', () => {
    const names = WORKER_SETTING_FIELDS.map((f) => settingName(f));
    const envs = WORKER_SETTING_FIELDS.map((f) => f.env);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(envs).size).toBe(envs.length);
    for (const field of WORKER_SETTING_FIELDS) {
      const derived = `TASKQ_${settingName(field)
        .replace(/[A-Z]/g, (c) => `_${c}`)
        .toUpperCase()}`;
      expect(field.env).toBe(field.key === 'schema' ? 'TASKQ_SCHEMA_NAME' : derived);
      expect(field.key.endsWith('Ms')).toBe(field.kind === 'duration');
    }
  });
});

describe('loadWorkerSettings environment parsing', () => {
  it.each([
    ['10', 10 * S],
    ['2.5', 2500],
    ['1.1', 1100],
    [' 30 ', 30 * S],
    ['1500ms', 1500],
    ['1.5s', 1500],
    ['5m', 5 * MIN],
    ['2h', 2 * H],
    ['1d', D],
  ])('reads duration %j as %d ms (plain numbers are seconds)', (text, ms) => {
    expect(fromEnv({ TASKQ_SWEEP_INTERVAL: text }).sweepIntervalMs).toBe(ms);
  });

  it.each([[''], ['   ']])('treats %j as unset', (text) => {
    const s = fromEnv({ TASKQ_SWEEP_INTERVAL: text, TASKQ_QUEUES: text, TASKQ_WORKER_LABEL: text });
    expect(s.sweepIntervalMs).toBe(30 * S);
    expect(s.queues).toEqual(['default']);
    expect(s.workerLabel).toBeNull();
  });

  it('reads nullable durations', () => {
    const s = fromEnv({ TASKQ_DEFAULT_START_TO_CLOSE: '90', TASKQ_IDLE_MAX_RUNTIME: '10m' });
    expect(s.defaultStartToCloseMs).toBe(90 * S);
    expect(s.idleMaxRuntimeMs).toBe(10 * MIN);
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    ['On', true],
    ['false', false],
    ['False', false],
    ['0', false],
    ['no', false],
    ['OFF', false],
  ])('reads boolean %j as %s', (text, value) => {
    expect(fromEnv({ TASKQ_NOTIFY_ENABLED: text }).notifyEnabled).toBe(value);
    expect(fromEnv({ TASKQ_FORCE_UPDATE_ACTOR_CONFIG: text }).forceUpdateActorConfig).toBe(value);
  });

  it('reads integers and floats', () => {
    const s = fromEnv({
      TASKQ_MAX_CONCURRENCY: '16',
      TASKQ_DISPATCH_OVERSAMPLE: '+3',
      TASKQ_WATCHDOG_DUMP_AFTER_FRACTION: '.25',
      TASKQ_WATCHDOG_TICK_GRACE_FACTOR: '7.5',
    });
    expect([s.maxConcurrency, s.dispatchOversample]).toEqual([16, 3]);
    expect([s.watchdogDumpAfterFraction, s.watchdogTickGraceFactor]).toEqual([0.25, 7.5]);
  });

  it('reads a comma-separated queue list, trimmed and without duplicates', () => {
    expect(fromEnv({ TASKQ_QUEUES: 'emails, reports ,emails,a.b:c' }).queues).toEqual([
      'emails',
      'reports',
      'a.b:c',
    ]);
  });

  it.each([
    ['TASKQ_LOG_LEVEL', 'INFO', 'logLevel', 'info'],
    ['TASKQ_LOG_LEVEL', 'Warning', 'logLevel', 'warn'],
    ['TASKQ_LOG_LEVEL', 'CRITICAL', 'logLevel', 'fatal'],
    ['TASKQ_LOG_FORMAT', 'Console', 'logFormat', 'console'],
    ['TASKQ_SCHEMA_NAME', 'tenant_a', 'schema', 'tenant_a'],
    ['TASKQ_WORKER_LABEL', 'blue-7', 'workerLabel', 'blue-7'],
    ['TASKQ_PRUNE_SCHEDULE_UTC', '23:59', 'pruneScheduleUtc', '23:59'],
    ['TASKQ_ARCHIVE_EXPIRY_SCHEDULE_UTC', '00:00', 'archiveExpiryScheduleUtc', '00:00'],
    ['TASKQ_PRUNE_CRON_EXPR', '*/5 * * * 1-5', 'pruneCronExpr', '*/5 * * * 1-5'],
    ['TASKQ_REDIS_URL', 'rediss://cache:6380/0', 'redisUrl', 'rediss://cache:6380/0'],
    ['TASKQ_PG_DSN', 'postgresql://u@db/app', 'pgDsn', 'postgresql://u@db/app'],
  ] as const)('reads %s=%j', (env, text, key, value) => {
    expect(fromEnv({ [env]: text })[key]).toBe(value);
  });
});

describe('loadWorkerSettings overrides', () => {
  it('beat the environment, which beats the defaults', () => {
    const { settings } = loadWorkerSettings({
      env: {
        TASKQ_HEARTBEAT_INTERVAL: '5',
        TASKQ_QUEUES: 'x',
        TASKQ_MAX_CONCURRENCY: '4',
        TASKQ_OTEL_ENABLED: 'no',
      },
      overrides: { heartbeatInterval: '2s', queues: ['a', 'b', 'a'], maxConcurrency: 16 },
    });
    expect(settings.heartbeatIntervalMs).toBe(2 * S);
    expect(settings.queues).toEqual(['a', 'b']);
    expect(settings.maxConcurrency).toBe(16);
    expect(settings.otelEnabled).toBe(false);
  });

  it('take durations as milliseconds or unit strings, under the name without Ms', () => {
    const overrides: WorkerSettingsInput = { lockLease: 90_000, sweepInterval: '1m', idleMaxRuntime: '1h' };
    const { settings } = loadWorkerSettings({ overrides });
    expect([settings.lockLeaseMs, settings.sweepIntervalMs, settings.idleMaxRuntimeMs]).toEqual([
      90 * S,
      MIN,
      H,
    ]);
  });

  it('treat undefined as not given and null as "none" for nullable settings', () => {
    const { settings } = loadWorkerSettings({
      env: { TASKQ_DEFAULT_START_TO_CLOSE: '60', TASKQ_MAX_CONCURRENCY: '4' },
      overrides: { defaultStartToClose: null, maxConcurrency: undefined },
    });
    expect(settings.defaultStartToCloseMs).toBeNull();
    expect(settings.maxConcurrency).toBe(4);
  });

  it('do not check the environment value they replace', () => {
    const { settings } = loadWorkerSettings({
      env: { TASKQ_LOCK_LEASE: 'nonsense' },
      overrides: { lockLease: '2m' },
    });
    expect(settings.lockLeaseMs).toBe(2 * MIN);
  });
});

describe('loadWorkerSettings rejects bad environment values', () => {
  it.each([
    [
      'TASKQ_HEARTBEAT_INTERVAL',
      '0.4',
      'heartbeatInterval',
      />= 500ms \(a plain number is seconds: 0\.4 = 400ms\)/,
    ],
    [
      'TASKQ_HEARTBEAT_INTERVAL',
      '10 sec',
      'heartbeatInterval',
      /number of seconds .* or a duration with a unit/,
    ],
    ['TASKQ_LOCK_LEASE', '-5', 'lockLease', />= 1s/],
    ['TASKQ_LOCK_LEASE', '-5s', 'lockLease', /duration with a unit/],
    ['TASKQ_DISPATCHER_COMMAND_TIMEOUT', '0.5', 'dispatcherCommandTimeout', />= 1s/],
    ['TASKQ_HEARTBEAT_COMMAND_TIMEOUT', '0', 'heartbeatCommandTimeout', /> 0/],
    ['TASKQ_TERMINATION_GRACE_PERIOD', '4', 'terminationGracePeriod', />= 5s/],
    ['TASKQ_CANCELLATION_GRACE_PERIOD', '-1', 'cancellationGracePeriod', />= 0/],
    ['TASKQ_NOTIFY_POLL_INTERVAL', '0.4', 'notifyPollInterval', />= 500ms/],
    ['TASKQ_PROGRESS_COALESCE_INTERVAL', '50ms', 'progressCoalesceInterval', />= 100ms/],
    ['TASKQ_IDLE_POLL_INTERVAL', '0.05', 'idlePollInterval', />= 100ms/],
    ['TASKQ_PRUNE_RETENTION_FAILED', '-1', 'pruneRetentionFailed', />= 0/],
    ['TASKQ_DEFAULT_START_TO_CLOSE', '0', 'defaultStartToClose', /> 0/],
    ['TASKQ_MAX_CONCURRENCY', '3.5', 'maxConcurrency', /integer >= 1/],
    ['TASKQ_MAX_CONCURRENCY', '3abc', 'maxConcurrency', /integer >= 1/],
    ['TASKQ_MAX_CONCURRENCY', '0', 'maxConcurrency', /integer >= 1/],
    ['TASKQ_MAX_CONCURRENCY', '99999999999999999999', 'maxConcurrency', /integer >= 1/],
    ['TASKQ_DISPATCH_OVERSAMPLE', '1001', 'dispatchOversample', /between 1 and 1000/],
    ['TASKQ_RESULT_MAX_BYTES', '1023', 'resultMaxBytes', /between 1024 and 1048576/],
    ['TASKQ_PROGRESS_DATA_MAX_BYTES', '1048577', 'progressDataMaxBytes', /between 1024 and 1048576/],
    ['TASKQ_IDEMPOTENCY_KEY_MAX_BYTES', '2049', 'idempotencyKeyMaxBytes', /between 1 and 2048/],
    ['TASKQ_EXCEPTION_MESSAGE_MAX_CHARS', '99', 'exceptionMessageMaxChars', />= 100/],
    ['TASKQ_WATCHDOG_DUMP_AFTER_FRACTION', '1', 'watchdogDumpAfterFraction', /> 0 and < 1/],
    ['TASKQ_WATCHDOG_TICK_GRACE_FACTOR', 'Infinity', 'watchdogTickGraceFactor', /number > 0/],
    ['TASKQ_NOTIFY_ENABLED', 'maybe', 'notifyEnabled', /true or false/],
    ['TASKQ_QUEUES', 'a,,b', 'queues', /empty entries/],
    ['TASKQ_QUEUES', ',', 'queues', /empty entries/],
    ['TASKQ_QUEUES', 'ok,bad queue', 'queues', /queue "bad queue" is invalid: must be 1-128 characters/],
    ['TASKQ_SCHEMA_NAME', 'bad-name', 'schema', /\^\[A-Za-z_\]/],
    ['TASKQ_LOG_LEVEL', 'verbose', 'logLevel', /one of trace, debug, info/],
    ['TASKQ_LOG_FORMAT', 'xml', 'logFormat', /one of json, console/],
    ['TASKQ_WORKER_LABEL', 'x'.repeat(129), 'workerLabel', /1-128 characters/],
    ['TASKQ_WORKER_LABEL', 'a\u0000b', 'workerLabel', /NUL/],
    ['TASKQ_PRUNE_SCHEDULE_UTC', '24:00', 'pruneScheduleUtc', /HH:MM between 00:00 and 23:59/],
    ['TASKQ_ARCHIVE_EXPIRY_SCHEDULE_UTC', '3:00', 'archiveExpiryScheduleUtc', /HH:MM/],
    ['TASKQ_PRUNE_CRON_EXPR', '* * * *', 'pruneCronExpr', /5 whitespace-separated fields/],
    ['TASKQ_ARCHIVE_EXPIRY_CRON_EXPR', '0 4 * * * *', 'archiveExpiryCronExpr', /5 whitespace-separated/],
    ['TASKQ_REDIS_URL', 'http://cache:6379', 'redisUrl', /redis:\/\/ or rediss:\/\//],
    ['TASKQ_PG_DSN', 'mysql://db/app', 'pgDsn', /postgres:\/\/ or postgresql:\/\//],
    ['TASKQ_PG_DSN_DIRECT', 'localhost:6432', 'pgDsnDirect', /postgres:\/\//],
  ])('%s=%j', (env, text, setting, rule) => {
    const err = settingsError({ env: { [env]: text } });
    expect(err.problems).toEqual([{ setting, source: env, value: text, rule: expect.stringMatching(rule) }]);
    const line = err.message.split('\n').find((l) => l.includes(env));
    expect(line).toBeDefined();
    expect(line).toContain(JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text));
    expect(line).toMatch(rule);
  });
});

describe('loadWorkerSettings rejects bad overrides', () => {
  it.each([
    [{ maxConcurrency: '8' }, 'maxConcurrency', /integer >= 1/],
    [{ maxConcurrency: 2.5 }, 'maxConcurrency', /integer >= 1/],
    [{ lockLease: '1 minute' }, 'lockLease', /milliseconds \(a number\) or a duration string/],
    [{ lockLease: null }, 'lockLease', /must not be null/],
    [{ heartbeatInterval: 499 }, 'heartbeatInterval', />= 500ms/],
    [{ notifyEnabled: 'yes' }, 'notifyEnabled', /true or false/],
    [{ queues: 'a,b' }, 'queues', /array of queue names/],
    [{ queues: [] }, 'queues', /one or more queue names/],
    [{ logLevel: 'loud' }, 'logLevel', /one of trace/],
    [{ schema: 42 }, 'schema', /must be a string/],
    [{ workerLabel: '' }, 'workerLabel', /1-128 characters/],
    [
      { lockLeaseMs: 60_000 },
      'lockLeaseMs',
      /not a worker setting: durations are given without the Ms suffix, as lockLease/,
    ],
    [
      { heartbeatIntervl: '5s' },
      'heartbeatIntervl',
      /not a worker setting \(did you mean heartbeatInterval\?\)/,
    ],
    [{ frobnicate: true }, 'frobnicate', /^is not a worker setting$/],
  ])('%j', (overrides, setting, rule) => {
    const problem = onlyProblem({ overrides: overrides as WorkerSettingsInput });
    expect(problem).toEqual({
      setting,
      source: `settings.${setting}`,
      // An unknown key's value is not echoed: it may be a misspelt secret.
      value: rule.source.includes('not a worker setting')
        ? '<redacted>'
        : (overrides as Record<string, unknown>)[setting],
      rule: expect.stringMatching(rule),
    });
  });
});

describe('SettingsError', () => {
  it('reports every problem together, each on its own line', () => {
    const err = settingsError({
      env: {
        TASKQ_LOCK_LEASE: 'abc',
        TASKQ_MAX_CONCURRENCY: '0',
        TASKQ_NOTIFY_ENABLED: 'maybe',
        TASKQ_TERMINATION_GRACE_PERIOD: '30',
      },
      overrides: { logFormat: 'xml' as never, bogus: 1 } as WorkerSettingsInput,
    });
    expect(err).toBeInstanceOf(TaskQError);
    expect(err.code).toBe('TASKQ_INVALID_SETTINGS');
    expect(err.problems.map((p) => `${p.setting}@${p.source}`)).toEqual([
      'bogus@settings.bogus',
      'maxConcurrency@TASKQ_MAX_CONCURRENCY',
      'lockLease@TASKQ_LOCK_LEASE',
      'notifyEnabled@TASKQ_NOTIFY_ENABLED',
      'logFormat@settings.logFormat',
      'cancellationGracePeriod@default', // cross-field: 30s + 10s >= 30s - 5s
    ]);
    const lines = err.message.split('\n');
    expect(lines[0]).toBe('Invalid worker settings (6 problems); fix them and start again:');
    expect(lines.slice(1, 7)).toEqual([
      '  - settings.bogus = "<redacted>": is not a worker setting',
      '  - TASKQ_MAX_CONCURRENCY = "0": must be an integer >= 1',
      expect.stringMatching(/^ {2}- TASKQ_LOCK_LEASE = "abc": must be a number of seconds/),
      expect.stringMatching(/^ {2}- TASKQ_NOTIFY_ENABLED = "maybe": must be true or false/),
      '  - settings.logFormat = "xml": must be one of json, console (case-insensitive)',
      expect.stringMatching(
        /^ {2}- cancellationGracePeriod \(default\) = 30000: .*terminationGracePeriod 30s/,
      ),
    ]);
    // The tight termination grace also produces a warning, carried by the error.
    expect(err.warnings).toEqual([expect.stringContaining('worst-case shutdown of 67s')]);
    expect(lines).toContain('Warnings:');
  });

  it('rejects overrides that are not a plain object', () => {
    expect(onlyProblem({ overrides: 'lockLease=5' as never })).toMatchObject({ setting: 'overrides' });
  });
});

describe('loadWorkerSettings cross-field rules (§19.4), at their boundaries', () => {
  // `ok` sits exactly on the allowed side of the boundary, `bad` one step past it.
  it.each([
    {
      rule: 'lockLease >= 4 × heartbeatInterval',
      base: { watchdogLoopLagBudget: '5s', cancellationGracePeriod: '10s', cleanupGracePeriod: '5s' },
      ok: { heartbeatInterval: '10s', lockLease: '40s' },
      bad: { heartbeatInterval: '10s', lockLease: '39999ms' },
      on: 'lockLease',
      text: /lockLease 39\.999s \(settings\.lockLease\) must be at least 4 × heartbeatInterval 10s \(settings\.heartbeatInterval\) = 40s/,
    },
    {
      rule: 'cancellationGrace + cleanupGrace < terminationGrace - 5s',
      base: { lockLease: '120s' },
      ok: { cleanupGracePeriod: '39999ms' },
      bad: { cleanupGracePeriod: '40s' },
      on: 'cancellationGracePeriod',
      text: /cancellationGracePeriod 30s \(default\) \+ cleanupGracePeriod 40s \(settings\.cleanupGracePeriod\) = 70s must be less than terminationGracePeriod 75s \(default\) - 5s = 70s/,
    },
    {
      rule: 'cancellationGrace + cleanupGrace < lockLease',
      base: {},
      ok: { cleanupGracePeriod: '29999ms' },
      bad: { cleanupGracePeriod: '30s' },
      on: 'cancellationGracePeriod',
      text: /= 60s must be less than lockLease 60s \(default\)/,
    },
    {
      rule: 'watchdog staleness budget > 2s',
      base: { watchdogTickGraceFactor: 1, dispatcherCommandTimeout: '1s' },
      ok: { watchdogStaleFloor: '2001ms' },
      bad: { watchdogStaleFloor: '2s' },
      on: 'watchdogStaleFloor',
      text: /max\(1s × watchdogTickGraceFactor 1 \(settings\.watchdogTickGraceFactor\), watchdogStaleFloor 2s \(settings\.watchdogStaleFloor\)\) = 2s must be greater than 2s/,
    },
    {
      rule: 'dispatcherCommandTimeout + 1s < watchdog staleness budget',
      base: {},
      ok: { dispatcherCommandTimeout: '8999ms' },
      bad: { dispatcherCommandTimeout: '9s' },
      on: 'dispatcherCommandTimeout',
      text: /dispatcherCommandTimeout 9s \(settings\.dispatcherCommandTimeout\) \+ the 1s leader-loop period = 10s must be less than .*watchdogTickGraceFactor 5 \(default\), watchdogStaleFloor 10s \(default\)\) = 10s/,
    },
    {
      rule: 'watchdogLoopLagBudget + heartbeatInterval < lockLease',
      base: {},
      ok: { watchdogLoopLagBudget: '49999ms' },
      bad: { watchdogLoopLagBudget: '50s' },
      on: 'watchdogLoopLagBudget',
      text: /watchdogLoopLagBudget 50s \(settings\.watchdogLoopLagBudget\) \+ heartbeatInterval 10s \(default\) = 60s must be less than lockLease 60s \(default\)/,
    },
    {
      rule: 'watchdogLoopLagBudget > watchdogCheckInterval',
      base: { watchdogCheckInterval: '1s' },
      ok: { watchdogLoopLagBudget: '1001ms' },
      bad: { watchdogLoopLagBudget: '1s' },
      on: 'watchdogLoopLagBudget',
      text: /watchdogLoopLagBudget 1s \(settings\.watchdogLoopLagBudget\) must be greater than watchdogCheckInterval 1s \(settings\.watchdogCheckInterval\)/,
    },
  ])('$rule', ({ base, ok, bad, on, text }) => {
    expect(() => loadWorkerSettings({ overrides: { ...base, ...ok } as WorkerSettingsInput })).not.toThrow();
    const problem = onlyProblem({ overrides: { ...base, ...bad } as WorkerSettingsInput });
    expect(problem.setting).toBe(on);
    expect(problem.rule).toMatch(text);
  });

  it('names the env var when the value came from the environment', () => {
    const problem = onlyProblem({
      env: {
        TASKQ_LOCK_LEASE: '30',
        TASKQ_CLEANUP_GRACE_PERIOD: '0',
        TASKQ_CANCELLATION_GRACE_PERIOD: '10',
        TASKQ_WATCHDOG_LOOP_LAG_BUDGET: '5',
      },
    });
    expect(problem).toMatchObject({ setting: 'lockLease', source: 'TASKQ_LOCK_LEASE', value: '30' });
    expect(problem.rule).toContain('lockLease 30s (TASKQ_LOCK_LEASE)');
    expect(problem.rule).toContain('heartbeatInterval 10s (default)');
  });

  it('skips the watchdog rules when the watchdog is disabled', () => {
    const overrides: WorkerSettingsInput = {
      watchdogEnabled: false,
      watchdogTickGraceFactor: 1,
      watchdogStaleFloor: '1s',
      watchdogLoopLagBudget: '55s',
      watchdogCheckInterval: '60s',
    };
    expect(() => loadWorkerSettings({ overrides })).not.toThrow();
    expect(
      settingsError({ overrides: { ...overrides, watchdogEnabled: true } }).problems.map((p) => p.setting),
    ).toEqual(['watchdogStaleFloor', 'watchdogLoopLagBudget', 'watchdogLoopLagBudget']);
  });

  it('skips a rule when one of its settings was already rejected', () => {
    const problem = onlyProblem({ env: { TASKQ_HEARTBEAT_INTERVAL: 'soon' } });
    expect(problem.setting).toBe('heartbeatInterval');
  });
});

describe('loadWorkerSettings DSN fallback', () => {
  it('uses pgDsn for unset direct and pooled DSNs', () => {
    const s = fromEnv({ TASKQ_PG_DSN: 'postgres://u@db/app' });
    expect([s.pgDsn, s.pgDsnDirect, s.pgDsnPooled]).toEqual(Array(3).fill('postgres://u@db/app'));
  });

  it('keeps an explicitly set direct DSN', () => {
    const s = fromEnv({
      TASKQ_PG_DSN: 'postgres://u@bouncer:6432/app',
      TASKQ_PG_DSN_DIRECT: 'postgres://u@db/app',
    });
    expect(s.pgDsnDirect).toBe('postgres://u@db/app');
    expect(s.pgDsnPooled).toBe('postgres://u@bouncer:6432/app');
  });

  it('leaves all three null when no DSN is configured', () => {
    const s = fromEnv({});
    expect([s.pgDsn, s.pgDsnDirect, s.pgDsnPooled]).toEqual([null, null, null]);
  });

  it('falls back to an overridden pgDsn', () => {
    const { settings } = loadWorkerSettings({
      env: { TASKQ_PG_DSN: 'postgres://env/app' },
      overrides: { pgDsn: 'postgres://override/app' },
    });
    expect(settings.pgDsnDirect).toBe('postgres://override/app');
  });
});

describe('loadWorkerSettings warnings', () => {
  it.each([
    [
      'TASKQ_HEARTBEAT_INTERVL',
      /^TASKQ_HEARTBEAT_INTERVL is not a TaskQ setting and is ignored \(did you mean TASKQ_HEARTBEAT_INTERVAL\?\)$/,
    ],
    ['TASKQ_MAX_CONCURENCY', /did you mean TASKQ_MAX_CONCURRENCY\?/],
    ['TASKQ_QUEUE', /did you mean TASKQ_QUEUES\?/],
    // A dropped last word: the shortest variable that extends the name.
    ['TASKQ_SCHEMA', /did you mean TASKQ_SCHEMA_NAME\?/],
    ['TASKQ_REDIS', /did you mean TASKQ_REDIS_URL\?/],
    ['TASKQ_FROBNICATE_EVERYTHING', /^TASKQ_FROBNICATE_EVERYTHING is not a TaskQ setting and is ignored$/],
  ])('warns about %s', (name, warning) => {
    const { warnings } = loadWorkerSettings({ env: { [name]: '1' } });
    expect(warnings).toEqual([expect.stringMatching(warning)]);
  });

  it('stays quiet about other TaskQ variables and non-TaskQ variables', () => {
    const env = {
      TASKQ_EXAMPLE_PORT: '8000',
      TASKQ_TEST_DSN: 'x',
      TASKQ_TEST_PG_BINDIR: '/usr/lib/postgresql/15/bin',
      TASKQ_DEV_DATA_DIR: '.taskq-dev',
      TASKQ_ADMIN_PORT: '8080',
      TASKQ_SAML_ENTITY_ID: 'taskq',
      TASKQ_SCHEMA_NAME: 'app',
      PATH: '/bin',
    };
    expect(loadWorkerSettings({ env }).warnings).toEqual([]);
  });

  it('warns when the termination grace is below the modelled worst-case shutdown', () => {
    const base = { cancellationGracePeriod: '20s', cleanupGracePeriod: '10s' };
    expect(loadWorkerSettings({ overrides: { ...base, terminationGracePeriod: '57s' } }).warnings).toEqual(
      [],
    );
    const { warnings } = loadWorkerSettings({ overrides: { ...base, terminationGracePeriod: '56s' } });
    expect(warnings).toEqual([
      expect.stringMatching(
        /^terminationGracePeriod 56s \(settings\.terminationGracePeriod\) is below the modelled worst-case shutdown of 57s/,
      ),
    ]);
  });
});

describe('derived values', () => {
  it.each([
    [1, 1],
    [3, 4],
    [8, 12],
    [16, 24],
  ])('workerPoolSize(maxConcurrency %d) = %d', (maxConcurrency, size) => {
    expect(workerPoolSize({ maxConcurrency })).toBe(size);
  });

  it('worstCaseShutdownMs = cancellation + cleanup + 27s teardown', () => {
    expect(worstCaseShutdownMs(loadWorkerSettings().settings)).toBe(67 * S);
  });
});
