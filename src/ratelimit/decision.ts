import type { RateLimitBackend, RateLimitDecision, RateLimitState } from './types.js';

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
