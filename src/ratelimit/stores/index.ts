// The rate-limit stores: one interface, three implementations and the fallback composition.
export type {
  BucketKind,
  BucketMetadata,
  GcraOutcome,
  GcraReading,
  PublishedBucket,
  RateLimitStore,
  ReservationSpec,
  ReservationSummary,
  SlidingLogOutcome,
  SlidingLogReading,
  SlidingWindowSpec,
  SlotCounts,
  SlotOutcome,
  SlotSyncResult,
  StoreBusy,
  SweepIdleKeyedResult,
  TokenBucketOutcome,
  TokenBucketReading,
  TokenBucketSpec,
} from './rate-limit-store.js';
export { MemoryRateLimitStore, type MemoryRateLimitStoreOptions } from './memory/memory-rate-limit-store.js';
export {
  PostgresRateLimitStore,
  type PostgresRateLimitStoreOptions,
} from './postgres/postgres-rate-limit-store.js';
export { RedisRateLimitStore, type RedisRateLimitStoreOptions } from './redis/redis-rate-limit-store.js';
export { isRedisConnectionError } from './redis/redis-errors.js';
export { FallbackRateLimitStore, type FallbackRateLimitStoreOptions } from './fallback-rate-limit-store.js';
export {
  rateLimitStoresFor,
  type RateLimitStores,
  type RateLimitStoresOptions,
} from './rate-limit-stores.js';
