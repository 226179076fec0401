/**
 * `TASKQ_REDIS_CREDENTIAL_PROVIDER` end to end: `runWorker` imports the provider the variable names
 * and the worker's own Redis clients authenticate as the ACL user it returns (a redis-server of the
 * test's own; the fixture provider returns user `u`, password `p`).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { silentLogger } from '../../src/obs/logger.js';
import { runWorker } from '../../src/worker/run-worker.js';
import type { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

let server: RedisServer;
let admin: Redis;
let db: TestSchema;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  await admin.call('ACL', 'SETUSER', 'u', 'on', '>p', '~*', '&*', '+@all');
  db = await migratedSchema('redisprov');
});
afterAll(async () => {
  admin?.disconnect();
  await db?.drop();
  await server?.destroy();
});

const noop = actor({ name: 'redis_prov_noop', payload: z.object({}) }, async () => undefined);

describe('TASKQ_REDIS_CREDENTIAL_PROVIDER', () => {
  it('runWorker imports it, and the worker connects to Redis as the user it returns', async () => {
    let worker: Worker | null = null;
    const running = runWorker({
      actors: [noop],
      logger: silentLogger,
      handleSignals: false,
      env: {
        TASKQ_PG_DSN: TEST_DSN,
        TASKQ_SCHEMA_NAME: db.schema,
        TASKQ_REDIS_URL: server.url,
        TASKQ_REDIS_CREDENTIAL_PROVIDER: './test/fixtures/credentials/providers.mjs:redisInstance',
        TASKQ_WATCHDOG_ENABLED: 'false',
        TASKQ_HEALTH_ENABLED: 'false',
      },
      onStarted: (w) => (worker = w),
    });
    await waitFor(() => worker !== null || false, 20_000, 'the worker to start');
    try {
      await waitFor(
        async () => ((await admin.call('CLIENT', 'LIST')) as string).includes(' user=u '),
        10_000,
        'a Redis connection as user u',
      );
    } finally {
      await (worker as Worker | null)?.stop();
    }
    expect(await running).toBe(0);
  });
});
