import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import type { Logger } from '../../obs/logger.js';
import { RateLimitStoreUnavailable } from '../errors.js';
import { checkKnownKeys } from '../../core/closest-name.js';
import type { RateLimitBackend } from '../types.js';
import type {
  BucketKind,
  BucketMetadata,
  GcraOutcome,
  GcraReading,
  RateLimitStore,
  ReservationSpec,
  SlidingLogOutcome,
  SlidingLogReading,
  SlidingWindowSpec,
  SlotCounts,
  SlotOutcome,
  SlotSyncResult,
  SweepIdleKeyedResult,
  TokenBucketOutcome,
  TokenBucketReading,
  TokenBucketSpec,
  PublishedBucket,
  ReservationSummary,
} from './rate-limit-store.js';

/** Options of {@link FallbackRateLimitStore}. */
export interface FallbackRateLimitStoreOptions {
  /**
   * Run an operation on the fallback when the primary is unavailable
   * (`TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED`). Default true. When false the primary's outage
   * surfaces, and the fallback only has its state cleared by a reset.
   */
  enabled?: boolean;
  /** Where `ratelimit-redis-fallback` and reset warnings go. Default: silent. */
  logger?: Logger | null;
}

/** The keys of {@link FallbackRateLimitStoreOptions}: any other is refused (a misspelt `enabled` left the fallback on). */
const FALLBACK_STORE_OPTION_KEYS: readonly string[] = ['enabled', 'logger'];

/**
 * The Redis → Postgres fallback as a composition: every acquire, peek and reset runs on `primary`;
 * when the primary raises `RateLimitStoreUnavailable` (an outage, never a data error) it runs on
 * `fallback` instead, logging warning `ratelimit-redis-fallback` with both store names, and the
 * decision names the fallback (`decision.backend: 'postgres'`). The two hold separate state: during
 * an outage a bucket effectively has a second allowance.
 *
 * With the fallback disabled or absent the outage surfaces as `RateLimitStoreUnavailable`. Refunds
 * never fall back: a primitive sends each to the store its decision names ({@link forBackend}). A
 * reset clears both stores (the fallback's state is stale once the primary is back). Slot and
 * sweep operations go to the primary.
 */
export class FallbackRateLimitStore implements RateLimitStore {
  /** The primary's kind: what this composition is configured as. */
  readonly backend: RateLimitBackend;
  /** Whether operations move to the fallback during an outage. */
  readonly enabled: boolean;
  private readonly logger: Logger | null;
  private readonly views = new Map<string, FallbackRateLimitStore>();

