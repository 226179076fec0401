import { context, ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';

import { toErrorInfo } from '../../worker/error-info.js';
import { recordSpanError } from './record-span-error.js';
import { MESSAGING_SYSTEM, SPAN_ATTRIBUTES as A } from './span-attributes.js';
import { taskqTracer, tracerRegistered } from './taskq-tracer.js';

/**
 * The worker's `dispatch` spans (kind INTERNAL), one per claim statement. Each is the root of its
 * own trace: a claim serves jobs of many enqueues, so no single one is its parent. Only built when
 * the worker's `otelEnabled` is true.
 */
export class DispatchTracing {
  private readonly tracer = taskqTracer();

  constructor(private readonly workerId: string) {}

  /**
   * Runs `claim` (asking for at most `limit` jobs) inside a `dispatch` span; records how many it
   * claimed. With no tracer provider registered, runs it as it is.
   */
  async dispatch<T extends readonly unknown[]>(limit: number, claim: () => Promise<T>): Promise<T> {
    if (!tracerRegistered()) return claim();
    const span: Span = this.tracer.startSpan(
      'dispatch',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [A.system]: MESSAGING_SYSTEM,
          [A.operationType]: 'receive',
          [A.operationName]: 'dispatch',
          [A.workerId]: this.workerId,
          [A.dispatchLimit]: limit,
        },
      },
      ROOT_CONTEXT,
    );
    try {
      const rows = await context.with(trace.setSpan(ROOT_CONTEXT, span), claim);
      span.setAttribute(A.batchCount, rows.length);
      return rows;
    } catch (err) {
      recordSpanError(span, toErrorInfo(err, { maxChars: 2000, redact: true }));
      throw err;
    } finally {
      span.end();
    }
  }
}
