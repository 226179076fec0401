import type { PgDriver } from '../db/pg-driver.js';
import type { Logger } from '../obs/logger.js';
import type { PgCredentialProvider } from './credential-types.js';
import { pgCredentialConfig } from './pg-credential-config.js';
import type { ReloadableResource } from './reloadable-resource.js';

/**
 * One worker pool as a {@link ReloadableResource}: `reload` fetches a credential (re-pinning the
 * user), builds a new pool with the driver's size, timeouts and session settings, checks it
 * connects, and swaps it in; the old pool drains in the background (queued callers served, in-flight
 * statements finished, then its connections closed). Dedicated connections opened afterwards (a
 * LISTEN reconnect, a new leader session) use the new credential; open ones are left alone.
 */
export class PgDriverReload implements ReloadableResource {
  /** `pg:<application name>`, e.g. `pg:taskq-claim`. */
  readonly name: string;

  constructor(
    private readonly driver: PgDriver,
    private readonly dsn: string,
    private readonly provider: PgCredentialProvider,
    role: string,
    private readonly logger?: Logger,
  ) {
    this.name = `pg:${role}`;
  }

  /** Rebuilds the pool; rejects (old pool still serving) on a provider, connect or abort failure. */
  async reload(signal: AbortSignal): Promise<void> {
    const config = await pgCredentialConfig(this.dsn, this.provider, 'pool', signal);
    const { drained } = await this.driver.rebuild(config, signal);
    drained.then(
      () => this.logger?.debug({ resource: this.name }, 'credential-reload-old-pool-closed'),
      (err: unknown) =>
        this.logger?.warn({ resource: this.name, err }, 'credential-reload-old-pool-close-failed'),
    );
  }
}
