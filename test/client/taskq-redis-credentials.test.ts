/**
 * `TaskQ.open({ redisUrl, redisCredentialProvider })`: the client's Redis (and its progress
 * subscriber) authenticate through the provider, `reloadCredentials()` reloads them, a reconnect
 * after a rotation uses the new password; the refusals. A redis-server of the test's own with an
 * ACL user `u`; Postgres is the test database, in a schema of this file's own.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import type { RedisCredential, RedisCredentialProvider } from '../../src/credentials/credential-types.js';
import { TaskQStateError } from '../../src/errors/client-errors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const idle = actor({ name: 'trc_idle', queue: 'trc-none', payload: z.object({}) }, async () => undefined);

let server: RedisServer;
let admin: Redis;
let db: TestSchema;

async function subscriberIds(): Promise<string[]> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .filter((l) => l.includes(' name=taskq-progress-subscriber ') && l.includes(' user=u '))
    .map((l) => /^id=(\d+)/.exec(l)![1]!);
}

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  await admin.call('ACL', 'SETUSER', 'u', 'on', '>pw-1', '~*', '&*', '+@all');
  db = await migratedSchema('tqredcred');
});

afterAll(async () => {
  admin?.disconnect();
  await db?.drop();
  await server?.destroy();
});

describe('TaskQ.open with redisCredentialProvider', () => {
  it('refuses a provider without redisUrl, and reloadCredentials() without one', async () => {
    const provider: RedisCredentialProvider = {
      getRedisCredential: async () => ({ username: 'u', password: 'x' }),
    };
    await expect(
      TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisCredentialProvider: provider }),
    ).rejects.toThrow(/TaskQ.open.redisCredentialProvider.*give it with redisUrl/);
    await expect(
      TaskQ.open({
        dsn: TEST_DSN,
        schema: db.schema,
        redisUrl: 'redis://u:pw@127.0.0.1:1',
        redisCredentialProvider: provider,
      }),
    ).rejects.toThrow(/TaskQ.open.redisUrl is invalid: must carry no credentials/);
    const plain = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisUrl: server.url });
    try {
      await expect(plain.reloadCredentials()).rejects.toBeInstanceOf(TaskQStateError);
    } finally {
      await plain.close();
    }
  });

  it('the progress subscriber connects as the provider’s user, reloads, and reconnects with a rotated password', async () => {
    let credential: RedisCredential = { username: 'u', password: 'pw-1' };
    let calls = 0;
    const provider: RedisCredentialProvider = {
      getRedisCredential: async () => {
        calls++;
        return credential;
      },
    };
    const tq = await TaskQ.open({
      dsn: TEST_DSN,
      schema: db.schema,
      redisUrl: server.url,
      redisCredentialProvider: provider,
    });
    try {
      const h = await tq.enqueue(idle, {});
      const stream = h.progressStream();
      const next = stream.next();
      await waitFor(async () => (await subscriberIds()).length === 1, 10_000, 'the subscriber as u');
      const before = await subscriberIds();

      await tq.reloadCredentials();
      expect(calls).toBeGreaterThanOrEqual(2);

      await admin.call('ACL', 'SETUSER', 'u', 'resetpass', '>pw-2');
      credential = { username: 'u', password: 'pw-2' };
      await admin.call('CLIENT', 'KILL', 'USER', 'u');
      await waitFor(
        async () => {
          const ids = await subscriberIds();
          return ids.length === 1 && ids[0] !== before[0];
        },
        10_000,
        'the subscriber back as u with the new password',
      );
      await tq.cancel(h.jobId);
      await stream.return?.(undefined);
      await next.catch(() => undefined);
    } finally {
      await tq.close();
    }
  });
});
