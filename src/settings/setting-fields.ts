import { isIP } from 'node:net';

import { CONNECTION_STRING_RULE, validateConnectionString } from '../db/connection-string.js';
import { formatMs, MAX_DURATION_MS, MAX_TIMER_MS } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';
import { PROVIDER_REFERENCE_RULE, providerReferenceProblem } from '../credentials/provider-reference.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../core/schema-name.js';
import type { SettingProblem } from './settings-error.js';
import type { WorkerSettings } from './worker-settings.js';

// The table of every worker setting: its environment variable, kind, default and constraints. The
// loader (`load-worker-settings.ts`) is generic over it, and docs/configuration.md mirrors it.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How a setting is parsed: from environment text, and from a programmatic override. */
export type SettingKind = 'duration' | 'integer' | 'float' | 'boolean' | 'string' | 'choice' | 'queueList';

/** Numeric bounds, in the setting's unit (milliseconds for durations). */
export interface NumericBounds {
  /** Inclusive lower bound. */
  readonly min?: number;
  /** Exclusive lower bound. */
  readonly gt?: number;
  /** Inclusive upper bound. */
  readonly max?: number;
  /** Exclusive upper bound. */
  readonly lt?: number;
}

type Key = keyof WorkerSettings;
type ValueOf<K extends Key> = NonNullable<WorkerSettings[K]>;

interface FieldCommon<K extends Key> {
  /** Property of {@link WorkerSettings}. */
  readonly key: K;
  /** Environment variable the setting is read from. */
  readonly env: `TASKQ_${string}`;
  /** Value used when neither an override nor the environment gives one (milliseconds for durations). */
  readonly default: WorkerSettings[K];
  /**
   * The setting is named (the reference has it) but nothing in TaskQ acts on it yet: what it waits
   * for, in words. Loading it with any value other than the default throws
   * `SettingNotAvailableError`; the default still loads. Enabling the setting = deleting this line.
   */
  readonly notAvailable?: string;
}

/** A string checked by a predicate; `check` returns the broken rule, or `undefined` when the value is fine. */
interface StringSpec {
  readonly kind: 'string';
  /** The rule in words (docs and error messages). */
  readonly rule: string;
  readonly check: (value: string) => string | undefined;
  /** The value is a secret: errors say `<redacted>` instead of echoing it. */
  readonly secret?: true;
}

/** One of a fixed set of lowercase words; input is case-insensitive, `aliases` map other spellings. */
interface ChoiceSpec<T extends string> {
  readonly kind: 'choice';
  readonly choices: readonly T[];
  readonly aliases?: Readonly<Record<string, T>>;
}

// The kind a field may have follows from its type in WorkerSettings, so the table cannot declare a
// boolean field as a duration or forget `nullable` on a field that accepts null.
type KindSpec<K extends Key> = K extends `${string}Ms`
  ? { readonly kind: 'duration' } & NumericBounds
  : ValueOf<K> extends boolean
    ? { readonly kind: 'boolean' }
    : ValueOf<K> extends number
      ? { readonly kind: 'integer' | 'float' } & NumericBounds
      : ValueOf<K> extends readonly string[]
        ? { readonly kind: 'queueList' }
        : string extends ValueOf<K>
          ? StringSpec
          : ValueOf<K> extends string
            ? ChoiceSpec<ValueOf<K>>
            : never;

type NullableSpec<K extends Key> = null extends WorkerSettings[K]
  ? {
      /** `null` (none) is a valid value; an empty environment variable leaves the default. */ readonly nullable: true;
    }
  : { readonly nullable?: false };

type FieldFor<K extends Key> = FieldCommon<K> & KindSpec<K> & NullableSpec<K>;

/** One row of the settings table. */
export type SettingField = { [K in Key]: FieldFor<K> }[Key];

/** Postgres connection strings: the one rule of `validateConnectionString`. */
const DSN_RULE = CONNECTION_STRING_RULE;
const REDIS_RULE = 'must be a URL starting with redis:// or rediss://';
const HH_MM_RULE = 'must be a time of day HH:MM between 00:00 and 23:59 (UTC)';
const CRON_RULE =
  'must be a cron expression of 5 whitespace-separated fields (minute hour day month weekday)';
const SCHEMA_RULE = 'must match ^[A-Za-z_][A-Za-z0-9_]*$ and be at most 63 characters';
const WORKER_LABEL_MAX_CHARS = 128;
const WORKER_LABEL_RULE = `must be 1-${WORKER_LABEL_MAX_CHARS} characters without NUL (\\u0000)`;
/** The rule of `checkQueueName` (text-checks.ts), for docs and messages. */
const QUEUE_NAME_RULE =
  '1-128 characters of letters, digits, "_", "-", "." or ":", starting with a letter or digit';
