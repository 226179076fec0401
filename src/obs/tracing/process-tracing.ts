import { context, ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';

import type { ClaimedJob } from '../../backend/types.js';
import type { Settlement, SettleResult } from '../../backend/worker-types.js';
import { producerLink } from './producer-link.js';
import { recordSpanError } from './record-span-error.js';
import { MESSAGING_SYSTEM, SPAN_ATTRIBUTES as A } from './span-attributes.js';
import { taskqTracer, tracerRegistered } from './taskq-tracer.js';

/**
 * The worker's `process <actor>` spans (kind CONSUMER), one per attempt: from payload validation to
 * the write of the attempt's outcome. Each is the root of its own trace and **linked** (not a child)
 * to the `send` span of the job's enqueue, rebuilt from the row's `trace_id`/`span_id`: producer and
 * consumer are separate traces that are causally related (messaging semantic conventions). Only
 * built when the worker's `otelEnabled` is true; otherwise the runner holds none and calls no tracer.
 */
export class ProcessTracing {
  private readonly tracer = taskqTracer();

  constructor(private readonly workerId: string) {}

  /**
   * Starts the attempt's span (ended by {@link end}), or none while no tracer provider is
   * registered: the attempt then runs as with tracing off (`ctx.span` the shared non-recording span).
   */
  start(row: ClaimedJob): Span | undefined {
    if (!tracerRegistered()) return undefined;
    const link = producerLink(row.traceId, row.spanId);
    return this.tracer.startSpan(
      `process ${row.actor}`,
      {
        kind: SpanKind.CONSUMER,
        root: true,
        attributes: {
          [A.system]: MESSAGING_SYSTEM,
          [A.operationType]: 'process',
          [A.operationName]: 'process',
          [A.destination]: row.queue,
          [A.messageId]: row.id,
          [A.actor]: row.actor,
          [A.attempt]: row.attempt,
          [A.workerId]: this.workerId,
        },
        ...(link === null ? {} : { links: [link] }),
      },
      ROOT_CONTEXT,
    );
  }

  /**
   * Calls `fn(...args)` with `span` as the active span: what the handler enqueues (sub-jobs,
   * batches) gets `send` spans that are children of this attempt's span, and the stored ids link
   * those jobs' attempts to it.
   */
  within<A extends unknown[], R>(span: Span, fn: (...args: A) => R, ...args: A): R {
    return context.with(trace.setSpan(ROOT_CONTEXT, span), fn, undefined, ...args);
  }

  /**
   * Ends the span with the attempt's outcome: `outcome` is the settlement handed to the completer,
   * or null when the job was given up before its outcome was written (`given_up`: lease lost,
   * abandoned, re-pended); `written` is what the write did, when it was made. A failed attempt
   * (retried or not) gets status ERROR and its error.
   */
  end(span: Span, outcome: Settlement | null, written: SettleResult | null = null): void {
    span.setAttribute(A.outcome, outcome === null ? 'given_up' : outcomeName(outcome, written));
    if (outcome?.kind === 'failed') recordSpanError(span, outcome.error);
    span.end();
  }
}

/**
 * The `taskq.job.outcome` value of a settlement: `lost` when the write found the job no longer this
 * worker's; for a failure, what the write decided (a retry past the job's deadline fails for good).
 */
function outcomeName(s: Settlement, written: SettleResult | null): string {
  if (written?.status === 'noop') return 'lost';
  switch (s.kind) {
    case 'failed':
      if (written !== null) return written.status === 'failed' ? 'failed' : 'retry';
      return s.retryDelayMs === null ? 'failed' : 'retry';
    case 'reschedule':
      return s.outcome;
    default:
      return s.kind;
  }
}
