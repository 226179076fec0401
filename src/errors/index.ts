export { TaskQError } from './taskq-error.js';
export { InvalidArgumentError, type InvalidArgumentOptions } from './invalid-argument-error.js';
export { PayloadValidationError, type ValidationIssue } from './payload-validation-error.js';
export { PayloadTooLarge } from './payload-too-large.js';
export {
  BackpressureError,
  MaxPendingExceededError,
  SingletonCollisionError,
} from './backpressure-errors.js';
export {
  SchemaNotMigratedError,
  SchemaTooNewError,
  ScopedIdempotencyMigrationPendingError,
} from './schema-errors.js';
export {
  JobNotFoundError,
  IllegalStateTransition,
  WorkerOwnershipMismatch,
  JobFailed,
  ResultUnavailable,
  ResultTooLarge,
  WaitTimeoutError,
  DuplicateIdempotencyKeyError,
} from './job-errors.js';
export { IdempotencyKeyConflict } from './idempotency-key-conflict.js';
export { EmptyFilterError, TaskQStateError } from './client-errors.js';
export { ActorConfigDriftError, ActorConfigDriftList } from './actor-config-errors.js';
export {
  ActorDeregistrationError,
  ActorHasActiveJobsError,
  ActorHasEnabledSchedulesError,
  ActorNotFoundError,
} from './actor-deregistration-errors.js';
export { ProgressTooLarge, HeartbeatTimeout } from './progress-errors.js';
export {
  MissingProvider,
  type MissingProviderEntry,
  type MissingLimitEntry,
  type MissingDependencyEntry,
} from './missing-provider-error.js';
export {
  DIError,
  DependencyCycle,
  ScopeViolation,
  DependencyValidationError,
  DependencyResolutionError,
  DependencyNotCloneable,
  type DependencyProblem,
} from './di-errors.js';
export { ConnectionError, type ConnectionFailureReason } from './connection-error.js';
export { MissingDependencyError } from './missing-dependency-error.js';
export { LeadershipLostError } from './leadership-errors.js';
export { ScheduleExistsError, ScheduleNotFoundError } from './schedule-errors.js';
export { BatchAbortedError, BatchNotOpenError, EmptyBatchError } from './batch-errors.js';
export { StreamingBatchError } from './streaming-batch-error.js';
export { PartialBatchError, SubJobsUnavailableError, type FailedBatchItem } from './sub-job-errors.js';
export { CredentialUsernameChangedError, CredentialProviderReferenceError } from './credential-errors.js';
export { RedisCredentialRejected } from './redis-credential-errors.js';
export { AdminAuthRequiredError } from './admin-errors.js';