const UUID_RULE = 'must be a UUID (8-4-4-4-12 hexadecimal digits)';
/** `TASKQ_HEALTH_SOCKET_PATH`'s default (the reference's). */
export const DEFAULT_HEALTH_SOCKET_PATH = '/tmp/taskq_health.sock';
/** Linux's `sun_path` holds 108 bytes with the terminating NUL (macOS: 104). */
export const MAX_SOCKET_PATH_BYTES = 107;
const SOCKET_PATH_RULE = `must be a path of 1-${MAX_SOCKET_PATH_BYTES} UTF-8 bytes without NUL (the kernel's limit for a Unix socket)`;
const HOST_RULE = 'must be an IPv4 or IPv6 address or a host name';
const HOST_NAME_RE =
  /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const ENVIRONMENT_RULE = 'must be 1-64 letters, digits, "_", "-" or "."';
const ADMIN_URL_RULE = 'must be an absolute http(s) URL (the admin UI as a browser reaches it)';
const HEALTH_TOKEN_MAX_CHARS = 1024;
const HEALTH_TOKEN_RULE = `must be 1-${HEALTH_TOKEN_MAX_CHARS} visible ASCII characters (no spaces), as an HTTP bearer token`;

function matching(re: RegExp, rule: string): (value: string) => string | undefined {
  return (value) => (re.test(value) ? undefined : rule);
}

/** Runs one of the shared `check*`/`validate*` helpers and turns its throw into a rule. */
function ruleOf(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    if (err instanceof InvalidArgumentError) return err.rule;
    throw err;
  }
}

const dsn = (value: string): string | undefined => ruleOf(() => validateConnectionString(value, 'dsn'));
const hhmm = matching(/^([01]\d|2[0-3]):[0-5]\d$/, HH_MM_RULE);
const cron = (value: string): string | undefined =>
  value.trim().split(/\s+/).length === 5 ? undefined : CRON_RULE;

/**
 * Every {@link WorkerSettings} field, in the interface's order. Defaults are the reference's
 * (spec-inventory §19.3), except where a field's doc comment in `worker-settings.ts` says otherwise.
 */
