import type { ConcurrencyReservation, SlotLease } from './concurrency-reservation.js';
import type { SlidingWindow } from './sliding-window.js';
import type { TokenBucket } from './token-bucket.js';
import type { RateLimitContext, RateLimitDecision } from './types.js';

/** A held concurrency slot, returned by `acquireForActor()`. Carries the fenced lease as-is. */
export class ReservationHandle {
  /** Discriminator. */
  readonly kind = 'reservation' as const;

  constructor(
    /** The reservation (concrete name for keyed ones). */
    readonly reservation: ConcurrencyReservation,
    /** The fenced lease; a release by a zombie attempt frees nothing. */
    readonly lease: SlotLease,
    private readonly ctx: RateLimitContext,
  ) {}

  /** Name of the reservation. */
  get name(): string {
    return this.reservation.name;
  }

  /** Frees the slot (fenced). Returns whether a slot was freed. */
  release(): Promise<boolean> {
    return this.reservation.release(this.lease, this.lease.workerId, this.ctx);
  }
}

/** A spent rate-limit token, returned by `acquireForActor()`. */
export class RateLimitHandle {
  /** Discriminator. */
  readonly kind = 'rate_limit' as const;

  constructor(
    /** The primitive (concrete name for keyed ones). */
    readonly primitive: TokenBucket | SlidingWindow,
    /** The admission, whose `backend` names the store that paid. */
    readonly decision: RateLimitDecision,
    private readonly ctx: RateLimitContext,
  ) {}

  /** Name of the primitive. */
  get name(): string {
    return this.primitive.name;
  }

  /** Gives the token back — the rollback path only (tokens of work that ran are never refunded). */
  refund(): Promise<void> {
    return this.primitive.kind === 'token_bucket'
      ? this.primitive.refund(this.decision, this.ctx, 1)
      : this.primitive.refund(this.decision, this.ctx);
  }
}

/** What `acquireForActor()` returns, in acquisition order; hand it to `releaseForActor()`. */
export type AcquiredResource = ReservationHandle | RateLimitHandle;
