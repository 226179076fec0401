import type { Redis } from 'ioredis';

import type { ReloadableRedisCredentials } from '../credentials/reloadable-redis-credentials.js';
import type { Logger } from '../obs/logger.js';
import type { RedisTransport } from './job-watch.js';
import { closeOwnedRedis } from './redis-progress-publisher.js';
import { RedisProgressSubscriber } from './redis-progress-subscriber.js';
import { checkOptionsObject } from '../core/closest-name.js';

const OPTION_KEYS: readonly string[] = ['owned', 'logger', 'credentials'];

/**
 * A client's live progress over Redis pub/sub: one subscriber connection (a duplicate of `redis`)
 * shared by the client's streams. The client closes it; `redis` itself is closed only when TaskQ
 * built it (`owned`).
 */
export class RedisLiveProgress implements RedisTransport {
  readonly subscriber: RedisProgressSubscriber;

  constructor(
    /** The Redis client progress is read through. */
    readonly redis: Redis,
    /** Schema whose progress channels are read (`taskq:{schema}:progress:{jobId}`). */
    readonly schema: string,
    private readonly options: {
      owned: boolean;
      logger: Logger;
      credentials?: ReloadableRedisCredentials | null;
    },
  ) {
    checkOptionsObject(options, OPTION_KEYS, 'RedisLiveProgress.options', 'an option of RedisLiveProgress');
    this.subscriber = new RedisProgressSubscriber(redis, options.logger);
  }

  /** The credentials `redis` and its subscriber duplicate authenticate with, when TaskQ built it with a provider. */
  get credentials(): ReloadableRedisCredentials | null {
    return this.options.credentials ?? null;
  }

  /** Closes the subscriber, and the Redis client when TaskQ owns it. */
  async close(): Promise<void> {
    await this.subscriber.close();
    if (this.options.owned) await closeOwnedRedis(this.redis);
  }
}
