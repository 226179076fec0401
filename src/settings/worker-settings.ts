import type { TaskQSettings } from './taskq-settings.js';

/**
 * Resolved settings of a worker process. Durations are milliseconds. Load them with
 * `loadWorkerSettings()` (environment `TASKQ_*` variables and/or an object); the loader applies the
 * reference's defaults and checks every field and cross-field rule before a worker starts. In the
 * environment a duration is a plain number of seconds (the reference's unit) or a string with a
 * unit (`'250ms'`, `'30s'`, `'5m'`); the table of fields and rules is `setting-fields.ts`. The
 * connection fields (`pgDsn`, `schema`, `redisUrl`, `idempotencyKeyMaxBytes`, `payloadMaxBytes`) are the client's
 * {@link TaskQSettings}; a worker reads the same variables.
 */
export interface WorkerSettings extends TaskQSettings {
  /** `TASKQ_PG_DSN_DIRECT`: direct (non-PgBouncer) DSN for dispatch, heartbeat, LISTEN and the leader; default `pgDsn`. */
  pgDsnDirect: string | null;
  /**
   * `TASKQ_PG_DSN_POOLED`: the reference's DSN for a handler-side pool (may be PgBouncer); TaskQ has
   * no such pool yet, so every worker connection uses `pgDsnDirect`. Resolves to `pgDsn`. Not
   * available yet: a value other than the default fails the load (`SettingNotAvailableError`).
   */
  pgDsnPooled: string | null;
  /** `TASKQ_QUEUES`: queues this worker claims from (comma-separated in the environment). Default `['default']`. */
  queues: string[];
  /** `TASKQ_MAX_CONCURRENCY`: jobs run at once. Default 8. */
  maxConcurrency: number;
  /**
   * `TASKQ_PREFETCH`: jobs claimed ahead of free slots and held in the worker's local queue, so a
   * finishing handler's slot is refilled without waiting for a claim round trip. Buffered jobs are
   * re-pended (attempt given back) at shutdown. Default null = adaptive: about 50 ms of work at the
   * handlers' recent average duration, at most 1,000 jobs (`ADAPTIVE_PREFETCH_MAX`), and
   * `maxConcurrency` until a handler has finished; 0 = claim only for free slots. Not in the
   * reference: TaskQ for TypeScript's throughput setting.
   */
  prefetch: number | null;
  /** `TASKQ_HEARTBEAT_INTERVAL`: lease renewal cadence. Default 10 s; at least 500 ms. */
  heartbeatIntervalMs: number;
  /**
   * `TASKQ_LOCK_LEASE`: lease of a claimed job, and of the maintenance leadership (renewed every
   * heartbeat; a leader that stops renewing loses it after this long); at least 4 × heartbeat
   * interval. Default 60 s.
   */
  lockLeaseMs: number;
  /** `TASKQ_MAX_HEARTBEAT_FAILURES`: consecutive failed renewals before the worker stops itself. Default 3. */
  maxHeartbeatFailures: number;
  /** `TASKQ_DISPATCHER_POOL_SIZE`: connections for dispatch and terminal writes. Default 4. */
  dispatcherPoolSize: number;
  /** `TASKQ_DISPATCHER_COMMAND_TIMEOUT`: per-statement timeout of the dispatcher pool and leader loops. Default 5 s. */
  dispatcherCommandTimeoutMs: number;
  /**
   * `TASKQ_DISPATCH_OVERSAMPLE`: per-actor candidate multiplier in the full dispatch statement
   * (1–1000). Default 2. The lean claim (strict FIFO, no limits, no identity keys) locks rows as it
   * reads them and needs none.
   */
  dispatchOversample: number;
  /**
   * `TASKQ_DISPATCH_SCOPE_BY_HOME_QUEUE`: probe only actors whose home queue is subscribed. Default
   * false. Not available yet: a value other than the default fails the load
   * (`SettingNotAvailableError`).
   */
  dispatchScopeByHomeQueue: boolean;
  /** `TASKQ_HEARTBEAT_POOL_SIZE`: connections for heartbeats. Default 4. */
  heartbeatPoolSize: number;
  /** `TASKQ_HEARTBEAT_COMMAND_TIMEOUT`: per-statement timeout of heartbeats. Default 2 s. */
  heartbeatCommandTimeoutMs: number;
  /** `TASKQ_SWEEP_INTERVAL`: cadence of the leader's reclaim/deadline sweeps. Default 30 s. */
  sweepIntervalMs: number;
  /** `TASKQ_QUEUE_DEPTH_INTERVAL`: queue-depth sampling cadence. Default 15 s. */
  queueDepthIntervalMs: number;
  /** `TASKQ_RESERVATION_SLOTS_INTERVAL`: reservation-slot sampling cadence. Default 15 s. */
  reservationSlotsIntervalMs: number;
  /** `TASKQ_STRANDED_JOBS_INTERVAL`: stranded-jobs check cadence. Default 60 s. */
  strandedJobsIntervalMs: number;
  /** `TASKQ_TERMINATION_GRACE_PERIOD`: total shutdown budget. Default 75 s. */
  terminationGracePeriodMs: number;
  /** `TASKQ_CANCELLATION_GRACE_PERIOD`: time a handler gets to finish after a cancel or shutdown before escalation. Default 30 s. */
  cancellationGracePeriodMs: number;
  /** `TASKQ_CLEANUP_GRACE_PERIOD`: further time after escalation before a job is abandoned. Default 10 s. */
  cleanupGracePeriodMs: number;
  /**
   * `TASKQ_RECLAIM_EVENT_VISIBILITY_DELAY`: trailing watermark of the reclaim feed. Default 2 s. No
   * worker service reads the feed: give it per call, `watchReclaims({ visibilityDelay })`. Not
   * available yet: a value other than the default fails the load (`SettingNotAvailableError`).
   */
  reclaimEventVisibilityDelayMs: number;
  /** `TASKQ_MAX_RETRY_BACKOFF`: ceiling on any retry delay. Default 24 h. */
  maxRetryBackoffMs: number;
  /** `TASKQ_DEFAULT_START_TO_CLOSE`: per-attempt timeout when neither enqueue nor actor sets one; null = none. */
  defaultStartToCloseMs: number | null;
  /** `TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED`: fall back to Postgres when Redis fails. Default true. */
  rateLimitPgFallbackEnabled: boolean;
  /** `TASKQ_MAX_KEYED_RESERVATIONS`: cap on materialised keyed reservations per process. Default 10000. */
  maxKeyedReservations: number;
  /** `TASKQ_MAX_KEYED_RATE_LIMITS`: cap on materialised keyed rate limits per process. Default 10000. */
  maxKeyedRateLimits: number;
  /** `TASKQ_POLL_INTERVAL`: producer poll cadence when NOTIFY is off or down. Default 1 s. */
  pollIntervalMs: number;
  /** `TASKQ_NOTIFY_HEALTH_CHECK_INTERVAL`: LISTEN connection health check cadence. Default 5 s. */
  notifyHealthCheckIntervalMs: number;
  /** `TASKQ_NOTIFY_RECONNECT_BACKOFF_INITIAL`: first reconnect delay (doubles, capped at 30 s). Default 1 s. */
  notifyReconnectBackoffInitialMs: number;
  /** `TASKQ_NOTIFY_LISTENER_SETUP_TIMEOUT`: bound on setting up LISTEN. Default 10 s. */
  notifyListenerSetupTimeoutMs: number;
  /** `TASKQ_NOTIFY_ENABLED`: use LISTEN/NOTIFY wake-ups; false = poll only. Default true. */
  notifyEnabled: boolean;
  /** `TASKQ_NOTIFY_POLL_INTERVAL`: safety poll cadence while NOTIFY works. Default 5 s. */
  notifyPollIntervalMs: number;
  /** `TASKQ_WORKER_LABEL`: free-form label stored in `workers`; 1–128 characters, no NUL. */
  workerLabel: string | null;
  /**
   * `TASKQ_WORKGROUP_INSTANCE`: UUID of the orchestrator that launched this worker (the reference
   * sends a UUIDv7). Not available yet: a value other than the default fails the load
   * (`SettingNotAvailableError`).
   */
  workgroupInstance: string | null;
  /** `TASKQ_EXCEPTION_MESSAGE_MAX_CHARS`: stored error messages are truncated to this. Default 2000. */
  exceptionMessageMaxChars: number;
  /** `TASKQ_EXCEPTION_REDACTION_ENABLED`: drop Postgres `DETAIL:` lines from stored errors. Default true. */
  exceptionRedactionEnabled: boolean;
  /** `TASKQ_OTEL_ENABLED`: emit spans and metrics through `@opentelemetry/api`. Default true. */
  otelEnabled: boolean;
  /** `TASKQ_LOG_FORMAT`: `json` or `console`. Default `json`. */
  logFormat: 'json' | 'console';
  /** `TASKQ_LOG_LEVEL`: `trace`…`fatal` or `silent`, case-insensitive (the reference's `WARNING` and `CRITICAL` map to `warn` and `fatal`). Default `info`. */
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /** `TASKQ_PRUNE_SCHEDULE_UTC`: daily prune time `HH:MM` (UTC). Default `03:00`. */
  pruneScheduleUtc: string;
  /** `TASKQ_PRUNE_CRON_EXPR`: 5-field cron for the prune; wins over the daily time. */
  pruneCronExpr: string | null;
  /** `TASKQ_PRUNE_BATCH_SIZE`: rows moved to the archive per statement. Default 10000. */
  pruneBatchSize: number;
  /**
   * `TASKQ_PRUNE_RETENTION_PERIOD`: retention of terminal jobs without a per-status value; 0 archives
   * them at the next prune. Default 30 d: the reference leaves its default (`DEFAULT_PRUNE_RETENTION`)
   * unspecified, so we chose the shortest per-status default (succeeded, cancelled). Every status
   * has its own retention, so nothing reads this yet.
   * Not available yet: a value other than the default fails the load (`SettingNotAvailableError`).
   */
  pruneRetentionPeriodMs: number;
  /** `TASKQ_PRUNE_RETENTION_SUCCEEDED`. Default 30 d. */
  pruneRetentionSucceededMs: number;
  /** `TASKQ_PRUNE_RETENTION_FAILED`. Default 90 d. */
  pruneRetentionFailedMs: number;
  /** `TASKQ_PRUNE_RETENTION_CANCELLED`. Default 30 d. */
  pruneRetentionCancelledMs: number;
  /** `TASKQ_PRUNE_RETENTION_ABANDONED` (also used for crashed jobs). Default 90 d. */
  pruneRetentionAbandonedMs: number;
  /** `TASKQ_ARCHIVE_RETENTION_PERIOD`: archived rows are deleted after this. Default 365 d. */
  archiveRetentionPeriodMs: number;
  /** `TASKQ_ARCHIVE_EXPIRY_SCHEDULE_UTC`: daily archive expiry time `HH:MM` (UTC). Default `04:00`. */
  archiveExpiryScheduleUtc: string;
  /** `TASKQ_ARCHIVE_EXPIRY_CRON_EXPR`: 5-field cron for archive expiry; wins over the daily time. */
  archiveExpiryCronExpr: string | null;
  /** `TASKQ_FORCE_UPDATE_ACTOR_CONFIG`: overwrite structural `actor_config` drift at startup. Default false. */
  forceUpdateActorConfig: boolean;
  /** `TASKQ_PROGRESS_COALESCE_INTERVAL`: progress flush cadence. Default 500 ms. */
  progressCoalesceIntervalMs: number;
  /** `TASKQ_PROGRESS_DATA_MAX_BYTES`: cap on `ctx.progress({ data })`. Default 16384. */
  progressDataMaxBytes: number;
  /** `TASKQ_PROGRESS_PUBLISH_GLOBAL`: also publish progress on the schema-wide channel. Default true. */
  progressPublishGlobal: boolean;
  /** `TASKQ_RESULT_MAX_BYTES`: cap on a stored result. Default 65536. */
  resultMaxBytes: number;
  /**
   * `TASKQ_CRON_CATCH_UP_WINDOW`: missed cron firings within this window still fire. Default 1 h.
   * Not available yet: a value other than the default fails the load (`SettingNotAvailableError`).
   */
  cronCatchUpWindowMs: number;
  /**
   * `TASKQ_CRON_AUTO_DISABLE_THRESHOLD`: consecutive fire failures before a schedule is disabled.
   * Default 3. Not available yet: a value other than the default fails the load
   * (`SettingNotAvailableError`).
   */
  cronAutoDisableThreshold: number;
  /** `TASKQ_IDLE_SETTLE_WINDOW`: until-idle mode exits after queues stay empty this long. Default 2 s. */
  idleSettleWindowMs: number;
  /** `TASKQ_IDLE_POLL_INTERVAL`: until-idle mode's check cadence. Default 1 s. */
  idlePollIntervalMs: number;
  /** `TASKQ_IDLE_MAX_RUNTIME`: until-idle mode gives up (exit 4) after this; null = never. */
  idleMaxRuntimeMs: number | null;
  /**
   * `TASKQ_RELOAD_INTERVAL`: rebuild the connections built from credential providers this often, as
   * SIGHUP does (see docs/credentials.md); null = only on SIGHUP or `worker.reloadCredentials()`.
   * Default null.
   */
  reloadIntervalMs: number | null;
  /**
   * `TASKQ_RELOAD_FACTORY_TIMEOUT`: bound on each resource's rebuild during a credential reload; one
   * that takes longer is reported failed and keeps its old connections. Default 30 s.
   */
  reloadFactoryTimeoutMs: number;
  /**
   * `TASKQ_WATCHDOG_ENABLED`: hang detection — the shutdown deadline, stale loop ticks, the sibling
   * contract and the event-loop lag thread; a trip ends the process with exit code 2. Default true.
   */
  watchdogEnabled: boolean;
  /**
   * `TASKQ_WATCHDOG_LOOP_LAG_BUDGET`: an event loop that runs nothing for this long (seen from a
   * thread) ends the process with exit code 2. Must be more than `watchdogCheckInterval`, and
   * `watchdogLoopLagBudget + heartbeatInterval` less than `lockLease`. Default 30 s.
   */
  watchdogLoopLagBudgetMs: number;
  /**
   * `TASKQ_WATCHDOG_LOOP_LAG_WARN_BUDGET`: a stall this long dumps the main thread's stack to stderr
   * and logs `watchdog-loop-lag-warning` once the loop runs again; never exits. At or above the lag
   * budget it never fires. Default 5 s.
   */
  watchdogLoopLagWarnBudgetMs: number;
  /**
   * `TASKQ_WATCHDOG_LOOP_LAG_STARTUP_GRACE`: the lag detector arms this long after the worker starts,
   * or at the first service-loop tick if that comes first. Default 30 s.
   */
  watchdogLoopLagStartupGraceMs: number;
  /**
   * `TASKQ_WATCHDOG_TICK_GRACE_FACTOR`: a service loop that has not ticked for its period × this
   * (at least `watchdogStaleFloor`) is stale and ends the process (exit 2). Default 5.
   */
  watchdogTickGraceFactor: number;
  /** `TASKQ_WATCHDOG_DUMP_INTERVAL`: time between `shutdown-stragglers` records during a long shutdown. Default 5 s. */
  watchdogDumpIntervalMs: number;
  /**
   * `TASKQ_WATCHDOG_DUMP_AFTER_FRACTION`: share of `terminationGracePeriod` a shutdown spends before
   * straggler records begin; 0 < x < 1. Default 0.5.
   */
  watchdogDumpAfterFraction: number;
  /** `TASKQ_WATCHDOG_STALE_FLOOR`: the smallest staleness budget of any loop. Default 10 s. */
  watchdogStaleFloorMs: number;
  /** `TASKQ_WATCHDOG_CHECK_INTERVAL`: how often the stale-tick check and the lag thread look. Default 1 s. */
  watchdogCheckIntervalMs: number;
  /**
   * `TASKQ_HEALTH_ENABLED`: serve `/live` and `/ready` on the Unix socket `healthSocketPath`
   * (docs/worker.md, "Health endpoints"). Default true.
   */
  healthEnabled: boolean;
  /**
   * `TASKQ_HEALTH_SOCKET_PATH`: path of the health Unix socket; at most 107 bytes (the kernel's
   * limit). Default `/tmp/taskq_health.sock`.
   */
  healthSocketPath: string;
  /** `TASKQ_HEALTH_PG_PING_TIMEOUT`: bound on the Postgres ping of `/ready`. Default 200 ms. */
  healthPgPingTimeoutMs: number;
  /**
   * `TASKQ_HEALTH_TASKS_ENABLED`: serve the `/tasks` diagnostics (jobs in flight, service loops) on
   * the Unix socket, never on TCP; the socket is then owner-only (mode 0600). Default false.
   */
  healthTasksEnabled: boolean;
  /** `TASKQ_HEALTH_HOST`: bind address of the TCP health listener (only with `healthPort`). Default `0.0.0.0`. */
  healthHost: string;
  /**
   * `TASKQ_HEALTH_PORT`: TCP port of the HTTP health listener (`/live`, `/ready`). Default null: no
   * TCP listener. A port that cannot be bound stops the worker from starting; 0 binds an ephemeral
   * port (tests).
   */
  healthPort: number | null;
  /**
   * `TASKQ_METRICS_PORT`: TCP port of the Prometheus endpoint (`GET /metrics`), bound on
   * `healthHost` and protected by `healthToken` when set. Needs the optional packages
   * `@opentelemetry/exporter-prometheus` and `@opentelemetry/sdk-metrics`, and `otelEnabled`.
   * Default null: no endpoint (instruments still go to a MeterProvider you register). 0 picks a
   * free port (tests).
   */
  metricsPort: number | null;
  /**
   * `TASKQ_HEALTH_REQUEST_TIMEOUT`: a health request must arrive whole (request line and headers)
   * within this, or its connection is closed. Default 2 s.
   */
  healthRequestTimeoutMs: number;
  /** `TASKQ_HEALTH_MAX_HEADER_BYTES`: cap on a health request's line and headers (512–65536). Default 16384. */
  healthMaxHeaderBytes: number;
  /** `TASKQ_HEALTH_READINESS_CHECK_TIMEOUT`: bound on each registered readiness check. Default 5 s. */
  healthReadinessCheckTimeoutMs: number;
}
