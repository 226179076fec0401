import { TaskQError } from './taskq-error.js';

/** One rate limit or reservation an actor names that nothing provides. */
export interface MissingProviderEntry {
  /** The actor that names it. */
  readonly actor: string;
  /** Which list it is in. */
  readonly namespace: 'rate_limit' | 'reservation';
  /** The name. */
  readonly name: string;
}

/**
 * The worker refused to start: an actor names a rate limit or reservation that is not registered
 * in the worker's `RateLimitRegistry` (register the primitive, or declare the instance on the
 * actor instead of its name).
 */
export class MissingProvider extends TaskQError {
  /** Every unresolved name, by actor. */
  readonly missing: readonly MissingProviderEntry[];

  constructor(missing: readonly MissingProviderEntry[]) {
    const list = missing
      .map(
        (m) =>
          `actor ${JSON.stringify(m.actor)} names ${m.namespace.replace('_', ' ')} ${JSON.stringify(m.name)}`,
      )
      .join('; ');
    super(
      'TASKQ_MISSING_PROVIDER',
      `${list}, but the worker's rate-limit registry has no such primitive: register it ` +
        `(registry.register(new TokenBucket(...))) and pass the registry as rateLimitRegistry, ` +
        `or declare the instance on the actor`,
    );
    this.missing = missing;
  }
}
