import type { Redis, RedisOptions } from 'ioredis';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkKnownKeys } from '../core/closest-name.js';
import type { Logger } from '../obs/logger.js';
import type { RedisCredentialProvider } from './credential-types.js';
import { createCredentialedRedis } from './credentialed-redis.js';
import { checkRedisUrlWithoutCredentials, warnPlaintextRedis } from './redis-credential-url.js';
import { checkProvider, ReloadableRedisCredentials } from './reloadable-redis-credentials.js';

/** A zero-argument async factory of ioredis clients (the reference's `RedisFactory`). */
export interface RedisClientFactory {
  /** Builds a new client; it connects at once unless `lazyConnect` was given. */
  (): Promise<Redis>;
  /**
   * The credential state shared by every client this factory built: `reload(signal)` fetches a
   * fresh credential and re-authenticates their live connections (`AUTH`).
   */
  readonly credentials: ReloadableRedisCredentials;
}

/** TaskQ's options of {@link makeRedisClientFactory} (the ioredis ones are the third argument). */
export interface RedisClientFactoryOptions {
  /** Where `redis-credential-over-plaintext` and `redis-credential-fetch-failed` go. Default: silent. */
  logger?: Logger | null;
  /** Longest wait for the provider before a (re)connect, in ms. Default 10 000. */
  fetchTimeoutMs?: number;
  /** Names the clients' resource in logs and errors. Default `redis`. */
  name?: string;
}

/** The keys of {@link RedisClientFactoryOptions}: any other is refused, not ignored. */
const FACTORY_OPTION_KEYS: readonly string[] = ['logger', 'fetchTimeoutMs', 'name'];

/** ioredis options the provider owns: giving them too would leave two sources of credentials. */
const CREDENTIAL_OPTIONS = ['username', 'password'] as const;

/**
 * Builds a factory of ioredis clients that authenticate with `provider`: the credential is fetched
 * for every connection and every reconnection, never put in the URL. `url` must carry no
 * credentials (`redis://user:pw@…` is refused); a `redis://` URL (not `rediss://`) logs
 * `redis-credential-over-plaintext` once, since the password then crosses the network in clear.
 * A null `url` makes the factory throw when called (Redis not configured).
 *
 * ```ts
 * const factory = makeRedisClientFactory('rediss://cache.internal:6380', vaultRedisProvider);
 * const redis = await factory();
 * ```
 */
export function makeRedisClientFactory(
  url: string | null | undefined,
  provider: RedisCredentialProvider,
  ioredisOptions: RedisOptions = {},
  options: RedisClientFactoryOptions = {},
): RedisClientFactory {
  checkProvider(provider, 'makeRedisClientFactory.provider');
  const checkedUrl =
    url === null || url === undefined
      ? null
      : checkRedisUrlWithoutCredentials(url, 'makeRedisClientFactory.url');
  if (ioredisOptions === null || typeof ioredisOptions !== 'object')
    throw new InvalidArgumentError(
      'makeRedisClientFactory.ioredisOptions',
      ioredisOptions,
      'must be an object',
    );
  for (const key of CREDENTIAL_OPTIONS)
    if (ioredisOptions[key] !== undefined)
      throw new InvalidArgumentError(
        `makeRedisClientFactory.ioredisOptions.${key}`,
        '(set)',
        'must not be given: the credential provider supplies the user and password',
      );
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('makeRedisClientFactory.options', options, 'must be an object');
  checkKnownKeys(
    options,
    FACTORY_OPTION_KEYS,
    'makeRedisClientFactory.options',
    'an option of makeRedisClientFactory()',
  );
  const credentials = new ReloadableRedisCredentials({
    name: options.name ?? 'redis',
    provider,
    logger: options.logger ?? null,
    ...(options.fetchTimeoutMs !== undefined ? { fetchTimeoutMs: options.fetchTimeoutMs } : {}),
  });
  const factory = async (): Promise<Redis> => {
    if (checkedUrl === null)
      throw new InvalidArgumentError(
        'makeRedisClientFactory.url',
        url,
        'Redis is not configured: set TASKQ_REDIS_URL or pass a redis:// or rediss:// URL',
      );
    warnPlaintextRedis(checkedUrl, credentials.logger);
    return createCredentialedRedis(checkedUrl, ioredisOptions, credentials);
  };
  return Object.assign(factory, { credentials });
}
