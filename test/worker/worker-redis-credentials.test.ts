/**
 * A worker with `redisCredentialProvider`: its owned Redis clients (progress publisher, rate-limit
 * store) authenticate through the provider and are what `reloadCredentials()` reloads; a provider
 * that hangs makes the reload time out while the old connections keep serving; caller-owned
 * clients are never touched; bad configurations are refused at construction. A redis-server of the
 * test's own with an ACL user `u`; Postgres is the test database, in a schema of this file's own.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import type { RedisCredential, RedisCredentialProvider } from '../../src/credentials/credential-types.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { silentLogger } from '../../src/obs/logger.js';
import { RedisProgressPublisher } from '../../src/progress/redis-progress-publisher.js';
import { TokenBucket } from '../../src/ratelimit/index.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

class SwitchableProvider implements RedisCredentialProvider {
  calls = 0;
  hang = false;
  constructor(public credential: RedisCredential) {}
  getRedisCredential(): Promise<RedisCredential> {
    this.calls++;
    return this.hang ? new Promise(() => undefined) : Promise.resolve(this.credential);
  }
}

const limited = actor(
  {
    name: 'wrc_limited',
    queue: 'wrc',
    payload: z.object({ i: z.number().int() }),
    rateLimits: [
      new TokenBucket('wrc-bucket', { capacity: 10_000, refillPerSecond: 10_000, backend: 'redis' }),
    ],
  },
  async (p, ctx) => {
    await ctx.progress({ step: 'one', data: { i: p.i } });
    return { i: p.i };
  },
);

let server: RedisServer;
let admin: Redis;
let db: TestSchema;
let tq: TaskQ;

const settings = (extra: Record<string, unknown> = {}) => ({
  pgDsn: TEST_DSN,
  schema: db.schema,
  queues: ['wrc'],
  watchdogEnabled: false,
  redisUrl: server.url,
  ...extra,
});

async function namesOfU(): Promise<string[]> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .filter((l) => l.includes(' user=u '))
    .map((l) => / name=(\S*) /.exec(l)![1]!);
}

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  await admin.call('ACL', 'SETUSER', 'u', 'on', '>pw-1', '~*', '&*', '+@all');
  db = await migratedSchema('wredcred');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});

afterAll(async () => {
  await tq?.close();
  admin?.disconnect();
  await db?.drop();
  await server?.destroy();
});

describe('refused at construction', () => {
  const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });

  it('a provider without settings.redisUrl', () => {
    expect(
      () =>
        new Worker({
          actors: [limited],
          settings: settings({ redisUrl: null }),
          logger: silentLogger,
          redisCredentialProvider: provider,
        }),
    ).toThrow(/worker.redisCredentialProvider.*needs settings.redisUrl \(TASKQ_REDIS_URL\)/);
  });

  it('a redisUrl that carries credentials, without echoing the password', () => {
    let err: unknown;
    try {
      new Worker({
        actors: [limited],
        settings: settings({ redisUrl: 'redis://u:hunter2@127.0.0.1:1' }),
        logger: silentLogger,
        redisCredentialProvider: provider,
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toMatch(/settings.redisUrl is invalid: must carry no credentials/);
    expect((err as Error).message).not.toContain('hunter2');
  });

  it('something that is not a provider', () => {
    expect(
      () =>
        new Worker({
          actors: [limited],
          settings: settings(),
          logger: silentLogger,
          redisCredentialProvider: { getRedisCredential: 'no' } as unknown as RedisCredentialProvider,
        }),
    ).toThrow(/worker.redisCredentialProvider.*getRedisCredential\(\) method/);
  });
});

describe('a running worker', () => {
  it('authenticates its owned clients as the provider’s user; a hung provider times the reload out and the old connections serve on', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const worker = new Worker({
      actors: [limited],
      settings: settings({ reloadFactoryTimeout: '300ms' }),
      logger: silentLogger,
      redisCredentialProvider: provider,
    });
    await worker.start();
    try {
      const first = await Promise.all([0, 1, 2].map((i) => tq.enqueue(limited, { i })));
      for (const h of first) await h.wait({ timeout: 20_000 });
      await waitFor(
        async () => {
          const names = await namesOfU();
          return names.includes('taskq-ratelimit') && names.includes('taskq-progress-publisher');
        },
        10_000,
        'both owned clients connected as u',
      );

      const ok = await worker.reloadCredentials();
      expect(ok.map((o) => [o.resource, o.ok]).sort()).toEqual([
        ['redis:progress', true],
        ['redis:ratelimit', true],
      ]);

      provider.hang = true;
      const hung = await worker.reloadCredentials();
      expect(hung.map((o) => [o.resource, o.ok, o.timedOut]).sort()).toEqual([
        ['redis:progress', false, true],
        ['redis:ratelimit', false, true],
      ]);
      // The old connections keep serving: jobs take the Redis bucket and publish progress.
      const evalsBefore = await scriptCalls();
      const after = await Promise.all([3, 4, 5].map((i) => tq.enqueue(limited, { i })));
      for (const h of after) await h.wait({ timeout: 20_000 });
      expect(await scriptCalls()).toBeGreaterThan(evalsBefore);
      expect(await namesOfU()).toEqual(
        expect.arrayContaining(['taskq-ratelimit', 'taskq-progress-publisher']),
      );
    } finally {
      provider.hang = false;
      await worker.stop();
    }
  });

  it('never touches caller-owned clients: nothing to reload', async () => {
    const provider = new SwitchableProvider({ username: 'u', password: 'pw-1' });
    const mine = new Redis(server.url, { username: 'u', password: 'pw-1', connectionName: 'mine' });
    const publisher = new RedisProgressPublisher({ redis: mine, schema: db.schema, logger: silentLogger });
    const worker = new Worker({
      actors: [limited],
      settings: settings(),
      logger: silentLogger,
      redis: mine,
      progressPublisher: publisher,
      redisCredentialProvider: provider,
    });
    await worker.start();
    try {
      const h = await tq.enqueue(limited, { i: 9 });
      await h.wait({ timeout: 20_000 });
      expect(await worker.reloadCredentials()).toEqual([]);
      expect(provider.calls).toBe(0);
      expect(mine.status).toBe('ready');
    } finally {
      await worker.stop();
      await publisher.close();
      mine.disconnect();
    }
  });
});

/** EVALSHA calls the server has answered (INFO commandstats). */
async function scriptCalls(): Promise<number> {
  const info = (await admin.info('commandstats')) as string;
  const m = /cmdstat_evalsha:calls=(\d+)/.exec(info);
  return m ? Number(m[1]) : 0;
}
