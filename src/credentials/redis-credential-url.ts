import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';

/** URL query parameters ioredis would turn into a credential, so the provider would not be the only source. */
const CREDENTIAL_PARAMS = ['password', 'username', 'user'];

/**
 * Checks a Redis URL used with a credential provider: `redis://` or `rediss://`, and no credential
 * in it (neither `user:password@` nor a `password=` / `username=` parameter) — the provider is the
 * one source of credentials, and a URL ends up in logs and process listings. Returns it trimmed.
 */
export function checkRedisUrlWithoutCredentials(url: unknown, field: string): string {
  if (typeof url !== 'string' || !/^rediss?:\/\//i.test(url.trim()))
    throw new InvalidArgumentError(field, url, 'must be a URL starting with redis:// or rediss://');
  const trimmed = url.trim();
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw new InvalidArgumentError(field, url, 'must be a valid redis:// or rediss:// URL');
  }
  const inQuery = CREDENTIAL_PARAMS.filter((p) => parsed.searchParams.has(p));
  if (parsed.username !== '' || parsed.password !== '' || inQuery.length > 0)
    throw new InvalidArgumentError(
      field,
      url,
      'must carry no credentials when a Redis credential provider is given: remove ' +
        (inQuery.length > 0 ? `the ${inQuery.join(', ')} parameter` : 'the user:password@ part') +
        ' (the provider supplies the user and password)',
      { conceal: true },
    );
  return trimmed;
}

/** The URLs each logger has already been warned about, so a worker with several clients warns once. */
const warned = new WeakMap<Logger, Set<string>>();

/**
 * Logs `redis-credential-over-plaintext` (once per logger and URL) when a provider's credential is
 * about to travel over `redis://`: the password or bearer token crosses the network unencrypted.
 */
export function warnPlaintextRedis(url: string, logger: Logger): void {
  if (!/^redis:\/\//i.test(url)) return;
  let urls = warned.get(logger);
  if (!urls) warned.set(logger, (urls = new Set()));
  const host = hostOf(url);
  if (urls.has(host)) return;
  urls.add(host);
  logger.warn(
    {
      scheme: 'redis',
      host,
      note: 'redis:// sends the credential provider’s password unencrypted; use rediss:// (TLS)',
    },
    'redis-credential-over-plaintext',
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
