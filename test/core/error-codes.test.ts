/**
 * Stable error codes (spec inventory §23): every error class the package exports carries a fixed
 * `code`, its class name as `name`, and the right `instanceof` chain, so callers can match on
 * either. The table below is the contract; the last cases make sure no exported error class is
 * missing from it and that no two kinds share a code.
 */
import { describe, expect, it } from 'vitest';

import * as taskq from '../../src/index.js';
import * as ratelimit from '../../src/ratelimit/index.js';
import * as workerEntry from '../../src/worker/index.js';
import type { JobRow } from '../../src/index.js';

const row = {
  id: '01900000-0000-7000-8000-000000000001',
  actor: 'send_email',
  queue: 'emails',
  status: 'failed',
  errorClass: 'TypeError',
  errorMessage: 'boom',
} as unknown as JobRow;

type ErrorCtor = abstract new (...args: never[]) => Error;

interface Case {
  cls: ErrorCtor;
  make: () => taskq.TaskQError;
  code: string;
}

/** Every error class of `taskq` (src/errors/ and the control-flow errors), with the code it must keep. */
const PACKAGE_ERRORS: Case[] = [
  { cls: taskq.TaskQError, make: () => new taskq.TaskQError('TASKQ_X', 'base'), code: 'TASKQ_X' },
  {
    cls: taskq.InvalidArgumentError,
    make: () => new taskq.InvalidArgumentError('enqueue.priority', 1.5, 'must be an integer'),
    code: 'TASKQ_INVALID_ARGUMENT',
  },
  {
    cls: taskq.PayloadValidationError,
    make: () => new taskq.PayloadValidationError('bad', { actor: 'a' }),
    code: 'TASKQ_PAYLOAD_INVALID',
  },
  {
    cls: taskq.MaxPendingExceededError,
    make: () => new taskq.MaxPendingExceededError('a', 5, 5),
    code: 'TASKQ_MAX_PENDING_EXCEEDED',
  },
  {
    cls: taskq.SingletonCollisionError,
    make: () => new taskq.SingletonCollisionError('a', row.id),
    code: 'TASKQ_SINGLETON_COLLISION',
  },
  {
    cls: taskq.SchemaNotMigratedError,
    make: () => new taskq.SchemaNotMigratedError('tenant_a'),
    code: 'TASKQ_SCHEMA_NOT_MIGRATED',
  },
  {
    cls: taskq.SchemaTooNewError,
    make: () => new taskq.SchemaTooNewError('tenant_a', ['9999_pre_future']),
    code: 'TASKQ_SCHEMA_TOO_NEW',
  },
  {
    cls: taskq.ScopedIdempotencyMigrationPendingError,
    make: () =>
      new taskq.ScopedIdempotencyMigrationPendingError({
        actor: 'a',
        idempotencyKey: 'k',
        idempotencyScope: 's',
        detail: 'half applied',
      }),
    code: 'TASKQ_SCOPED_IDEMPOTENCY_MIGRATION_PENDING',
  },
  {
    cls: taskq.JobNotFoundError,
    make: () => new taskq.JobNotFoundError(row.id),
    code: 'TASKQ_JOB_NOT_FOUND',
  },
  {
    cls: taskq.IllegalStateTransition,
    make: () => new taskq.IllegalStateTransition(row.id, 'succeeded', 'running'),
    code: 'TASKQ_ILLEGAL_STATE_TRANSITION',
  },
  {
    cls: taskq.WorkerOwnershipMismatch,
    make: () => new taskq.WorkerOwnershipMismatch(row.id, 'w1', 'w2'),
    code: 'TASKQ_WORKER_OWNERSHIP_MISMATCH',
  },
  { cls: taskq.JobFailed, make: () => new taskq.JobFailed(row), code: 'TASKQ_JOB_FAILED' },
  {
    cls: taskq.ResultUnavailable,
    make: () => new taskq.ResultUnavailable(row, 'it expired'),
    code: 'TASKQ_RESULT_UNAVAILABLE',
  },
  {
    cls: taskq.PayloadTooLarge,
    make: () => new taskq.PayloadTooLarge('payload', 1024, 2048),
    code: 'TASKQ_PAYLOAD_TOO_LARGE',
  },
  {
    cls: taskq.ResultTooLarge,
    make: () => new taskq.ResultTooLarge(1024, 2048),
    code: 'TASKQ_RESULT_TOO_LARGE',
  },
  {
    cls: taskq.WaitTimeoutError,
    make: () => new taskq.WaitTimeoutError('job', 10),
    code: 'TASKQ_WAIT_TIMEOUT',
  },
  {
    cls: taskq.DuplicateIdempotencyKeyError,
    make: () =>
      new taskq.DuplicateIdempotencyKeyError({
        actor: 'send_email',
        idempotencyScope: '',
        idempotencyKey: 'k',
        where: 'stored',
      }),
    code: 'TASKQ_DUPLICATE_IDEMPOTENCY_KEY',
  },
  {
    cls: taskq.IdempotencyKeyConflict,
    make: () =>
      new taskq.IdempotencyKeyConflict({
        idempotencyKey: 'k',
        idempotencyScope: '',
        existingActor: 'send_email',
        requestedActor: 'resize',
        existingJobId: row.id,
      }),
    code: 'TASKQ_IDEMPOTENCY_KEY_CONFLICT',
  },
  {
    cls: taskq.ScheduleExistsError,
    make: () => new taskq.ScheduleExistsError('send_email', 'nightly'),
    code: 'TASKQ_SCHEDULE_EXISTS',
  },
  {
    cls: taskq.ScheduleNotFoundError,
    make: () => new taskq.ScheduleNotFoundError(row.id),
    code: 'TASKQ_SCHEDULE_NOT_FOUND',
  },
  {
    cls: taskq.BatchNotOpenError,
    make: () => new taskq.BatchNotOpenError(row.id, 'sealed'),
    code: 'TASKQ_BATCH_NOT_OPEN',
  },
  {
    cls: taskq.BatchAbortedError,
    make: () => new taskq.BatchAbortedError(row.id, 3, 3),
    code: 'TASKQ_BATCH_ABORTED',
  },
  {
    cls: taskq.EmptyBatchError,
    make: () => new taskq.EmptyBatchError(row.id, 1, 0),
    code: 'TASKQ_EMPTY_BATCH',
  },
  {
    cls: taskq.StreamingBatchError,
    make: () => new taskq.StreamingBatchError(row.id, 1000, 1234, true, new Error('bad item')),
    code: 'TASKQ_STREAMING_BATCH_FAILED',
  },
  {
    cls: taskq.PartialBatchError,
    make: () =>
      new taskq.PartialBatchError({
        succeededCount: 1,
        failedItems: [{ index: 1, error: new Error('refused') }],
        total: 2,
        handles: [null, null],
      }),
    code: 'TASKQ_PARTIAL_BATCH',
  },
  {
    cls: taskq.SubJobsUnavailableError,
    make: () => new taskq.SubJobsUnavailableError('ctx.jobs is not available here'),
    code: 'TASKQ_SUB_JOBS_UNAVAILABLE',
  },
  { cls: taskq.EmptyFilterError, make: () => new taskq.EmptyFilterError(), code: 'TASKQ_EMPTY_FILTER' },
  {
    cls: taskq.TaskQStateError,
    make: () => new taskq.TaskQStateError('closed'),
    code: 'TASKQ_INVALID_STATE',
  },
  {
    cls: taskq.ActorConfigDriftError,
    make: () => new taskq.ActorConfigDriftError('a', 'queue', 'q1', 'q2'),
    code: 'TASKQ_ACTOR_CONFIG_DRIFT',
  },
  {
    cls: taskq.ActorConfigDriftList,
    make: () =>
      new taskq.ActorConfigDriftList([{ actor: 'a', field: 'queue', registered: 'q1', stored: 'q2' }]),
    code: 'TASKQ_ACTOR_CONFIG_DRIFT',
  },
  {
    cls: taskq.ProgressTooLarge,
    make: () => new taskq.ProgressTooLarge(10, 20),
    code: 'TASKQ_PROGRESS_TOO_LARGE',
  },
  {
    cls: taskq.HeartbeatTimeout,
    make: () => new taskq.HeartbeatTimeout(1000),
    code: 'TASKQ_HEARTBEAT_TIMEOUT',
  },
  {
    cls: taskq.MissingProvider,
    make: () => new taskq.MissingProvider([{ actor: 'a', namespace: 'rate_limit', name: 'api' }]),
    code: 'TASKQ_MISSING_PROVIDER',
  },
  {
    cls: taskq.MissingProvider,
    make: () =>
      new taskq.MissingProvider([
        { namespace: 'dependency', name: 'Db', requiredBy: 'actor "a"', actor: 'a' },
      ]),
    code: 'TASKQ_MISSING_PROVIDER',
  },
  { cls: taskq.DIError, make: () => new taskq.DIError('malformed'), code: 'TASKQ_DI_ERROR' },
  {
    cls: taskq.DependencyCycle,
    make: () => new taskq.DependencyCycle(['A', 'B', 'A']),
    code: 'TASKQ_DEPENDENCY_CYCLE',
  },
  {
    cls: taskq.ScopeViolation,
    make: () =>
      new taskq.ScopeViolation({ fromScope: 'process', toScope: 'job', tokenName: 'Tx', dependent: 'Db' }),
    code: 'TASKQ_SCOPE_VIOLATION',
  },
  {
    cls: taskq.DependencyValidationError,
    make: () =>
      new taskq.DependencyValidationError([
        new taskq.DependencyCycle(['A', 'B', 'A']),
        new taskq.DependencyCycle(['C', 'C']),
      ]),
    code: 'TASKQ_DEPENDENCY_VALIDATION',
  },
  {
    cls: taskq.DependencyResolutionError,
    make: () => new taskq.DependencyResolutionError('Db', 'a', new Error('refused')),
    code: 'TASKQ_DEPENDENCY_RESOLUTION_FAILED',
  },
  {
    cls: taskq.DependencyNotCloneable,
    make: () => new taskq.DependencyNotCloneable('Db', 'a', new Error('could not be cloned')),
    code: 'TASKQ_DEPENDENCY_NOT_CLONEABLE',
  },
  {
    cls: taskq.ActorNotFoundError,
    make: () => new taskq.ActorNotFoundError('a'),
    code: 'TASKQ_ACTOR_NOT_FOUND',
  },
  {
    cls: taskq.ActorHasActiveJobsError,
    make: () => new taskq.ActorHasActiveJobsError('a', 2, { pending: 1, running: 1 }),
    code: 'TASKQ_ACTOR_HAS_ACTIVE_JOBS',
  },
  {
    cls: taskq.ActorHasEnabledSchedulesError,
    make: () => new taskq.ActorHasEnabledSchedulesError('a', ['s1']),
    code: 'TASKQ_ACTOR_HAS_ENABLED_SCHEDULES',
  },
  {
    cls: taskq.CredentialUsernameChangedError,
    make: () => new taskq.CredentialUsernameChangedError('pool', 'v-1', 'v-2'),
    code: 'TASKQ_CREDENTIAL_USERNAME_CHANGED',
  },
  {
    cls: taskq.CredentialProviderReferenceError,
    make: () =>
      new taskq.CredentialProviderReferenceError('--pg-credential-provider', './a.js:p', 'module not found'),
    code: 'TASKQ_CREDENTIAL_PROVIDER_REFERENCE',
  },
  {
    cls: taskq.RedisCredentialRejected,
    make: () => new taskq.RedisCredentialRejected('redis:progress', 'u', new Error('WRONGPASS')),
    code: 'TASKQ_REDIS_CREDENTIAL_REJECTED',
  },
  {
    cls: taskq.ConnectionError,
    make: () =>
      new taskq.ConnectionError('refused', 'db:5432/app', 'connect ECONNREFUSED', new Error('socket')),
    code: 'TASKQ_CONNECTION_FAILED',
  },
  {
    cls: taskq.MissingDependencyError,
    make: () => new taskq.MissingDependencyError('@electric-sql/pglite', 'The embedded Postgres', 'npm i'),
    code: 'TASKQ_MISSING_DEPENDENCY',
  },
  {
    cls: taskq.LeadershipLostError,
    make: () => new taskq.LeadershipLostError('018f0000-0000-7000-8000-0000000000a1', '7'),
    code: 'TASKQ_LEADERSHIP_LOST',
  },
  {
    cls: taskq.AdminAuthRequiredError,
    make: () => new taskq.AdminAuthRequiredError('production'),
    code: 'TASKQ_ADMIN_AUTH_REQUIRED',
  },
  { cls: taskq.Snooze, make: () => new taskq.Snooze('1s'), code: 'TASKQ_SNOOZE' },
  { cls: taskq.RetryAfter, make: () => new taskq.RetryAfter(500), code: 'TASKQ_RETRY_AFTER' },
  {
    cls: taskq.StartToCloseTimeout,
    make: () => new taskq.StartToCloseTimeout(30_000),
    code: 'TASKQ_START_TO_CLOSE_TIMEOUT',
  },
  { cls: taskq.WorkerShutdown, make: () => new taskq.WorkerShutdown(), code: 'TASKQ_WORKER_SHUTDOWN' },
  {
    cls: taskq.CancelRequested,
    make: () => new taskq.CancelRequested('user'),
    code: 'TASKQ_CANCEL_REQUESTED',
  },
];

