import { randomBytes } from 'node:crypto';

import { Redis } from 'ioredis';

/** The test Redis (DESIGN.md §7). */
export const TEST_REDIS_URL = process.env.TASKQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A client on the test Redis. */
export function testRedis(): Redis {
  return new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
}

/** A Redis client on a port nothing listens on: every command fails at once. */
export function deadRedis(): Redis {
  const r = new Redis('redis://127.0.0.1:1', {
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  r.on('error', () => undefined);
  return r;
}

/** A key prefix of one test. */
export function uniquePrefix(): string {
  return `taskq-test:${randomBytes(5).toString('hex')}:`;
}

/** Deletes every key under `prefix`. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}
