/**
 * `taskq ui serve` with a Redis credential provider: the Redis client it builds from
 * TASKQ_REDIS_URL authenticates as the user the provider returns (a redis-server of the test's own
 * with an ACL user; the fixture provider returns user `u`, password `p`), and a provider without
 * TASKQ_REDIS_URL is refused before anything connects.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cleanEnv, runTsx } from '../fixtures/cli/run-cli-process.js';
import { startUiServe } from '../fixtures/cli/ui-serve-process.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const PROVIDER = './test/fixtures/credentials/providers.mjs:redisInstance';

let redis: RedisServer;
let admin: Redis;
let db: TestSchema;

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  await admin.call('ACL', 'SETUSER', 'u', 'on', '>p', '~*', '&*', '+@all');
  // Only `u` may connect: the default user refuses, so a client without the provider fails.
  await admin.call('ACL', 'SETUSER', 'default', 'off');
  admin.disconnect();
  admin = new Redis(redis.url, { username: 'u', password: 'p', maxRetriesPerRequest: 1 });
  db = await migratedSchema('ui_cli_redis');
});
afterAll(async () => {
  admin?.disconnect();
  await db?.drop();
  await redis?.destroy();
});

describe('taskq ui serve with TASKQ_REDIS_CREDENTIAL_PROVIDER', () => {
  it("connects to Redis as the provider's user", async () => {
    const server = await startUiServe(db.schema, {
      TASKQ_ENVIRONMENT: 'dev',
      TASKQ_REDIS_URL: redis.url,
      TASKQ_REDIS_CREDENTIAL_PROVIDER: PROVIDER,
    });
    try {
      await waitFor(
        async () => {
          const clients = (await admin.call('CLIENT', 'LIST')) as string;
          return clients.split('\n').some((c) => c.includes('name=taskq-admin-ui') && c.includes(' user=u '));
        },
        15_000,
        'the admin UI connection as user u',
      );
      expect(server.output()).not.toContain('unreachable');
      expect((await fetch(`http://127.0.0.1:${server.port}/rate-limits`)).status).toBe(200);
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });

  it('refuses a provider without TASKQ_REDIS_URL (exit 2), and a bad reference (exit 1)', async () => {
    const args = ['ui', 'serve', '--dsn', TEST_DSN, '--schema', db.schema, '--port', '0'];
    const noUrl = await runTsx('src/cli/bin.ts', [...args, '--redis-credential-provider', PROVIDER], {
      env: cleanEnv({ TASKQ_ENVIRONMENT: 'dev' }),
    });
    expect(noUrl.code, noUrl.stderr).toBe(2);
    expect(noUrl.stderr).toContain('needs TASKQ_REDIS_URL');
    const bad = await runTsx('src/cli/bin.ts', args, {
      env: cleanEnv({
        TASKQ_ENVIRONMENT: 'dev',
        TASKQ_REDIS_URL: redis.url,
        TASKQ_REDIS_CREDENTIAL_PROVIDER: './test/fixtures/credentials/providers.mjs:nothingHere',
      }),
    });
    expect(bad.code, bad.stderr).toBe(1);
    expect(bad.stderr).toContain('TASKQ_REDIS_CREDENTIAL_PROVIDER');
  });
});
