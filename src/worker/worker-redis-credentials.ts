import type { RedisCredentialProvider } from '../credentials/credential-types.js';
import { checkRedisUrlWithoutCredentials } from '../credentials/redis-credential-url.js';
import { checkProvider, ReloadableRedisCredentials } from '../credentials/reloadable-redis-credentials.js';
import type { ReloadableResource } from '../credentials/reloadable-resource.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';

/**
 * The credential side of the Redis clients a worker builds from `redisUrl` (the progress publisher,
 * the rate-limit store): one {@link ReloadableRedisCredentials} per client, each added to the
 * worker's reloadables so SIGHUP / `reloadCredentials()` re-authenticates it. Clients you pass in
 * (`redis`, `progressPublisher`) never get one.
 */
export class WorkerRedisCredentials {
  private constructor(
    private readonly provider: RedisCredentialProvider | null,
    private readonly logger: Logger,
    private readonly reloadables: ReloadableResource[],
  ) {}

  /**
   * Checks `redisCredentialProvider` at construction: a provider, and a `redisUrl` without
   * credentials for it to authenticate. Nothing connects.
   */
  static check(
    provider: unknown,
    redisUrl: string | null,
    logger: Logger,
    reloadables: ReloadableResource[],
  ): WorkerRedisCredentials {
    if (provider === undefined || provider === null)
      return new WorkerRedisCredentials(null, logger, reloadables);
    checkProvider(provider, 'worker.redisCredentialProvider');
    if (redisUrl === null || redisUrl === '')
      throw new InvalidArgumentError(
        'worker.redisCredentialProvider',
        '(set)',
        'needs settings.redisUrl (TASKQ_REDIS_URL): the provider authenticates the Redis clients the worker builds from it',
      );
    checkRedisUrlWithoutCredentials(redisUrl, 'settings.redisUrl');
    return new WorkerRedisCredentials(provider, logger, reloadables);
  }

  /** The credentials of the owned client `name` (`redis:progress`, `redis:ratelimit`), or null without a provider. */
  forClient(name: string): ReloadableRedisCredentials | null {
    if (!this.provider) return null;
    const credentials = new ReloadableRedisCredentials({
      name,
      provider: this.provider,
      logger: this.logger,
    });
    this.reloadables.push(credentials);
    return credentials;
  }
}
