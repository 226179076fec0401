/**
 * Redis clients built with a credential provider, against a redis-server of the test's own with an
 * ACL user `u` (the machine's Redis is never touched): the URL refusals, the plaintext warning, a
 * reconnect that authenticates with the latest credential, `reload()` re-authenticating the live
 * connection, a refused credential, and a provider that hangs.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { RedisCredential, RedisCredentialProvider } from '../../src/credentials/credential-types.js';
import { makeRedisClientFactory } from '../../src/credentials/make-redis-client-factory.js';
import { ReloadableRedisCredentials } from '../../src/credentials/reloadable-redis-credentials.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { RedisCredentialRejected } from '../../src/errors/redis-credential-errors.js';
import type { Logger } from '../../src/obs/logger.js';
import { closeOwnedRedis, createOwnedRedis } from '../../src/progress/redis-progress-publisher.js';
import { aclPasswordWorks, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

let server: RedisServer;
let admin: Redis;
const opened: Redis[] = [];

/** A provider whose answer the test switches, counting its calls; `hang` makes it never answer. */
class SwitchableProvider implements RedisCredentialProvider {
  calls = 0;
  hang = false;
  fail: Error | null = null;
  constructor(public credential: RedisCredential) {}
  getRedisCredential(): Promise<RedisCredential> {
    this.calls++;
    if (this.hang) return new Promise(() => undefined);
    if (this.fail) return Promise.reject(this.fail);
    return Promise.resolve(this.credential);
  }
}

interface Logged {
  msg: string | undefined;
  fields: Record<string, unknown>;
}
function recordingLogger(into: Logged[]): Logger {
  const push = (obj: object, msg?: string): void => {
    into.push({ msg, fields: obj as Record<string, unknown> });
  };
  const logger: Logger = { debug: () => undefined, info: push, warn: push, error: push, child: () => logger };
  return logger;
}

/** Sets user `u`'s only password to `password`. */
async function setPassword(password: string): Promise<void> {
  await admin.call('ACL', 'SETUSER', 'u', 'on', 'resetpass', `>${password}`, '~*', '&*', '+@all');
}

/** Connections of user `u` with a given name, from CLIENT LIST. */
async function connectionsOf(name: string): Promise<number> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((l) => l.includes(` name=${name} `) && l.includes(' user=u ')).length;
}

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  await setPassword('pw-1');
});

afterEach(async () => {
  for (const r of opened.splice(0)) await closeOwnedRedis(r);
  await setPassword('pw-1');
});

afterAll(async () => {
  admin?.disconnect();
  await server?.destroy();
});

function owned(
  provider: RedisCredentialProvider,
  name: string,
  logger?: Logger,
): {
  redis: Redis;
  credentials: ReloadableRedisCredentials;
} {
  const credentials = new ReloadableRedisCredentials({
    name: `redis:${name}`,
    provider,
    logger: logger ?? null,
  });
  const redis = createOwnedRedis(server.url, 'redisUrl', {
    connectionName: name,
    lazyConnect: true,
    credentials,
  });
  redis.on('error', () => undefined);
  opened.push(redis);
  return { redis, credentials };
}

