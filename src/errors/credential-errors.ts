import { TaskQError } from './taskq-error.js';

/**
 * A credential provider returned a different user than the one a pool or connection factory pinned
 * when it was built. node-postgres takes the user once per pool (only the password can be fetched
 * per connection), so a rotated user needs the pool rebuilt: a credential reload (SIGHUP,
 * `reloadInterval`, `worker.reloadCredentials()`, `tq.reloadCredentials()`).
 */
export class CredentialUsernameChangedError extends TaskQError {
  /** What the pinned user belongs to: `pool` or `dedicated connection`. */
  readonly resource: string;
  /** The user pinned when the pool or factory was built (`null`: the DSN's). */
  readonly pinned: string | null;
  /** The user the provider returns now (`null`: none, the DSN's). */
  readonly received: string | null;

  constructor(resource: string, pinned: string | null, received: string | null) {
    const show = (u: string | null): string => (u === null ? "the DSN's user" : `"${u}"`);
    super(
      'TASKQ_CREDENTIAL_USERNAME_CHANGED',
      `the credential provider now issues ${show(received)} but this ${resource} was built for ` +
        `${show(pinned)}: a pool keeps its user for life, so rebuild it with a credential reload ` +
        '(SIGHUP or worker.reloadCredentials() for a worker, tq.reloadCredentials() for a client)',
    );
    this.resource = resource;
    this.pinned = pinned;
    this.received = received;
  }
}

/**
 * A credential provider reference (`--pg-credential-provider`, `TASKQ_PG_CREDENTIAL_PROVIDER`, and
 * the Redis ones) could not be turned into a provider: the module is missing or fails to load, the
 * export is missing, or it is not a provider, a factory or a class of one.
 */
export class CredentialProviderReferenceError extends TaskQError {
  /** Where the reference came from, e.g. `--pg-credential-provider` or `TASKQ_PG_CREDENTIAL_PROVIDER`. */
  readonly source: string;
  /** The reference as given, `<module>:<export>`. */
  readonly reference: string;
  /** What is wrong with it. */
  readonly reason: string;

  constructor(source: string, reference: string, reason: string, options: { cause?: unknown } = {}) {
    super('TASKQ_CREDENTIAL_PROVIDER_REFERENCE', `${source} = "${reference}": ${reason}`, options);
    this.source = source;
    this.reference = reference;
    this.reason = reason;
  }
}
