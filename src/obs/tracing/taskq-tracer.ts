import { ProxyTracerProvider, trace, type Tracer } from '@opentelemetry/api';

import { TASKQ_VERSION } from '../../core/version.js';

/**
 * TaskQ's tracer, from the global tracer provider. TaskQ never registers a provider: an application
 * that registers an OpenTelemetry SDK gets TaskQ's spans; one that does not gets the API's no-op
 * tracer. The tracer returned is a proxy that follows a provider registered later.
 */
export function taskqTracer(): Tracer {
  return trace.getTracer('taskq', TASKQ_VERSION);
}

/** What the API's global proxy delegates to while no provider is registered (one shared instance). */
const NO_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * False while no tracer provider is registered, when every span TaskQ started would be the API's
 * non-recording one: the callers then start none, and spare each job the span, its attributes
 * and its context. Asked per use (a global lookup and a comparison), so a provider registered
 * later is followed. A provider registered through another copy of the API counts as registered.
 */
export function tracerRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_PROVIDER;
}
