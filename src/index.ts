// Public API of `taskq`. Only re-exports live here.
export { actor, threadActor } from './core/actor.js';
export type {
  ActorOptions,
  ActorRef,
  ActorHandler,
  ActorDefinition,
  AnyActor,
  PayloadOf,
  InputOf,
  ResultOf,
  RetryOverride,
  RetryClassifierHook,
  OnSuccessHook,
  OnRetryExhaustedHook,
  LimitEntry,
  ErrorClass,
  InjectedActorHandler,
  NoDependencies,
  DependenciesOf,
} from './core/actor.js';
export { token, isToken, type Token, type TypeOf, type InjectMap, type DepsOf } from './di/token.js';
export { SCOPES, type Scope } from './di/scope.js';
export {
  Providers,
  type ValueProviderOptions,
  type FactoryProviderOptions,
  type Disposer,
} from './di/providers.js';
export type { JobContext } from './core/context.js';
export type { SubJobEnqueuer, SubJobEnqueueOptions, SubJobBatchOptions } from './worker/sub-jobs.js';
export { MAX_BUFFERED_SUB_JOBS } from './worker/sub-job-buffer.js';
export type {
  ProgressUpdate,
  ProgressEvent,
  ProgressState,
  JobEvent,
  ProgressPublisher,
} from './progress/progress-event.js';
export { RedisLiveProgress } from './progress/redis-live-progress.js';
export {
  TaskQ,
  DEFAULT_IDEMPOTENCY_KEY_MAX_BYTES,
  type TaskQOptions,
  type TaskQClientOptions,
  type TaskQExtraOptions,
} from './client/taskq.js';
export type {
  CancelWhereOptions,
  CancelWherePreview,
  RetryWhereOptions,
  RetryWherePreview,
} from './client/bulk-options.js';
export { DEFAULT_PAYLOAD_MAX_BYTES } from './client/payload-json.js';
export {
  loadTaskQSettings,
  TASKQ_SETTING_FIELDS,
  type TaskQSettings,
  type TaskQSettingsInput,
  type LoadTaskQSettingsOptions,
} from './settings/taskq-settings.js';
export { SettingNotAvailableError, SettingsError, type SettingProblem } from './settings/settings-error.js';
export {
  MAX_BATCH_SIZE,
  MAX_FAST_BATCH_SIZE,
  batchItem,
  type EnqueueItem,
  type BatchOptions,
  type FastBatchOptions,
} from './client/batch-items.js';
export { BatchHandle, type BatchCompletionStatus } from './client/batch-handle.js';
export {
  DEFAULT_STREAMING_CHUNK_SIZE,
  type StreamingBatchOptions,
  type StreamingBatchProgress,
} from './client/batch-streaming.js';
export { BatchFailurePolicy, AbortBatchAfter } from './client/batch-policy.js';
export { MAX_BATCH_PAGE, type BatchFilter } from './client/batch-filter.js';
export { MIN_SNOOZE_INTERVAL_MS, type WaitForBatchOptions } from './client/wait-for-batch.js';
export type { BatchCounts, BatchRow, BatchStatus, BatchPage } from './backend/batch-types.js';
export { JobHandle } from './client/job-handle.js';
export type {
  ActorMaxConcurrentReason,
  AwaitingPromotionReason,
  DisabledReason,
  ExplainOptions,
  ExplainReason,
  ExplainReasonKind,
  ExplainVerdict,
  FifoHeadOfLineReason,
  IdentityKeyReason,
  JobExplanation,
  NoWorkerReason,
  QueueCapReason,
  RateLimitReason,
  ReservationReason,
  RunningReason,
  ScheduledReason,
  TerminalReason,
  UnregisteredActorReason,
} from './client/job-explanation.js';
export type {
  JobExplainFacts,
  ExplainFactsRequest,
  ExplainedJob,
  JobIdSample,
} from './backend/explain-facts.js';
export { RECLAIM_EVENT_VISIBILITY_DELAY_MS, type WatchReclaimsOptions } from './client/reclaim-watcher.js';
export type { EnqueueOptions } from './client/enqueue-options.js';
export {
  Snooze,
  RetryAfter,
  StartToCloseTimeout,
  WorkerShutdown,
  CancelRequested,
} from './retry/control-flow.js';
export {
  classifyFailure,
  errorClassName,
  type Retry,
  type Fail,
  type RetryDecision,
} from './retry/retry-classifier.js';
export { RetryPolicy, type RetryPolicyOptions, type BackoffKind } from './retry/retry-policy.js';
export { JobSortField } from './backend/cursor.js';
export { MAX_LIST_LIMIT, type JobFilter } from './backend/job-filter.js';
export type { Backend, CancelWhereCounts, JobPage } from './backend/backend.js';
export { BACKEND_PROTOCOL_VERSION } from './backend/backend.js';
export { PostgresBackend, type PostgresBackendOptions } from './backend/postgres/postgres-backend.js';
export {
  TERMINAL_STATUSES,
  ACTIVE_STATUSES,
  VALID_TRANSITIONS,
  isTerminal,
  assertValidTransition,
} from './backend/state-machine.js';
export {
  JOB_STATUSES,
  RETRY_KINDS,
  type JobStatus,
  type JobRow,
  type ClaimedJob,
  type RetryKind,
  type CancelPhase,
  type QueueMode,
  type AttemptOutcome,
  type ArchivedJob,
  type AttemptRow,
  type EventRow,
  type EventKind,
  type CancelResult,
  type BulkCancelResult,
  type BulkRetryResult,
  type ActorConfigRow,
  type ActorCapacityChange,
  type DeregisterOptions,
  type DeregisterResult,
  type QueueConfigRow,
  type LongRunningJobEventsWriter,
  type EnqueueArgs,
} from './backend/types.js';
export { MAX_DURATION_MS, MAX_TIMER_MS, type Duration } from './core/duration.js';
export type { JobId } from './core/ids.js';
export type { Clock } from './core/clock.js';
export { SystemClock } from './core/clock.js';
export type { Logger } from './obs/logger.js';
export { currentJob, jobLogger, type JobLogFields } from './obs/job-log-context.js';
export type { Schema } from './core/schema-validation.js';
export {
  Migrator,
  type MigratorOptions,
  type MigrationStatus,
  type MigrationPhase,
} from './migrations/migrator.js';
export { PgDriver, type PgDriverOptions } from './db/pg-driver.js';
export { PgliteDriver, type PgliteDatabase } from './db/pglite-driver.js';
export type { Driver, Executor, DedicatedConnection, ClientLike } from './db/driver.js';
export * from './errors/index.js';
export {
  RateLimitAdmin,
  type RateLimitBucketRow,
  type ReservationRow,
  type PeekResult,
} from './ratelimit/rate-limit-admin.js';
export {
  cron,
  isCronDeclaration,
  type CronDeclaration,
  type CronOptions,
  type PayloadFactory,
  type PayloadFactoryContext,
} from './cron/cron-declaration.js';
export { checkCronSpec, type CronSpec } from './cron/cron-spec.js';
export { DST_STRATEGIES, type DstStrategy } from './cron/dst-strategy.js';
export { nextFireTimes, nextFireAfter, type CronSpecInput } from './cron/next-fires.js';
export { ActorsClient, type ActorCapacityUpdate } from './client/actors-client.js';
export {
  ScheduleHandle,
  type CreateScheduleOptions,
  type UpdateScheduleOptions,
} from './client/schedules.js';
export {
  CRON_FIRE_HISTORY,
  type ScheduleRecord,
  type ScheduleFireRecord,
  type ScheduleSkipResult,
} from './backend/schedule-types.js';

// Credentials: providers, factories and DSN helpers (docs/credentials.md).
export type {
  PgCredential,
  PgCredentialProvider,
  RedisCredential,
  RedisCredentialProvider,
} from './credentials/credential-types.js';
export type { ReloadableResource } from './credentials/reloadable-resource.js';
export {
  makePgPoolFactory,
  makeDedicatedConnFactory,
  type PgPoolFactory,
  type PgConnFactory,
  type PgPoolFactoryOptions,
  type PgConnectionOptions,
} from './credentials/pg-pool-factory.js';
export { enrichPgDsn, ensureSslmodeRequire } from './credentials/pg-dsn.js';
// Redis credentials: clients authenticated by a RedisCredentialProvider (docs/credentials-redis.md).
export {
  makeRedisClientFactory,
  type RedisClientFactory,
  type RedisClientFactoryOptions,
} from './credentials/make-redis-client-factory.js';
export {
  ReloadableRedisCredentials,
  type ReloadableRedisCredentialsOptions,
} from './credentials/reloadable-redis-credentials.js';
