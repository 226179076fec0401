import { INVALID_SPAN_CONTEXT, trace, type Span } from '@opentelemetry/api';

/**
 * The span `ctx.span` holds when tracing is off (`otelEnabled: false`): records nothing, so a
 * handler may call it unconditionally. One shared instance.
 */
export const NON_RECORDING_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
