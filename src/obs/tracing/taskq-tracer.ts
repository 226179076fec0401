import { trace, type Tracer } from '@opentelemetry/api';

import { TASKQ_VERSION } from '../../core/version.js';

/**
 * TaskQ's tracer, from the global tracer provider. TaskQ never registers a provider: an application
 * that registers an OpenTelemetry SDK gets TaskQ's spans; one that does not gets the API's no-op
 * tracer. The tracer returned is a proxy that follows a provider registered later.
 */
export function taskqTracer(): Tracer {
  return trace.getTracer('taskq', TASKQ_VERSION);
}
