import { TaskQError } from './taskq-error.js';

/**
 * Redis refused the credential a `RedisCredentialProvider` returned (`AUTH` answered `WRONGPASS`
 * or similar) during a credential reload. The connection keeps the authentication it had; the
 * reload of that resource failed and the next one, or the next reconnect, fetches again.
 */
export class RedisCredentialRejected extends TaskQError {
  /** The resource whose reload failed, e.g. `redis:progress`. */
  readonly resource: string;
  /** The ACL user the credential named (`default` when it named none). */
  readonly username: string;

  constructor(resource: string, username: string, cause: unknown) {
    super(
      'TASKQ_REDIS_CREDENTIAL_REJECTED',
      `Redis refused the credential for user "${username}" that the provider returned while reloading ` +
        `${resource} (${cause instanceof Error ? cause.message : String(cause)}). The connection keeps ` +
        'its previous authentication; check what the RedisCredentialProvider returns and the ACL user ' +
        '(ACL GETUSER) before the old password stops working.',
      { cause },
    );
    this.resource = resource;
    this.username = username;
  }
}
