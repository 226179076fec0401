// `taskq/ratelimit`: token buckets, sliding windows, concurrency reservations, keyed refs, the
// registry that composes them per job, and the stores that hold their state.
export { TokenBucket, defaultTokenBucketTtlMs, type TokenBucketOptions } from './token-bucket.js';
export { SlidingWindow, type SlidingWindowOptions } from './sliding-window.js';
export {
  ConcurrencyReservation,
  syncSlots,
  type ConcurrencyReservationOptions,
  type ReservationState,
  type SlotLease,
  type SyncResult,
} from './concurrency-reservation.js';
export {
  keyedRateLimit,
  keyedReservation,
  isKeyedRateLimitRef,
  isKeyedReservationRef,
  type KeyedRateLimitOptions,
  type KeyedRateLimitRef,
  type KeyedReservationOptions,
  type KeyedReservationRef,
} from './keyed-refs.js';
export {
  RateLimitRegistry,
  type ActorAcquireRequest,
  type ActorLimitEntry,
  type RateLimitPrimitive,
  type RateLimitRegistryOptions,
} from './registry.js';
export { RateLimitHandle, ReservationHandle, type AcquiredResource } from './handles.js';
export {
  collectActorPrimitives,
  missingNames,
  syncRateLimitBuckets,
  type ActorLimits,
  type MissingLimit,
} from './actor-limits.js';
export { publishBucket, sweepIdleKeyedRows, type SweepIdleKeyedResult } from './maintenance.js';
export {
  ReservationUnavailable,
  RateLimitStoreCorrupt,
  RateLimitStoreUnavailable,
  RateLimitBackendMissing,
  RateLimitNotFound,
  type ReservationUnavailableSource,
} from './errors.js';
export { QUEUE_CONCURRENCY_PREFIX, queueConcurrencyReservationName } from './names.js';
export {
  FallbackRateLimitStore,
  MemoryRateLimitStore,
  PostgresRateLimitStore,
  RedisRateLimitStore,
  isRedisConnectionError,
  rateLimitStoresFor,
  type BucketKind,
  type BucketMetadata,
  type FallbackRateLimitStoreOptions,
  type GcraOutcome,
  type GcraReading,
  type MemoryRateLimitStoreOptions,
  type PostgresRateLimitStoreOptions,
  type RateLimitStore,
  type RateLimitStores,
  type RateLimitStoresOptions,
  type RedisRateLimitStoreOptions,
  type ReservationSpec,
  type SlidingLogOutcome,
  type SlidingLogReading,
  type SlidingWindowSpec,
  type SlotCounts,
  type SlotOutcome,
  type SlotSyncResult,
  type StoreBusy,
  type TokenBucketOutcome,
  type TokenBucketReading,
  type TokenBucketSpec,
} from './stores/index.js';
export {
  DEFAULT_MAX_KEYED_RATE_LIMITS,
  DEFAULT_MAX_KEYED_RESERVATIONS,
  DEFAULT_PG_LOCK_TIMEOUT_MS,
  DEFAULT_REDIS_KEY_PREFIX,
  DEFAULT_RESERVATION_BACKOFF_MS,
  KEYED_IDLE_THRESHOLD_MS,
  OPPORTUNISTIC_EVICT_MIN_INTERVAL_MS,
  RESERVATION_RETRY_HINT_MARGIN_MS,
  type RateLimitBackend,
  type RateLimitContext,
  type RateLimitDecision,
  type RateLimitState,
  type SlidingWindowStyle,
} from './types.js';
export {
  RateLimitAdmin,
  type RateLimitBucketRow,
  type ReservationRow,
  type PeekResult,
} from './rate-limit-admin.js';
