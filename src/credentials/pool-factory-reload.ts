import { untilAborted } from '../core/until-aborted.js';
import type pg from 'pg';

import type { PgDriver } from '../db/pg-driver.js';
import type { Logger } from '../obs/logger.js';
import type { ReloadableResource } from './reloadable-resource.js';

/** How long a client's reload waits for the old pool to close before leaving it to close on its own. */
export const RELOAD_CLOSE_BOUND_MS = 10_000;

/**
 * A client pool built by a pool factory (`TaskQ.open({ poolFactory })` or `{ dsn,
 * pgCredentialProvider }`) as a {@link ReloadableResource}: `reload` calls the factory again, checks
 * the new pool connects, swaps it into the driver every client call goes through, and waits (at most
 * {@link RELOAD_CLOSE_BOUND_MS}) for the old pool to drain and close. A factory or connect failure
 * rejects and leaves the current pool serving.
 */
export class PoolFactoryReload implements ReloadableResource {
  /** `pg:client`. */
  readonly name = 'pg:client';

  constructor(
    private readonly driver: PgDriver,
    private readonly factory: () => Promise<pg.Pool>,
    private readonly logger?: Logger,
  ) {}

  /** Rebuilds the pool through the factory; see the class. */
  async reload(signal: AbortSignal): Promise<void> {
    const building = this.factory();
    let pool: pg.Pool;
    try {
      pool = await untilAborted(building, signal);
    } catch (err) {
      // A pool the factory delivers after the abort is nobody's: end it.
      void building.then((p) => p.end()).catch(() => undefined);
      throw err;
    }
    const { drained } = await this.driver.replacePool(pool, { signal });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'bound'>((resolve) => {
      timer = setTimeout(() => resolve('bound'), RELOAD_CLOSE_BOUND_MS);
    });
    const outcome = await Promise.race([drained.then(() => 'closed' as const), bound]).catch(
      (err: unknown) => {
        this.logger?.warn({ resource: this.name, err }, 'credential-reload-old-pool-close-failed');
        return 'failed' as const;
      },
    );
    clearTimeout(timer);
    if (outcome === 'bound')
      this.logger?.warn(
        { resource: this.name, boundMs: RELOAD_CLOSE_BOUND_MS },
        'credential-reload-old-pool-still-draining',
      );
  }
}
