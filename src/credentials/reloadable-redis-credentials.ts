import { untilAborted } from '../core/until-aborted.js';
import type { Redis } from 'ioredis';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { RedisCredentialRejected } from '../errors/redis-credential-errors.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import type { RedisCredential, RedisCredentialProvider } from './credential-types.js';
import type { ReloadableResource } from './reloadable-resource.js';

/** Options of {@link ReloadableRedisCredentials}. */
export interface ReloadableRedisCredentialsOptions {
  /** Names the resource in logs and errors, e.g. `redis:progress`. */
  name: string;
  /** Where the credentials come from. */
  provider: RedisCredentialProvider;
  /** Where `redis-credential-fetch-failed` and `redis-credential-over-plaintext` go. Default: silent. */
  logger?: Logger | null;
  /** Longest wait for the provider before a (re)connect, in ms. Default 10 000. */
  fetchTimeoutMs?: number;
}

/** The keys of {@link ReloadableRedisCredentialsOptions}: any other is refused, not ignored. */
const OPTION_KEYS: readonly string[] = ['name', 'provider', 'logger', 'fetchTimeoutMs'];

/**
 * The credential state of the Redis clients TaskQ builds with a {@link RedisCredentialProvider}
 * (one resource: a client and the duplicates made from it, e.g. a pub/sub subscriber).
 *
 * Every (re)connect of such a client asks the provider first (bounded by `fetchTimeoutMs`; when the
 * provider fails, the last credential it gave is used and the failure logged). `reload(signal)` —
 * the worker's SIGHUP / `reloadCredentials()`, or `TaskQ.reloadCredentials()` — fetches a fresh
 * credential, stores it for reconnects and sends `AUTH` on every ready connection, so the live
 * connections run under it at once. A connection in subscriber mode cannot run `AUTH` (Redis allows
 * only (un)subscribe commands there): it takes the new credential at its next reconnect.
 */
export class ReloadableRedisCredentials implements ReloadableResource {
  readonly name: string;
  private readonly provider: RedisCredentialProvider;
  private readonly fetchTimeoutMs: number;
  /** Where this resource's warnings go. */
  readonly logger: Logger;
  /** The last credential the provider gave (the fallback when it fails at a reconnect). */
  private current: RedisCredential | null = null;
  /** The clients connected (or connecting) under this resource. */
  private readonly clients = new Set<Redis>();

  constructor(options: ReloadableRedisCredentialsOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('ReloadableRedisCredentials', options, 'options must be an object');
    checkKnownKeys(
      options,
      OPTION_KEYS,
      'ReloadableRedisCredentials',
      'an option of new ReloadableRedisCredentials()',
    );
    checkProvider(options.provider, 'redisCredentialProvider');
    if (typeof options.name !== 'string' || options.name === '')
      throw new InvalidArgumentError(
        'ReloadableRedisCredentials.name',
        options.name,
        'must be a non-empty string',
      );
    const timeout = options.fetchTimeoutMs ?? 10_000;
    if (!Number.isFinite(timeout) || timeout <= 0)
      throw new InvalidArgumentError(
        'ReloadableRedisCredentials.fetchTimeoutMs',
        timeout,
        'must be a positive number of milliseconds',
      );
    this.name = options.name;
    this.provider = options.provider;
    this.fetchTimeoutMs = timeout;
    this.logger = options.logger ?? silentLogger;
  }

  /** Connections under this resource now (for tests and health output). */
  get clientCount(): number {
    return this.clients.size;
  }