  constructor(
    /** The store that normally decides (Redis). */
    readonly primary: RateLimitStore,
    /** The store that stands in during the primary's outage (Postgres); null: none. */
    readonly fallback: RateLimitStore | null,
    options: FallbackRateLimitStoreOptions = {},
  ) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('FallbackRateLimitStore.options', options, 'must be an object');
    // Allocation-free: a context that gives `redis` instead of `stores` builds one per call.
    checkKnownKeys(
      options,
      FALLBACK_STORE_OPTION_KEYS,
      'FallbackRateLimitStore',
      'an option of FallbackRateLimitStore',
    );
    this.backend = primary.backend;
    this.enabled = options.enabled ?? true;
    this.logger = options.logger ?? null;
  }

  /** The member that answers as `backend`: the primary's, else the fallback's. */
  forBackend(backend: RateLimitBackend): RateLimitStore | null {
    return this.primary.forBackend(backend) ?? this.fallback?.forBackend(backend) ?? null;
  }

  /** The composition over the primary's view under `prefix`. */
  withKeyPrefix(prefix: string): RateLimitStore {
    const primary = this.primary.withKeyPrefix?.(prefix) ?? this.primary;
    if (primary === this.primary) return this;
    let view = this.views.get(prefix);
    if (!view) {
      view = new FallbackRateLimitStore(primary, this.fallback, {
        enabled: this.enabled,
        logger: this.logger,
      });
      this.views.set(prefix, view);
    }
    return view;
  }

  /** Opens both members. */
  async open(): Promise<void> {
    await this.primary.open?.();
    await this.fallback?.open?.();
  }

  /** Closes both members (each releases only what it opened). */
  async close(): Promise<void> {
    await this.primary.close?.();
    await this.fallback?.close?.();
  }

  acquireTokens(bucket: TokenBucketSpec, count: number): Promise<TokenBucketOutcome> {
    return this.run(bucket.name, 'acquire', (s) => s.acquireTokens(bucket, count));
  }

  refundTokens(bucket: TokenBucketSpec, count: number): Promise<void> {
    return this.primary.refundTokens(bucket, count);
  }

  peekTokens(bucket: TokenBucketSpec): Promise<TokenBucketReading> {
    return this.run(bucket.name, 'peek', (s) => s.peekTokens(bucket));
  }

  acquireGcra(window: SlidingWindowSpec): Promise<GcraOutcome> {
    return this.run(window.name, 'acquire', (s) => s.acquireGcra(window));
  }

  refundGcra(window: SlidingWindowSpec): Promise<void> {
    return this.primary.refundGcra(window);
  }

  peekGcra(window: SlidingWindowSpec): Promise<GcraReading> {
    return this.run(window.name, 'peek', (s) => s.peekGcra(window));
  }

  acquireLog(window: SlidingWindowSpec, requestId: string): Promise<SlidingLogOutcome> {
    return this.run(window.name, 'acquire', (s) => s.acquireLog(window, requestId));
  }

  refundLog(window: SlidingWindowSpec, requestId: string): Promise<void> {
    return this.primary.refundLog(window, requestId);
  }

  peekLog(window: SlidingWindowSpec): Promise<SlidingLogReading> {
    return this.run(window.name, 'peek', (s) => s.peekLog(window));
  }

  /**
   * Resets the primary (the fallback during its outage) and then the fallback too, whose state
   * would otherwise resurface at the next outage; a failure there only logs
   * `ratelimit-reset-fallback-state-failed`.
   */
  async resetBucket(name: string, kind: BucketKind): Promise<void> {
    const onPrimary = await this.run(name, 'reset', async (s) => {
      await s.resetBucket(name, kind);
      return s === this.primary;
    });
    if (!onPrimary || !this.fallback) return;
    try {
      await this.fallback.resetBucket(name, kind);
    } catch (err) {
      this.logger?.warn(
        { bucketName: name, err: (err as Error).message },
        'ratelimit-reset-fallback-state-failed',
      );
    }
  }

  /** Metadata lives with the fallback (Postgres) when there is one. */
  publishBucket(meta: BucketMetadata): Promise<boolean> {
    return (this.fallback ?? this.primary).publishBucket(meta);
  }

  ensureSlots(reservation: ReservationSpec): Promise<void> {
    return this.primary.ensureSlots(reservation);
  }

  syncSlots(reservation: ReservationSpec): Promise<SlotSyncResult> {
    return this.primary.syncSlots(reservation);
  }

  slotRowsExist(name: string): Promise<boolean> {
    return this.primary.slotRowsExist(name);
  }

  acquireSlot(reservation: ReservationSpec, jobId: string, workerId: string): Promise<SlotOutcome> {
    return this.primary.acquireSlot(reservation, jobId, workerId);
  }

  releaseSlot(name: string, slotIndex: number, workerId: string, fence: string | null): Promise<boolean> {
    return this.primary.releaseSlot(name, slotIndex, workerId, fence);
  }

  extendSlotLeases(workerId: string, leaseMs: number, name: string | null): Promise<number> {
    return this.primary.extendSlotLeases(workerId, leaseMs, name);
  }

  peekSlots(name: string): Promise<SlotCounts> {
    return this.primary.peekSlots(name);
  }

  sweepIdleKeyed(idleForMs: number): Promise<SweepIdleKeyedResult> {
    return this.primary.sweepIdleKeyed(idleForMs);
  }

  /** The list lives with the fallback (Postgres) when there is one, as the metadata does. */
  listBuckets(name?: string | null): Promise<PublishedBucket[]> {
    return (this.fallback ?? this.primary).listBuckets(name);
  }

  listReservations(name?: string | null): Promise<ReservationSummary[]> {
    return (this.fallback ?? this.primary).listReservations(name);
  }

  private async run<T>(
    bucketName: string,
    operation: string,
    op: (store: RateLimitStore) => Promise<T>,
  ): Promise<T> {
    try {
      return await op(this.primary);
    } catch (err) {
      if (!(err instanceof RateLimitStoreUnavailable) || err.backend !== this.primary.backend) throw err;
      if (!this.enabled || !this.fallback) {
        throw new RateLimitStoreUnavailable(
          err.bucketName,
          err.backend,
          err.reason +
            (this.enabled
              ? ' (no ctx.driver to fall back to Postgres)'
              : ' (Postgres fallback disabled: TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED=false)'),
          { cause: err.cause ?? err },
        );
      }
      this.logger?.warn(
        {
          bucketName,
          operation,
          backend: this.primary.backend,
          fallback: this.fallback.backend,
          err: err.reason,
        },
        'ratelimit-redis-fallback',
      );
      return await op(this.fallback);
    }
  }
}
