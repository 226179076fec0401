import { TaskQError } from './taskq-error.js';

/** One rate limit or reservation an actor names that nothing provides. */
export interface MissingLimitEntry {
  /** The actor that names it. */
  readonly actor: string;
  /** Which list it is in. */
  readonly namespace: 'rate_limit' | 'reservation';
  /** The name. */
  readonly name: string;
}

/** One injected token no provider is registered for. */
export interface MissingDependencyEntry {
  /** A dependency injection token. */
  readonly namespace: 'dependency';
  /** The token's name. */
  readonly name: string;
  /** Who injects it: `actor "send_email"` or `provider "Cache"` (the reference's `required_by`). */
  readonly requiredBy: string;
  /** The actor that injects it, or null when a provider's factory does. */
  readonly actor: string | null;
}

/** One name or token the worker found nothing to provide. */
export type MissingProviderEntry = MissingLimitEntry | MissingDependencyEntry;

/**
 * The worker refused to start: an actor names a rate limit or reservation that is not registered
 * in the worker's `RateLimitRegistry` (register the primitive, or declare the instance on the
 * actor instead of its name), or an actor or provider injects a token that no provider is
 * registered for (register one in the `Providers` given to the worker).
 */
export class MissingProvider extends TaskQError {
  /** Every unresolved name or token, with who needs it. */
  readonly missing: readonly MissingProviderEntry[];

  constructor(missing: readonly MissingProviderEntry[]) {
    const limits = missing.filter((m): m is MissingLimitEntry => m.namespace !== 'dependency');
    const deps = missing.filter((m): m is MissingDependencyEntry => m.namespace === 'dependency');
    const parts: string[] = [];
    if (deps.length > 0) {
      parts.push(
        deps.map((m) => `no provider registered for ${m.name} (required by ${m.requiredBy})`).join('; ') +
          `: register ${deps.length === 1 ? 'one' : 'them'} (providers.value(token, value) or ` +
          `providers.factory(token, { scope }, create)) in the Providers passed to the worker`,
      );
    }
    if (limits.length > 0) {
      const list = limits
        .map(
          (m) =>
            `actor ${JSON.stringify(m.actor)} names ${m.namespace.replace('_', ' ')} ${JSON.stringify(m.name)}`,
        )
        .join('; ');
      parts.push(
        `${list}, but the worker's rate-limit registry has no such primitive: register it ` +
          `(registry.register(new TokenBucket(...))) and pass the registry as rateLimitRegistry, ` +
          `or declare the instance on the actor`,
      );
    }
    super('TASKQ_MISSING_PROVIDER', parts.join('. '));
    this.missing = missing;
  }
}
