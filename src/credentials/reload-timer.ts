import type { Logger } from '../obs/logger.js';
import { LoopService } from '../worker/loop-service.js';
import type { CredentialReloader } from './credential-reloader.js';

/**
 * `reloadInterval`: asks the reloader for a pass every interval (jittered, so a fleet started
 * together does not hit the credential endpoint at once). The first pass of the loop is skipped:
 * the connections were just built with fresh credentials. A pass is requested, not awaited, so
 * stopping the timer never waits on a slow credential endpoint.
 */
export class ReloadTimer extends LoopService {
  private first = true;

  constructor(
    private readonly reloader: CredentialReloader,
    private readonly options: { readonly everyMs: number },
    logger: Logger,
  ) {
    super('credential-reload-timer', logger);
  }

  runOnce(): Promise<void> {
    if (this.first) this.first = false;
    else void this.reloader.request('interval');
    return Promise.resolve();
  }

  protected intervalMs(): number {
    return this.options.everyMs;
  }

  // A pass only requests a reload; the reloads themselves are bounded by reloadFactoryTimeout.
  protected override livenessPeriodMs(): number | null {
    return null;
  }
}
