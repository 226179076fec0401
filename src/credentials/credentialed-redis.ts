import { createRequire } from 'node:module';

import type { Callback, Redis, RedisOptions } from 'ioredis';

import { applyRedisCredential, type ReloadableRedisCredentials } from './reloadable-redis-credentials.js';

type CredentialedRedisClass = new (
  credentials: ReloadableRedisCredentials,
  url: string | undefined,
  options: RedisOptions,
) => Redis;

let credentialedClass: CredentialedRedisClass | null = null;

/**
 * Builds an ioredis client whose every connect — the first, each automatic reconnect, and those of
 * its `duplicate()`s (a pub/sub subscriber) — first asks `credentials` for the credential, then
 * authenticates with it. ioredis itself only knows a static `username`/`password`, read when a
 * connect starts; overriding `connect()` is how a reconnect can wait for a fresh credential before
 * ioredis reads them. The client is tracked by `credentials`, whose `reload()` re-authenticates it.
 *
 * `options.lazyConnect` keeps its meaning: without it the client connects at once (in the
 * background, like ioredis).
 */
export function createCredentialedRedis(
  url: string,
  options: RedisOptions,
  credentials: ReloadableRedisCredentials,
): Redis {
  credentialedClass ??= defineCredentialedClass();
  return new credentialedClass(credentials, url, options);
}

/** Defined on first use: ioredis is loaded only by processes that talk to Redis. */
function defineCredentialedClass(): CredentialedRedisClass {
  const Base = (createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis }).Redis;

  class CredentialedRedis extends Base {
    readonly #credentials: ReloadableRedisCredentials;
    readonly #lazy: boolean;
    /** The connect in progress (fetch, then ioredis's connect), shared by concurrent callers. */
    #pending: Promise<void> | null = null;
    /** Bumped by `disconnect()`, so a connect whose fetch outlived it does not reopen the client. */
    #epoch = 0;

    constructor(credentials: ReloadableRedisCredentials, url: string | undefined, options: RedisOptions) {
      // Always lazy for ioredis: its constructor would connect before this class could fetch.
      if (url === undefined) super({ ...options, lazyConnect: true });
      else super(url, { ...options, lazyConnect: true });
      this.#credentials = credentials;
      this.#lazy = options.lazyConnect === true;
      if (!this.#lazy) this.connect().catch(() => undefined);
    }

    override connect(callback?: Callback<void>): Promise<void> {
      // Already connecting or connected: ioredis's own refusal, without asking the provider.
      if (!this.#pending && ['connecting', 'connect', 'ready'].includes(this.status))
        return super.connect(callback);
      const promise = (this.#pending ??= this.#connectFresh().finally(() => {
        this.#pending = null;
      }));
      if (callback)
        promise.then(
          () => callback(null),
          (err: Error) => callback(err),
        );
      return promise;
    }

    async #connectFresh(): Promise<void> {
      const epoch = this.#epoch;
      let credential;
      try {
        credential = await this.#credentials.forConnect();
      } catch (err) {
        // Never had a credential: this connect fails; the next command (or connect()) tries again.
        if (this.listenerCount('error') > 0) this.emit('error', err);
        throw err;
      }
      if (epoch !== this.#epoch) {
        this.#abandon();
        throw new Error('Connection is closed.');
      }
      applyRedisCredential(this, credential);
      this.#credentials.track(this);
      await super.connect();
    }

    /** disconnect() ran while a reconnect waited for the provider: end the client as ioredis would have. */
    #abandon(): void {
      if (this.status === 'end' || this.status === 'wait') return;
      const internals = this as unknown as {
        setStatus(status: string): void;
        flushQueue(err: Error): void;
      };
      internals.setStatus('end');
      internals.flushQueue(new Error('Connection is closed.'));
    }

    override disconnect(reconnect = false): void {
      if (!reconnect) this.#epoch++;
      super.disconnect(reconnect);
      // A reconnect waiting on the provider has no socket for ioredis to close: end it here.
      if (!reconnect && this.#pending) this.#abandon();
    }

    override duplicate(override?: Partial<RedisOptions>): Redis {
      return new CredentialedRedis(this.#credentials, undefined, {
        ...this.options,
        ...override,
        lazyConnect: override?.lazyConnect ?? this.#lazy,
      });
    }
  }
  return CredentialedRedis;
}