/** Error classes of the `taskq/worker` and `taskq/ratelimit` entry points (checked for code clashes). */
const SUBPATH_ERRORS: Case[] = [
  { cls: workerEntry.LeaseLost, make: () => new workerEntry.LeaseLost(row.id), code: 'TASKQ_LEASE_LOST' },
  {
    cls: workerEntry.SettingsError,
    make: () =>
      new workerEntry.SettingsError([
        { setting: 'maxConcurrency', source: 'TASKQ_MAX_CONCURRENCY', value: '0', rule: 'must be >= 1' },
      ]),
    code: 'TASKQ_INVALID_SETTINGS',
  },
  {
    cls: workerEntry.SettingNotAvailableError,
    make: () =>
      new workerEntry.SettingNotAvailableError([
        {
          setting: 'cronAutoDisableThreshold',
          source: 'TASKQ_CRON_AUTO_DISABLE_THRESHOLD',
          value: '5',
          rule: 'is not available yet',
          notAvailable: 'cron schedules arrive in a later release',
        },
      ]),
    code: 'TASKQ_SETTING_NOT_AVAILABLE',
  },
  {
    cls: ratelimit.ReservationUnavailable,
    make: () => new ratelimit.ReservationUnavailable('slots', 100),
    code: 'TASKQ_RESERVATION_UNAVAILABLE',
  },
  {
    cls: ratelimit.RateLimitStoreCorrupt,
    make: () => new ratelimit.RateLimitStoreCorrupt('api', 'redis', 'tokens = "x"'),
    code: 'TASKQ_RATE_LIMIT_STORE_CORRUPT',
  },
  {
    cls: ratelimit.RateLimitStoreUnavailable,
    make: () => new ratelimit.RateLimitStoreUnavailable('api', 'redis', 'connection refused'),
    code: 'TASKQ_RATE_LIMIT_STORE_UNAVAILABLE',
  },
  {
    cls: ratelimit.RateLimitBackendMissing,
    make: () => new ratelimit.RateLimitBackendMissing('api', 'redis', 'pass a Redis client'),
    code: 'TASKQ_RATE_LIMIT_BACKEND_MISSING',
  },
  {
    cls: ratelimit.RateLimitNotFound,
    make: () => new ratelimit.RateLimitNotFound('api', 'rate_limit'),
    code: 'TASKQ_RATE_LIMIT_NOT_FOUND',
  },
];

