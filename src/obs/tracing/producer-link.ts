import { isSpanContextValid, TraceFlags, type Link } from '@opentelemetry/api';

/**
 * The link from a `process` span to the `send` span of the job's enqueue, rebuilt from the ids
 * stored on the row. Null when the row carries none, or ids that are not a W3C trace id (32 hex
 * digits) and span id (16 hex digits): a caller may store any text in `traceId`/`spanId`. The row
 * keeps no trace flags, so the link says "sampled"; a backend joins links on the ids alone.
 */
export function producerLink(traceId: string | null, spanId: string | null): Link | null {
  if (traceId === null || spanId === null) return null;
  const spanContext = { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(spanContext) ? { context: spanContext } : null;
}