  /**
   * The credential for a connection about to open: a fresh one from the provider, or — when the
   * provider fails or does not answer within `fetchTimeoutMs` — the last one it gave (logged as
   * `redis-credential-fetch-failed`). Rejects only when the provider has never answered.
   */
  async forConnect(): Promise<RedisCredential> {
    const controller = new AbortController();
    const timer = setTimeout(
      () =>
        controller.abort(
          new Error(`the Redis credential provider did not answer within ${this.fetchTimeoutMs} ms`),
        ),
      this.fetchTimeoutMs,
    );
    try {
      this.current = await this.fetch(controller.signal);
      return this.current;
    } catch (err) {
      this.logger.warn(
        {
          resource: this.name,
          err: err instanceof Error ? err.message : String(err),
          fallback: this.current ? 'last-credential' : 'none',
        },
        'redis-credential-fetch-failed',
      );
      if (this.current) return this.current;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Counts `client` under this resource until it ends (a later reconnect counts it again). */
  track(client: Redis): void {
    if (this.clients.has(client)) return;
    this.clients.add(client);
    client.once('end', () => this.clients.delete(client));
  }

  /**
   * Fetches a fresh credential (given up when `signal` aborts: nothing changes), stores it for the
   * next reconnects and re-authenticates every ready connection with `AUTH`. Rejects with
   * {@link RedisCredentialRejected} when Redis refuses it; the connections then keep their previous
   * authentication and reconnects keep the previous credential.
   */
  async reload(signal: AbortSignal): Promise<void> {
    const credential = await this.fetch(signal);
    const previous = this.current;
    this.current = credential;
    const live = [...this.clients];
    for (const client of live) applyRedisCredential(client, credential);
    // A subscriber connection accepts only (un)subscribe commands; it re-authenticates on reconnect.
    const ready = live.filter((c) => c.status === 'ready' && !c.condition?.subscriber);
    const results = await Promise.allSettled(
      ready.map((c) =>
        untilAborted(
          credential.username
            ? c.auth(credential.username, credential.password)
            : c.auth(credential.password),
          signal,
        ),
      ),
    );
    if (signal.aborted) throw signal.reason;
    // A connection that dropped mid-AUTH reconnects with a fresh fetch anyway; a refusal is the news.
    // A connection that entered subscriber mode after the filter above refuses AUTH for that reason
    // alone: like the other subscribers, it takes the credential at its next reconnect.
    const refused = results.find(
      (r): r is PromiseRejectedResult =>
        r.status === 'rejected' &&
        isReplyError(r.reason) &&
        !/allowed in this context/.test(String(r.reason)),
    );
    if (!refused) return;
    this.current = previous;
    if (previous) for (const client of live) applyRedisCredential(client, previous);
    throw new RedisCredentialRejected(this.name, credential.username ?? 'default', refused.reason);
  }

  /** Asks the provider, bounded by `signal`; checks what it returns. */
  private async fetch(signal: AbortSignal): Promise<RedisCredential> {
    const credential = await untilAborted(
      Promise.resolve().then(() => this.provider.getRedisCredential()),
      signal,
    );
    return checkCredential(credential);
  }
}

/** Writes `credential` into the options ioredis authenticates its next connection with. */
export function applyRedisCredential(client: Redis, credential: RedisCredential): void {
  if (credential.username) client.options.username = credential.username;
  else delete client.options.username;
  client.options.password = credential.password;
}

/** Throws unless `provider` looks like a {@link RedisCredentialProvider}. */
export function checkProvider(provider: unknown, field: string): asserts provider is RedisCredentialProvider {
  if (
    provider === null ||
    typeof provider !== 'object' ||
    typeof (provider as Partial<RedisCredentialProvider>).getRedisCredential !== 'function'
  )
    throw new InvalidArgumentError(field, provider, 'must be an object with a getRedisCredential() method');
}

function checkCredential(value: unknown): RedisCredential {
  const c = value as Partial<RedisCredential> | null;
  const userOk = c?.username === undefined || c.username === null || typeof c.username === 'string';
  if (c === null || typeof c !== 'object' || typeof c.password !== 'string' || c.password === '' || !userOk)
    throw new InvalidArgumentError(
      'RedisCredentialProvider.getRedisCredential()',
      value,
      'must resolve to { username?: string | null, password: string } with a non-empty password',
      { conceal: true },
    );
  return { username: c.username ?? null, password: c.password };
}

/** An error Redis answered with (as opposed to a dropped connection). */
function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}