/**
 * Classes allowed to share a code, with the reason. `ActorConfigDriftList` is the worker's refusal
 * to start and carries one `ActorConfigDriftError` per drifted field: both report the same condition.
 */
const SHARED_CODES = new Map<string, string[]>([
  ['TASKQ_ACTOR_CONFIG_DRIFT', ['ActorConfigDriftError', 'ActorConfigDriftList']],
]);

/** Exported values that are Error subclasses (constructors whose prototype is an Error). */
function errorClassesOf(mod: Record<string, unknown>): ErrorCtor[] {
  return Object.values(mod).filter(
    (v): v is ErrorCtor =>
      typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Error,
  );
}

describe('stable error codes', () => {
  it.each([...PACKAGE_ERRORS, ...SUBPATH_ERRORS].map((c) => [c.cls.name, c] as const))(
    '%s has its code, its class name and the TaskQError chain',
    (name, c) => {
      const err = c.make();
      expect(err.code).toBe(c.code);
      expect(err.name).toBe(name);
      expect(err).toBeInstanceOf(c.cls);
      expect(err).toBeInstanceOf(taskq.TaskQError);
      expect(err).toBeInstanceOf(Error);
      expect(typeof err.message).toBe('string');
      expect(err.message.length).toBeGreaterThan(0);
      // Codes are SCREAMING_SNAKE_CASE with the TASKQ_ prefix.
      expect(err.code).toMatch(/^TASKQ_[A-Z0-9_]+$/);
    },
  );

  it('keeps the backpressure refusals under BackpressureError', () => {
    expect(new taskq.MaxPendingExceededError('a', 3, 3)).toBeInstanceOf(taskq.BackpressureError);
    expect(new taskq.SingletonCollisionError('a')).toBeInstanceOf(taskq.BackpressureError);
    expect(new taskq.MaxPendingExceededError('a', 3, 3)).not.toBeInstanceOf(taskq.SingletonCollisionError);
    expect(new taskq.InvalidArgumentError('f', 1, 'r')).not.toBeInstanceOf(taskq.PayloadValidationError);
  });

  it('covers every error class the package entry points export', () => {
    const listed = new Set<ErrorCtor>([...PACKAGE_ERRORS, ...SUBPATH_ERRORS].map((c) => c.cls));
    // BackpressureError is the abstract base of the two refusals; its code is its subclass's.
    listed.add(taskq.BackpressureError);
    // ActorDeregistrationError is the base of the deregistration refusals; its code is its subclass's.
    listed.add(taskq.ActorDeregistrationError);
    const exported = new Set([
      ...errorClassesOf(taskq as Record<string, unknown>),
      ...errorClassesOf(workerEntry as Record<string, unknown>),
      ...errorClassesOf(ratelimit as Record<string, unknown>),
    ]);
    const missing = [...exported].filter((cls) => !listed.has(cls)).map((cls) => cls.name);
    expect(missing).toEqual([]);
  });

  it('gives each error kind its own code', () => {
    const byCode = new Map<string, Set<string>>();
    for (const c of [...PACKAGE_ERRORS, ...SUBPATH_ERRORS]) {
      if (c.cls === taskq.TaskQError) continue; // the base takes any code
      const names = byCode.get(c.code) ?? new Set<string>();
      names.add(c.cls.name);
      byCode.set(c.code, names);
    }
    const clashes = [...byCode]
      .filter(([code, names]) => names.size > 1 && !sameMembers(names, SHARED_CODES.get(code)))
      .map(([code, names]) => `${code}: ${[...names].join(', ')}`);
    expect(clashes).toEqual([]);
  });
});

function sameMembers(names: Set<string>, allowed: string[] | undefined): boolean {
  return allowed !== undefined && allowed.length === names.size && allowed.every((n) => names.has(n));
}