describe('refusals at the boundary', () => {
  const provider = new SwitchableProvider({ username: 'u', password: 'x' });

  it('refuses a URL that carries credentials, without echoing the password', () => {
    for (const url of [
      'redis://u:secret@127.0.0.1:6379',
      'redis://:secret@127.0.0.1:6379',
      'redis://127.0.0.1:6379?password=secret',
    ]) {
      let err: unknown;
      try {
        makeRedisClientFactory(url, provider);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe('makeRedisClientFactory.url');
      expect((err as Error).message).toMatch(
        /must carry no credentials when a Redis credential provider is given/,
      );
      expect((err as Error).message).not.toContain('secret');
    }
    const credentials = new ReloadableRedisCredentials({ name: 'redis:t', provider });
    expect(() =>
      createOwnedRedis('redis://u:secret@127.0.0.1:6379', 'TASKQ_REDIS_URL', {
        connectionName: 't',
        credentials,
      }),
    ).toThrow(/TASKQ_REDIS_URL is invalid: must carry no credentials/);
  });

  it('refuses a static password in the ioredis options, a bad provider, a bad scheme', () => {
    expect(() => makeRedisClientFactory('rediss://h:6380', provider, { password: 'p' })).toThrow(
      /ioredisOptions.password.*the credential provider supplies/,
    );
    expect(() => makeRedisClientFactory('rediss://h:6380', {} as RedisCredentialProvider)).toThrow(
      /makeRedisClientFactory.provider.*getRedisCredential\(\) method/,
    );
    expect(() => makeRedisClientFactory('http://h:6380', provider)).toThrow(/redis:\/\/ or rediss:\/\//);
  });

  it('a factory without a URL throws when called: Redis is not configured', async () => {
    const factory = makeRedisClientFactory(null, provider);
    await expect(factory()).rejects.toThrow(/Redis is not configured: set TASKQ_REDIS_URL/);
  });

  it('refuses a credential without a password, naming the rule but not the value', async () => {
    const bad = new SwitchableProvider({ username: 'u', password: '' });
    const { credentials } = owned(bad, 'bad');
    const err = await credentials.reload(new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toMatch(
      /must resolve to \{ username\?: string \| null, password: string \}/,
    );
  });
});

describe('plaintext warning', () => {
  it('warns once per logger and host for redis://, never for rediss://', async () => {
    const logs: Logged[] = [];
    const logger = recordingLogger(logs);
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const plain = makeRedisClientFactory(server.url, provider, { lazyConnect: true }, { logger });
    for (let i = 0; i < 3; i++) opened.push(await plain());
    const tls = makeRedisClientFactory('rediss://127.0.0.1:1', provider, { lazyConnect: true }, { logger });
    opened.push(await tls());
    const warnings = logs.filter((l) => l.msg === 'redis-credential-over-plaintext');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.fields).toMatchObject({ scheme: 'redis', host: `127.0.0.1:${server.port}` });
  });
});

describe('connections authenticate with the provider', () => {
  it('connects as the provider’s user, and a duplicate does too', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const factory = makeRedisClientFactory(server.url, provider, { connectionName: 'fac' });
    const redis = await factory();
    opened.push(redis);
    redis.on('error', () => undefined);
    await waitFor(() => redis.status === 'ready', 10_000, 'the factory client');
    expect(await redis.call('ACL', 'WHOAMI')).toBe('u');
    const dup = redis.duplicate({ connectionName: 'fac-dup' });
    opened.push(dup);
    await waitFor(() => dup.status === 'ready', 10_000, 'the duplicate');
    expect(await dup.call('ACL', 'WHOAMI')).toBe('u');
    expect(provider.calls).toBe(2);
  });

  it('a reconnect after rotation authenticates with the latest credential; the old password is dead', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis } = owned(provider, 'rot');
    await redis.connect();
    expect(await redis.call('ACL', 'WHOAMI')).toBe('u');

    await setPassword('pw-2');
    provider.credential = { username: 'u', password: 'pw-2' };
    // Redis keeps connections that authenticated before the change: kill them.
    await admin.call('CLIENT', 'KILL', 'USER', 'u');
    await waitFor(
      async () => redis.status === 'ready' && (await connectionsOf('rot')) === 1,
      10_000,
      'the reconnect',
    );
    expect(await redis.ping()).toBe('PONG');
    expect(provider.calls).toBe(2);
    expect(await aclPasswordWorks(server.url, 'u', 'pw-1')).toBe(false);
    expect(await aclPasswordWorks(server.url, 'u', 'pw-2')).toBe(true);
  });

  it('a subscriber duplicate re-subscribes after a reconnect with the new password', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis } = owned(provider, 'pub');
    await redis.connect();
    const sub = redis.duplicate({ connectionName: 'sub', lazyConnect: false });
    sub.on('error', () => undefined);
    opened.push(sub);
    const got: string[] = [];
    sub.on('message', (_c: string, m: string) => got.push(m));
    await waitFor(() => sub.status === 'ready', 10_000, 'the subscriber');
    await sub.subscribe('ch');
    await setPassword('pw-2');
    provider.credential = { username: 'u', password: 'pw-2' };
    await admin.call('CLIENT', 'KILL', 'USER', 'u');
    // ioredis re-subscribes on its own (autoResubscribe) once it has authenticated again.
    await waitFor(
      async () => {
        await redis.publish('ch', 'after').catch(() => 0);
        return got.includes('after');
      },
      10_000,
      'a message after the reconnect',
    );
  });

  it('when the provider fails at a reconnect, the last credential is used and the failure logged', async () => {
    const logs: Logged[] = [];
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis } = owned(provider, 'fallback', recordingLogger(logs));
    await redis.connect();
    provider.fail = new Error('vault is down');
    await admin.call('CLIENT', 'KILL', 'USER', 'u');
    await waitFor(
      async () => redis.status === 'ready' && (await connectionsOf('fallback')) === 1,
      10_000,
      'the reconnect',
    );
    expect(logs.find((l) => l.msg === 'redis-credential-fetch-failed')?.fields).toMatchObject({
      resource: 'redis:fallback',
      err: 'vault is down',
      fallback: 'last-credential',
    });
  });

  it('a first connect without any credential fails with the provider’s error', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    provider.fail = new Error('no token yet');
    const { redis } = owned(provider, 'nocred');
    await expect(redis.connect()).rejects.toThrow('no token yet');
    provider.fail = null;
    await redis.connect();
    expect(await redis.ping()).toBe('PONG');
  });

  it('disconnect() while a reconnect waits for the provider ends the client for good', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis } = owned(provider, 'gone');
    await redis.connect();
    provider.hang = true;
    const callsBefore = provider.calls;
    await admin.call('CLIENT', 'KILL', 'USER', 'u');
    await waitFor(() => provider.calls > callsBefore, 10_000, 'the reconnect to ask the provider');
    redis.disconnect();
    await waitFor(() => redis.status === 'end', 10_000, 'the client to end');
    expect(await connectionsOf('gone')).toBe(0);
  });
});

