import { context, SpanKind, trace, type Attributes, type Span } from '@opentelemetry/api';

import type { EnqueueArgs } from '../../backend/types.js';
import { toErrorInfo } from '../../worker/error-info.js';
import { recordSpanError } from './record-span-error.js';
import { MESSAGING_SYSTEM, SPAN_ATTRIBUTES as A } from './span-attributes.js';
import { taskqTracer, tracerRegistered } from './taskq-tracer.js';

/**
 * The client's `send <queue>` spans (kind PRODUCER), one per enqueue call: around the database
 * write of `enqueue`, `enqueueBatch` and `enqueueBatchFast`. The span is a child of the caller's
 * active span (inside a handler: the attempt's `process` span), and its ids are stored on every job
 * of the call whose caller gave no `traceId`/`spanId` of its own, so that the worker's `process`
 * span can link back to it. Only built when tracing is on: a client with `otelEnabled: false` holds
 * none and calls no tracer.
 */
export class EnqueueTracing {
  private readonly tracer = taskqTracer();

  /**
   * Runs `write` inside a `send` span over `args` (all the jobs of one call), stamping the span's
   * ids on the args first; `describe` adds attributes from the write's result. A write that throws
   * ends the span with status ERROR and the exception recorded (redacted like a job's error).
   */
  async send<T>(
    args: readonly EnqueueArgs[],
    attributes: Attributes,
    write: () => Promise<T>,
    describe: (span: Span, result: T) => void,
  ): Promise<T> {
    if (!tracerRegistered()) {
      // The API's span would be non-recording, with the ids of the caller's active span if it has
      // valid ones (a context propagated into this process): store those, as that span would.
      const active = trace.getSpanContext(context.active());
      if (active !== undefined && trace.isSpanContextValid(active))
        stampIds(args, active.traceId, active.spanId);
      return write();
    }
    const queue = singleQueue(args);
    const span = this.tracer.startSpan(queue === null ? 'send' : `send ${queue}`, {
      kind: SpanKind.PRODUCER,
      attributes: {
        [A.system]: MESSAGING_SYSTEM,
        [A.operationType]: 'send',
        [A.operationName]: 'send',
        ...(queue === null ? {} : { [A.destination]: queue }),
        ...attributes,
      },
    });
    const ids = span.spanContext();
    // A non-recording span with no parent has the invalid (all-zero) ids: store nothing then.
    if (trace.isSpanContextValid(ids)) stampIds(args, ids.traceId, ids.spanId);
    try {
      // The write runs in the span's context: database instrumentation nests under it.
      const result = await context.with(trace.setSpan(context.active(), span), write);
      describe(span, result);
      return result;
    } catch (err) {
      // Redacted as a job's error is (the client has no exception settings: the defaults).
      recordSpanError(span, toErrorInfo(err, { maxChars: 2000, redact: true }));
      throw err;
    } finally {
      span.end();
    }
  }
}

/** Stores the ids on every job whose caller gave no `traceId`/`spanId` of its own. */
function stampIds(args: readonly EnqueueArgs[], traceId: string, spanId: string): void {
  for (const a of args) {
    if (a.traceId === null && a.spanId === null) {
      a.traceId = traceId;
      a.spanId = spanId;
    }
  }
}

/** The queue every job of the call goes to, or null when they go to several (the span is then `send`). */
function singleQueue(args: readonly EnqueueArgs[]): string | null {
  const first = args[0]?.queue ?? null;
  for (const a of args) if (a.queue !== first) return null;
  return first;
}