export const WORKER_SETTING_FIELDS = [
  {
    key: 'pgDsn',
    env: 'TASKQ_PG_DSN',
    kind: 'string',
    default: null,
    nullable: true,
    rule: DSN_RULE,
    check: dsn,
  },
  {
    key: 'pgDsnDirect',
    env: 'TASKQ_PG_DSN_DIRECT',
    kind: 'string',
    default: null,
    nullable: true,
    rule: `${DSN_RULE}; falls back to pgDsn`,
    check: dsn,
  },
  {
    key: 'pgDsnPooled',
    notAvailable:
      "TaskQ has no handler-side pool yet (the reference's worker_pool, which may go through PgBouncer); every worker connection uses pgDsnDirect (or pgDsn)",
    env: 'TASKQ_PG_DSN_POOLED',
    kind: 'string',
    default: null,
    nullable: true,
    rule: `${DSN_RULE}; falls back to pgDsn`,
    check: dsn,
  },
  {
    key: 'schema',
    env: 'TASKQ_SCHEMA_NAME',
    kind: 'string',
    default: DEFAULT_SCHEMA,
    rule: SCHEMA_RULE,
    check: (v) => ruleOf(() => validateSchemaName(v)),
  },
  {
    key: 'redisUrl',
    env: 'TASKQ_REDIS_URL',
    kind: 'string',
    default: null,
    nullable: true,
    rule: REDIS_RULE,
    check: matching(/^rediss?:\/\//i, REDIS_RULE),
  },
  {
    key: 'pgCredentialProvider',
    env: 'TASKQ_PG_CREDENTIAL_PROVIDER',
    kind: 'string',
    default: null,
    nullable: true,
    rule: PROVIDER_REFERENCE_RULE,
    check: (v) => providerReferenceProblem(v),
  },
  {
    key: 'redisCredentialProvider',
    env: 'TASKQ_REDIS_CREDENTIAL_PROVIDER',
    kind: 'string',
    default: null,
    nullable: true,
    rule: PROVIDER_REFERENCE_RULE,
    check: (v) => providerReferenceProblem(v),
  },
  { key: 'queues', env: 'TASKQ_QUEUES', kind: 'queueList', default: ['default'] },
  { key: 'maxConcurrency', env: 'TASKQ_MAX_CONCURRENCY', kind: 'integer', default: 8, min: 1 },
  {
    key: 'prefetch',
    env: 'TASKQ_PREFETCH',
    kind: 'integer',
    default: null,
    nullable: true,
    min: 0,
    max: 10_000,
  },
  {
    key: 'heartbeatIntervalMs',
    env: 'TASKQ_HEARTBEAT_INTERVAL',
    kind: 'duration',
    default: 10 * SECOND,
    min: 500,
  },
  { key: 'lockLeaseMs', env: 'TASKQ_LOCK_LEASE', kind: 'duration', default: 60 * SECOND, min: SECOND },
  { key: 'maxHeartbeatFailures', env: 'TASKQ_MAX_HEARTBEAT_FAILURES', kind: 'integer', default: 3, min: 1 },
  { key: 'dispatcherPoolSize', env: 'TASKQ_DISPATCHER_POOL_SIZE', kind: 'integer', default: 4, min: 1 },
  {
    key: 'dispatcherCommandTimeoutMs',
    env: 'TASKQ_DISPATCHER_COMMAND_TIMEOUT',
    kind: 'duration',
    default: 5 * SECOND,
    min: SECOND,
  },
  {
    key: 'dispatchOversample',
    env: 'TASKQ_DISPATCH_OVERSAMPLE',
    kind: 'integer',
    default: 2,
    min: 1,
    max: 1000,
  },
  {
    key: 'dispatchScopeByHomeQueue',
    notAvailable:
      'the dispatch statement probes every actor with pending work; scoping it to home queues is not built yet',
    env: 'TASKQ_DISPATCH_SCOPE_BY_HOME_QUEUE',
    kind: 'boolean',
    default: false,
  },
  { key: 'heartbeatPoolSize', env: 'TASKQ_HEARTBEAT_POOL_SIZE', kind: 'integer', default: 4, min: 1 },
  {
    key: 'heartbeatCommandTimeoutMs',
    env: 'TASKQ_HEARTBEAT_COMMAND_TIMEOUT',
    kind: 'duration',
    default: 2 * SECOND,
    gt: 0,
  },
  {
    key: 'sweepIntervalMs',
    env: 'TASKQ_SWEEP_INTERVAL',
    kind: 'duration',
    default: 30 * SECOND,
    min: SECOND,
  },
  {
    key: 'queueDepthIntervalMs',
    env: 'TASKQ_QUEUE_DEPTH_INTERVAL',
    kind: 'duration',
    default: 15 * SECOND,
    min: SECOND,
  },
  {
    key: 'reservationSlotsIntervalMs',
    env: 'TASKQ_RESERVATION_SLOTS_INTERVAL',
    kind: 'duration',
    default: 15 * SECOND,
    min: SECOND,
  },
  {
    key: 'strandedJobsIntervalMs',
    env: 'TASKQ_STRANDED_JOBS_INTERVAL',
    kind: 'duration',
    default: 60 * SECOND,
    min: SECOND,
  },
  {
    key: 'terminationGracePeriodMs',
    env: 'TASKQ_TERMINATION_GRACE_PERIOD',
    kind: 'duration',
    default: 75 * SECOND,
    min: 5 * SECOND,
  },
  {
    key: 'cancellationGracePeriodMs',
    env: 'TASKQ_CANCELLATION_GRACE_PERIOD',
    kind: 'duration',
    default: 30 * SECOND,
    min: 0,
  },
  {
    key: 'cleanupGracePeriodMs',
    env: 'TASKQ_CLEANUP_GRACE_PERIOD',
    kind: 'duration',
    default: 10 * SECOND,
    min: 0,
  },
  {
    key: 'reclaimEventVisibilityDelayMs',
    notAvailable:
      'no worker service reads the reclaim feed yet; give the delay per call on the client: taskq.watchReclaims({ visibilityDelay })',
    env: 'TASKQ_RECLAIM_EVENT_VISIBILITY_DELAY',
    kind: 'duration',
    default: 2 * SECOND,
    min: 0,
  },
  { key: 'maxRetryBackoffMs', env: 'TASKQ_MAX_RETRY_BACKOFF', kind: 'duration', default: 24 * HOUR, gt: 0 },
  {
    key: 'defaultStartToCloseMs',
    env: 'TASKQ_DEFAULT_START_TO_CLOSE',
    kind: 'duration',
    default: null,
    nullable: true,
    gt: 0,
  },
  {
    key: 'rateLimitPgFallbackEnabled',
    env: 'TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED',
    kind: 'boolean',
    default: true,
  },
  {
    key: 'maxKeyedReservations',
    env: 'TASKQ_MAX_KEYED_RESERVATIONS',
    kind: 'integer',
    default: 10_000,
    min: 1,
  },
  { key: 'maxKeyedRateLimits', env: 'TASKQ_MAX_KEYED_RATE_LIMITS', kind: 'integer', default: 10_000, min: 1 },
  { key: 'pollIntervalMs', env: 'TASKQ_POLL_INTERVAL', kind: 'duration', default: SECOND, gt: 0 },
  {
    key: 'notifyHealthCheckIntervalMs',
    env: 'TASKQ_NOTIFY_HEALTH_CHECK_INTERVAL',
    kind: 'duration',
    default: 5 * SECOND,
    gt: 0,
  },
  {
    key: 'notifyReconnectBackoffInitialMs',
    env: 'TASKQ_NOTIFY_RECONNECT_BACKOFF_INITIAL',
    kind: 'duration',
    default: SECOND,
    gt: 0,
  },
  {
    key: 'notifyListenerSetupTimeoutMs',
    env: 'TASKQ_NOTIFY_LISTENER_SETUP_TIMEOUT',
    kind: 'duration',
    default: 10 * SECOND,
    gt: 0,
  },
  { key: 'notifyEnabled', env: 'TASKQ_NOTIFY_ENABLED', kind: 'boolean', default: true },
  {
    key: 'notifyPollIntervalMs',
    env: 'TASKQ_NOTIFY_POLL_INTERVAL',
    kind: 'duration',
    default: 5 * SECOND,
    min: 500,
  },
  {
    key: 'workerLabel',
    env: 'TASKQ_WORKER_LABEL',
    kind: 'string',
    default: null,
    nullable: true,
    rule: WORKER_LABEL_RULE,
    check: (v) =>
      v.length === 0 || [...v].length > WORKER_LABEL_MAX_CHARS || v.includes('\u0000')
        ? WORKER_LABEL_RULE
        : undefined,
  },
  {
    key: 'workgroupInstance',
    notAvailable:
      'the workers table has no workgroup column yet; workgroup orchestration arrives in a later release',
    env: 'TASKQ_WORKGROUP_INSTANCE',
    kind: 'string',
    default: null,
    nullable: true,
    rule: UUID_RULE,
    check: (v) => (isUuid(v) ? undefined : UUID_RULE),
  },
  {
    key: 'exceptionMessageMaxChars',
    env: 'TASKQ_EXCEPTION_MESSAGE_MAX_CHARS',
    kind: 'integer',
    default: 2000,
    min: 100,
  },
  {
    key: 'exceptionRedactionEnabled',
    env: 'TASKQ_EXCEPTION_REDACTION_ENABLED',
    kind: 'boolean',
    default: true,
  },
  { key: 'otelEnabled', env: 'TASKQ_OTEL_ENABLED', kind: 'boolean', default: true },
  {
    key: 'logFormat',
    env: 'TASKQ_LOG_FORMAT',
    kind: 'choice',
    default: 'json',
    choices: ['json', 'console'],
  },
  {
    key: 'logLevel',
    env: 'TASKQ_LOG_LEVEL',
    kind: 'choice',
    default: 'info',
    choices: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    // The reference's level names (Python logging), so its env files keep working.
    aliases: { warning: 'warn', critical: 'fatal' },
  },
  {
    key: 'pruneScheduleUtc',
    env: 'TASKQ_PRUNE_SCHEDULE_UTC',
    kind: 'string',
    default: '03:00',
    rule: HH_MM_RULE,
    check: hhmm,
  },
  {
    key: 'pruneCronExpr',
    env: 'TASKQ_PRUNE_CRON_EXPR',
    kind: 'string',
    default: null,
    nullable: true,
    rule: CRON_RULE,
    check: cron,
  },
  { key: 'pruneBatchSize', env: 'TASKQ_PRUNE_BATCH_SIZE', kind: 'integer', default: 10_000, min: 1 },
  {
    key: 'pruneRetentionPeriodMs',
    notAvailable:
      'every terminal status has its own retention (pruneRetentionSucceeded, -Failed, -Cancelled, -Abandoned); a fallback for statuses without one is not built yet',
    env: 'TASKQ_PRUNE_RETENTION_PERIOD',
    kind: 'duration',
    default: 30 * DAY,
    min: 0,
  },
  {
    key: 'pruneRetentionSucceededMs',
    env: 'TASKQ_PRUNE_RETENTION_SUCCEEDED',
    kind: 'duration',
    default: 30 * DAY,
    min: 0,
  },
  {
    key: 'pruneRetentionFailedMs',
    env: 'TASKQ_PRUNE_RETENTION_FAILED',
    kind: 'duration',
    default: 90 * DAY,
    min: 0,
  },
  {
    key: 'pruneRetentionCancelledMs',
    env: 'TASKQ_PRUNE_RETENTION_CANCELLED',
    kind: 'duration',
    default: 30 * DAY,
    min: 0,
  },
  {
    key: 'pruneRetentionAbandonedMs',
    env: 'TASKQ_PRUNE_RETENTION_ABANDONED',
    kind: 'duration',
    default: 90 * DAY,
    min: 0,
  },
  {
    key: 'archiveRetentionPeriodMs',
    env: 'TASKQ_ARCHIVE_RETENTION_PERIOD',
    kind: 'duration',
    default: 365 * DAY,
    min: 0,
  },
  {
    key: 'archiveExpiryScheduleUtc',
    env: 'TASKQ_ARCHIVE_EXPIRY_SCHEDULE_UTC',
    kind: 'string',
    default: '04:00',
    rule: HH_MM_RULE,
    check: hhmm,
  },
  {
    key: 'archiveExpiryCronExpr',
    env: 'TASKQ_ARCHIVE_EXPIRY_CRON_EXPR',
    kind: 'string',
    default: null,
    nullable: true,
    rule: CRON_RULE,
    check: cron,
  },
  { key: 'forceUpdateActorConfig', env: 'TASKQ_FORCE_UPDATE_ACTOR_CONFIG', kind: 'boolean', default: false },
  {
    key: 'progressCoalesceIntervalMs',
    env: 'TASKQ_PROGRESS_COALESCE_INTERVAL',
    kind: 'duration',
    default: 500,
    min: 100,
  },
  {
    key: 'progressDataMaxBytes',
    env: 'TASKQ_PROGRESS_DATA_MAX_BYTES',
    kind: 'integer',
    default: 16_384,
    min: 1024,
    max: 1_048_576,
  },
  { key: 'progressPublishGlobal', env: 'TASKQ_PROGRESS_PUBLISH_GLOBAL', kind: 'boolean', default: true },
  {
    key: 'resultMaxBytes',
    env: 'TASKQ_RESULT_MAX_BYTES',
    kind: 'integer',
    default: 65_536,
    min: 1024,
    max: 1_048_576,
  },
  {
    key: 'cronCatchUpWindowMs',
    env: 'TASKQ_CRON_CATCH_UP_WINDOW',
    kind: 'duration',
    default: HOUR,
    min: 0,
  },
  {
    key: 'cronAutoDisableThreshold',
    env: 'TASKQ_CRON_AUTO_DISABLE_THRESHOLD',
    kind: 'integer',
    default: 3,
    min: 1,
  },
  {
    key: 'idleSettleWindowMs',
    env: 'TASKQ_IDLE_SETTLE_WINDOW',
    kind: 'duration',
    default: 2 * SECOND,
    min: 0,
  },
  { key: 'idlePollIntervalMs', env: 'TASKQ_IDLE_POLL_INTERVAL', kind: 'duration', default: SECOND, min: 100 },
  {
    key: 'idleMaxRuntimeMs',
    env: 'TASKQ_IDLE_MAX_RUNTIME',
    kind: 'duration',
    default: null,
    nullable: true,
    gt: 0,
  },
  {
    key: 'reloadIntervalMs',
    env: 'TASKQ_RELOAD_INTERVAL',
    kind: 'duration',
    default: null,
    nullable: true,
    gt: 0,
  },
  {
    key: 'reloadFactoryTimeoutMs',
    env: 'TASKQ_RELOAD_FACTORY_TIMEOUT',
    kind: 'duration',
    default: 30 * SECOND,
    gt: 0,
  },
  { key: 'watchdogEnabled', env: 'TASKQ_WATCHDOG_ENABLED', kind: 'boolean', default: true },
  {
    key: 'watchdogLoopLagBudgetMs',
    env: 'TASKQ_WATCHDOG_LOOP_LAG_BUDGET',
    kind: 'duration',
    default: 30 * SECOND,
    gt: 0,
  },
  {
    key: 'watchdogLoopLagWarnBudgetMs',
    env: 'TASKQ_WATCHDOG_LOOP_LAG_WARN_BUDGET',
    kind: 'duration',
    default: 5 * SECOND,
    gt: 0,
  },
  {
    key: 'watchdogLoopLagStartupGraceMs',
    env: 'TASKQ_WATCHDOG_LOOP_LAG_STARTUP_GRACE',
    kind: 'duration',
    default: 30 * SECOND,
    min: 0,
  },
  {
    key: 'watchdogTickGraceFactor',
    env: 'TASKQ_WATCHDOG_TICK_GRACE_FACTOR',
    kind: 'float',
    default: 5,
    gt: 0,
  },
  {
    key: 'watchdogDumpIntervalMs',
    env: 'TASKQ_WATCHDOG_DUMP_INTERVAL',
    kind: 'duration',
    default: 5 * SECOND,
    gt: 0,
  },
  {
    key: 'watchdogDumpAfterFraction',
    env: 'TASKQ_WATCHDOG_DUMP_AFTER_FRACTION',
    kind: 'float',
    default: 0.5,
    gt: 0,
    lt: 1,
  },
  {
    key: 'watchdogStaleFloorMs',
    env: 'TASKQ_WATCHDOG_STALE_FLOOR',
    kind: 'duration',
    default: 10 * SECOND,
    gt: 0,
  },
  {
    key: 'watchdogCheckIntervalMs',
    env: 'TASKQ_WATCHDOG_CHECK_INTERVAL',
    kind: 'duration',
    default: SECOND,
    gt: 0,
  },
  { key: 'healthEnabled', env: 'TASKQ_HEALTH_ENABLED', kind: 'boolean', default: true },
  {
    key: 'healthSocketPath',
    env: 'TASKQ_HEALTH_SOCKET_PATH',
    kind: 'string',
    default: DEFAULT_HEALTH_SOCKET_PATH,
    rule: SOCKET_PATH_RULE,
    check: (v) =>
      v.length === 0 || v.includes('\u0000') || Buffer.byteLength(v, 'utf8') > MAX_SOCKET_PATH_BYTES
        ? SOCKET_PATH_RULE
        : undefined,
  },
  {
    key: 'healthPgPingTimeoutMs',
    env: 'TASKQ_HEALTH_PG_PING_TIMEOUT',
    kind: 'duration',
    default: 200,
    gt: 0,
  },
  { key: 'healthTasksEnabled', env: 'TASKQ_HEALTH_TASKS_ENABLED', kind: 'boolean', default: false },
  {
    key: 'healthHost',
    env: 'TASKQ_HEALTH_HOST',
    kind: 'string',
    default: '0.0.0.0',
    rule: HOST_RULE,
    check: (v) => (isIP(v) !== 0 || HOST_NAME_RE.test(v) ? undefined : HOST_RULE),
  },
  {
    key: 'healthPort',
    env: 'TASKQ_HEALTH_PORT',
    kind: 'integer',
    default: null,
    nullable: true,
    min: 0,
    max: 65_535,
  },
  {
    key: 'metricsPort',
    env: 'TASKQ_METRICS_PORT',
    kind: 'integer',
    default: null,
    nullable: true,
    min: 0,
    max: 65_535,
  },
  {
    key: 'healthRequestTimeoutMs',
    env: 'TASKQ_HEALTH_REQUEST_TIMEOUT',
    kind: 'duration',
    default: 2 * SECOND,
    gt: 0,
  },
  {
    key: 'healthMaxHeaderBytes',
    env: 'TASKQ_HEALTH_MAX_HEADER_BYTES',
    kind: 'integer',
    default: 16 * 1024,
    min: 512,
    max: 64 * 1024,
  },
  {
    key: 'healthReadinessCheckTimeoutMs',
    env: 'TASKQ_HEALTH_READINESS_CHECK_TIMEOUT',
    kind: 'duration',
    default: 5 * SECOND,
    gt: 0,
  },
  {
    key: 'idempotencyKeyMaxBytes',
    env: 'TASKQ_IDEMPOTENCY_KEY_MAX_BYTES',
    kind: 'integer',
    default: 1024,
    min: 1,
    max: 2048,
  },
  {
    key: 'payloadMaxBytes',
    env: 'TASKQ_PAYLOAD_MAX_BYTES',
    kind: 'integer',
    default: 1024 * 1024,
    min: 1024,
    max: 64 * 1024 * 1024,
  },
  {
    key: 'healthToken',
    env: 'TASKQ_HEALTH_TOKEN',
    kind: 'string',
    default: null,
    nullable: true,
    secret: true,
    rule: HEALTH_TOKEN_RULE,
    check: (v) =>
      /^[\x21-\x7e]+$/.test(v) && v.length <= HEALTH_TOKEN_MAX_CHARS ? undefined : HEALTH_TOKEN_RULE,
  },
  {
    key: 'environment',
    env: 'TASKQ_ENVIRONMENT',
    kind: 'string',
    default: null,
    nullable: true,
    rule: ENVIRONMENT_RULE,
    check: matching(/^[A-Za-z0-9_.-]{1,64}$/, ENVIRONMENT_RULE),
  },
  {
    key: 'adminHost',
    env: 'TASKQ_ADMIN_HOST',
    kind: 'string',
    default: '0.0.0.0',
    rule: HOST_RULE,
    check: (v) => (isIP(v) !== 0 || HOST_NAME_RE.test(v) ? undefined : HOST_RULE),
  },
  { key: 'adminPort', env: 'TASKQ_ADMIN_PORT', kind: 'integer', default: 8080, min: 0, max: 65_535 },
  {
    key: 'adminMaxSseConnections',
    env: 'TASKQ_ADMIN_MAX_SSE_CONNECTIONS',
    kind: 'integer',
    default: 50,
    min: 1,
  },
  {
    key: 'adminUiPollingIntervalSeconds',
    env: 'TASKQ_ADMIN_UI_POLLING_INTERVAL_SECONDS',
    kind: 'float',
    default: 2,
    min: 0.1,
    max: MAX_TIMER_MS / 1000,
  },
  {
    key: 'adminWorkerLivenessSeconds',
    env: 'TASKQ_ADMIN_WORKER_LIVENESS_SECONDS',
    kind: 'integer',
    default: 30,
    min: 1,
    max: Math.floor(MAX_TIMER_MS / 1000),
  },
  { key: 'adminUiRequireAuth', env: 'TASKQ_ADMIN_UI_REQUIRE_AUTH', kind: 'boolean', default: true },
  {
    key: 'adminUiFrameAncestors',
    env: 'TASKQ_ADMIN_UI_FRAME_ANCESTORS',
    kind: 'choice',
    choices: ['none', 'self'],
    default: 'none',
  },
  { key: 'adminUiSecureCookies', env: 'TASKQ_ADMIN_UI_SECURE_COOKIES', kind: 'boolean', default: true },
  { key: 'adminActionsEnabled', env: 'TASKQ_ADMIN_ACTIONS_ENABLED', kind: 'boolean', default: false },
  {
    key: 'adminUrl',
    env: 'TASKQ_ADMIN_URL',
    kind: 'string',
    default: null,
    nullable: true,
    rule: ADMIN_URL_RULE,
    check: (v) => {
      try {
        const url = new URL(v);
        return url.protocol === 'http:' || url.protocol === 'https:' ? undefined : ADMIN_URL_RULE;
      } catch {
        return ADMIN_URL_RULE;
      }
    },
  },
  {
    key: 'ssoBackend',
    env: 'TASKQ_SSO_BACKEND',
    kind: 'choice',
    choices: ['none', 'oidc', 'saml'],
    default: 'none',
  },
  {
    key: 'adminUiAllowRateLimitReset',
    env: 'TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET',
    kind: 'boolean',
    default: false,
  },
  { key: 'migrateOnStart', env: 'TASKQ_MIGRATE_ON_START', kind: 'boolean', default: false },
] as const satisfies readonly SettingField[];

/**
 * Durations the database keeps as intervals (retention periods, backoff and catch-up windows, the
 * reclaim feed's delay): at most 100 years. Every other duration setting drives a timer, and Node.js
 * fires a `setTimeout` longer than 2^31 - 1 ms at once, so those are bounded by that (about 24.8 days).
 */
const INTERVAL_DURATION_KEYS: ReadonlySet<string> = new Set([
  'reclaimEventVisibilityDelayMs',
  'maxRetryBackoffMs',
  'pruneRetentionPeriodMs',
  'pruneRetentionSucceededMs',
  'pruneRetentionFailedMs',
  'pruneRetentionCancelledMs',
  'pruneRetentionAbandonedMs',
  'archiveRetentionPeriodMs',
  'cronCatchUpWindowMs',
]);

/**
 * The bound of a duration setting without a `max` of its own (see {@link INTERVAL_DURATION_KEYS}),
 * or undefined for any other setting.
 */
export function implicitDurationMax(field: SettingField): number | undefined {
  if (field.kind !== 'duration' || field.max !== undefined) return undefined;
  return INTERVAL_DURATION_KEYS.has(field.key) ? MAX_DURATION_MS : MAX_TIMER_MS;
}

// Compile-time proof that the table covers every WorkerSettings field.
type MissingFields = Exclude<Key, (typeof WORKER_SETTING_FIELDS)[number]['key']>;
const _everyFieldListed: [MissingFields] extends [never] ? true : MissingFields = true;
void _everyFieldListed;

/**
 * The name a field has in `WorkerSettingsInput` and in error messages: the `WorkerSettings`
 * property, without the `Ms` suffix for durations (`lockLeaseMs` → `lockLease`).
 */
export function settingName(field: SettingField): string {
  return field.kind === 'duration' ? field.key.slice(0, -2) : field.key;
}

function formatBound(field: SettingField, n: number): string {
  return field.kind === 'duration' && n !== 0 ? formatMs(n) : String(n);
}

/** The field's constraint in words, e.g. `must be at least 500ms`. */
export function describeRule(field: SettingField): string {
  switch (field.kind) {
    case 'string':
      return field.rule;
    case 'boolean':
      return 'must be true or false (env: true/false, 1/0, yes/no, on/off)';
    case 'choice':
      return `must be one of ${field.choices.join(', ')} (case-insensitive)`;
    case 'queueList':
      return `must be one or more queue names (comma-separated in the environment), each ${QUEUE_NAME_RULE}`;
    default: {
      const b: NumericBounds = field;
      const parts: string[] = [];
      if (b.min !== undefined && b.max !== undefined) {
        parts.push(`between ${formatBound(field, b.min)} and ${formatBound(field, b.max)}`);
      } else {
        if (b.min !== undefined) parts.push(`>= ${formatBound(field, b.min)}`);
        if (b.gt !== undefined) parts.push(`> ${formatBound(field, b.gt)}`);
        if (b.max !== undefined) parts.push(`<= ${formatBound(field, b.max)}`);
        if (b.lt !== undefined) parts.push(`< ${formatBound(field, b.lt)}`);
      }
      const what =
        field.kind === 'integer' ? 'an integer' : field.kind === 'float' ? 'a number' : 'a duration';
      return parts.length === 0 ? `must be ${what}` : `must be ${what} ${parts.join(' and ')}`;
    }
  }
}

/**
 * The single sign-on variables (`TASKQ_OIDC_*`, `TASKQ_SAML_*`, the reference's `OIDCSettings` and
 * `SAMLSettings`). `taskq ui serve` reads them when `TASKQ_SSO_BACKEND` names their backend
 * (src/settings/sso-settings.ts); they are not worker settings.
 */
export const SSO_ENV_VARS: readonly string[] = [
  ...[
    'ISSUER',
    'CLIENT_ID',
    'CLIENT_SECRET',
    'REDIRECT_URI',
    'SESSION_SECRET',
    'SESSION_MAX_AGE_SECONDS',
    'SCOPE',
    'GROUP_CLAIM',
    'ALLOWED_GROUPS',
  ].map((name) => `TASKQ_OIDC_${name}`),
  ...[
    'ENTITY_ID',
    'ACS_URL',
    'IDP_ENTITY_ID',
    'IDP_SSO_URL',
    'IDP_X509_CERT',
    'SP_X509_CERT',
    'SP_PRIVATE_KEY',
    'SESSION_SECRET',
    'SESSION_MAX_AGE_SECONDS',
    'GROUP_ATTRIBUTE',
    'ALLOWED_GROUPS',
  ].map((name) => `TASKQ_SAML_${name}`),
];

/**
 * `TASKQ_*` variables that other programs read (TaskQ's test suite, the reference's example app) or
 * that belong to another part's settings. The loaders and the CLI ignore them without a warning.
 */
export const SHARED_ENV_VARS: readonly string[] = [
  'TASKQ_HEALTH_REQUIRE_TOKEN',
  ...SSO_ENV_VARS,
  // `taskq dev`'s embedded database folder.
  'TASKQ_DEV_DATA_DIR',
  'TASKQ_EXAMPLE_HOST',
  'TASKQ_EXAMPLE_PORT',
  'TASKQ_TEST_DSN',
  'TASKQ_TEST_REDIS_URL',
  'TASKQ_TEST_CHROMIUM',
  'TASKQ_TEST_PG_BINDIR',
  'TASKQ_TEST_PG_OS_USER',
];

/** A `TASKQ_*` variable of the reference that no TaskQ setting holds yet, and why. */
export interface NotAvailableEnvVar {
  /** The environment variable. */
  readonly env: `TASKQ_${string}`;
  /** The reference's setting, by the name TaskQ will give it (error messages). */
  readonly setting: string;
  /** What it waits for, in words. */
  readonly notAvailable: string;
}

/**
 * Variables of the reference's settings that TaskQ does not implement yet. Setting one (to anything
 * non-empty) makes both loaders, worker and client, throw `SettingNotAvailableError` naming it, so
 * a deployment never believes it has, say, rotating credentials when it has not. Enabling one =
 * deleting its line here and adding the field to the table.
 */
export const NOT_AVAILABLE_ENV_VARS: readonly NotAvailableEnvVar[] = [
  {
    env: 'TASKQ_POOL_MAX_INACTIVE_LIFETIME',
    setting: 'poolMaxInactiveLifetime',
    notAvailable: 'the worker pools do not close idle connections by age yet',
  },
  {
    env: 'TASKQ_WORKER_GROUP',
    setting: 'workerGroup',
    notAvailable: 'consumer spans carry no consumer-group name yet',
  },
  {
    env: 'TASKQ_PROGRESS_MAX_SSE_CONNECTIONS',
    setting: 'progressMaxSseConnections',
    notAvailable: 'TaskQ serves no progress SSE endpoint yet (forward TaskQ.stream() from your own)',
  },
];

/**
 * The problem of each {@link NOT_AVAILABLE_ENV_VARS} variable set (non-blank) in `env`, its rule
 * naming the setting, the variable and what it waits for.
 */
export function notAvailableEnvProblems(env: Record<string, string | undefined>): SettingProblem[] {
  const problems: SettingProblem[] = [];
  for (const v of NOT_AVAILABLE_ENV_VARS) {
    const text = env[v.env];
    if (text === undefined || text.trim() === '') continue;
    problems.push({
      setting: v.setting,
      source: v.env,
      value: text,
      rule: notAvailableRule(v.setting, v.env, v.notAvailable),
      notAvailable: v.notAvailable,
    });
  }
  return problems;
}

/**
 * The rule of a setting that is not available yet, naming it (and its `WorkerSettings` key when
 * that differs: durations end in `Ms`), its variable, and what it waits for.
 */
export function notAvailableRule(setting: string, env: string, reason: string, key = setting): string {
  const names = key === setting ? env : `${key}, ${env}`;
  return `${setting} (${names}) is not available yet: ${reason}; leave it unset`;
}