describe('reload()', () => {
  it('re-authenticates the live connection with the fresh credential, without reconnecting', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis, credentials } = owned(provider, 'reload');
    await redis.connect();
    const idBefore = await redis.client('ID');
    await admin.call('ACL', 'SETUSER', 'u2', 'on', '>pw-u2', '~*', '&*', '+@all');
    provider.credential = { username: 'u2', password: 'pw-u2' };
    await credentials.reload(AbortSignal.timeout(5000));
    expect(await redis.call('ACL', 'WHOAMI')).toBe('u2');
    expect(await redis.client('ID')).toBe(idBefore);
    expect(redis.options.username).toBe('u2');
    await admin.call('ACL', 'DELUSER', 'u2');
  });

  it('a refused credential rejects with RedisCredentialRejected; the connection keeps its authentication', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis, credentials } = owned(provider, 'refused');
    await redis.connect();
    provider.credential = { username: 'u', password: 'wrong' };
    const err = await credentials.reload(AbortSignal.timeout(5000)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisCredentialRejected);
    expect(err).toMatchObject({
      code: 'TASKQ_REDIS_CREDENTIAL_REJECTED',
      resource: 'redis:refused',
      username: 'u',
    });
    expect((err as Error).message).not.toContain('wrong');
    expect(await redis.call('ACL', 'WHOAMI')).toBe('u');
    expect(redis.options.password).toBe('pw-1');
  });

  it('a hung provider: reload rejects when the signal aborts, the client keeps serving', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { redis, credentials } = owned(provider, 'hung');
    await redis.connect();
    provider.hang = true;
    const controller = new AbortController();
    const reload = credentials.reload(controller.signal);
    await waitFor(() => provider.calls === 2, 5000, 'the reload to ask the provider');
    controller.abort(new Error('reload timed out'));
    await expect(reload).rejects.toThrow('reload timed out');
    expect(await redis.ping()).toBe('PONG');
    expect(redis.options.password).toBe('pw-1');
  });

  it('with no client connected yet, reload only fetches', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const { credentials } = owned(provider, 'idle');
    await credentials.reload(AbortSignal.timeout(5000));
    expect(credentials.clientCount).toBe(0);
  });
});
