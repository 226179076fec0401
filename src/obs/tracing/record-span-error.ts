import { SpanStatusCode, type Exception, type Span } from '@opentelemetry/api';

import type { ErrorInfo } from '../../backend/worker-types.js';

/**
 * Marks `span` failed (status ERROR) and records the error as an `exception` event. Takes the
 * {@link ErrorInfo} the job row stores, not the thrown value: its message is already redacted
 * (URI credentials masked, Postgres `DETAIL:` lines dropped) and bounded, so a tracing backend
 * receives no more than the row holds.
 */
export function recordSpanError(span: Span, error: ErrorInfo): void {
  const exception: Exception = { name: error.errorClass };
  if (error.message !== null) exception.message = error.message;
  if (error.traceback !== null) exception.stack = error.traceback;
  span.recordException(exception);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error.message === null ? error.errorClass : `${error.errorClass}: ${error.message}`,
  });
}
