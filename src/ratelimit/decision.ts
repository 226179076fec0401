import type { Clock } from '../clock.js';
import { RateLimitBackendMissing } from './errors.js';
import type { RateLimitBackend, RateLimitContext, RateLimitDecision, RateLimitState } from './types.js';

/** Builds an immutable decision. */
export function decision(fields: {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number | null;
  bucketName: string;
  backend: RateLimitBackend;
  requestId?: string | null;
  previousState?: Record<string, number | null> | null;
}): RateLimitDecision {
  return Object.freeze({
    allowed: fields.allowed,
    remaining: Math.max(0, fields.remaining),
    retryAfterMs: fields.allowed ? 0 : fields.retryAfterMs,
    bucketName: fields.bucketName,
    backend: fields.backend,
    requestId: fields.requestId ?? null,
    previousState: fields.previousState ? Object.freeze({ ...fields.previousState }) : null,
  });
}

/** Builds an immutable state snapshot. */
export function state(
  fields: Omit<RateLimitState, 'retryAfterMs'> & { retryAfterMs: number | null },
): RateLimitState {
  return Object.freeze({ ...fields, retryAfterMs: fields.isExhausted ? fields.retryAfterMs : 0 });
}

/** Rounds a store's retry hint up to whole ms, at least 1 ms (a denial never says "retry now"). */
export function retryMs(ms: number): number {
  return Math.max(1, Math.ceil(ms - 1e-6));
}

/** The clock of a memory-backed call, or a configuration error. */
export function requireClock(ctx: RateLimitContext, bucketName: string): Clock {
  if (!ctx.clock) {
    throw new RateLimitBackendMissing(
      bucketName,
      'clock',
      "backend 'memory' runs on an injected clock: pass ctx.clock (a SystemClock, or a FakeClock in tests)",
    );
  }
  return ctx.clock;
}

/**
 * Wall-clock time of a memory primitive that never runs backwards: a backward step of the injected
 * clock counts as zero elapsed time (the last time seen is kept).
 */
export class ClampedTime {
  private last: number | null = null;

  /** Current ms, clamped to never go below the previous reading. */
  now(clock: Clock): number {
    const t = clock.now().getTime();
    this.last = this.last === null ? t : Math.max(this.last, t);
    return this.last;
  }

  /** Forgets the last reading (reset). */
  clear(): void {
    this.last = null;
  }
}
