import { randomBytes } from 'node:crypto';

import { Redis } from 'ioredis';

import { waitFor } from '../helpers/wait.js';

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

/** Now on the Redis server's clock (`TIME`), in epoch milliseconds: the clock its scripts decide on. */
export async function redisClockMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

/**
 * Now on the Postgres server's clock (`clock_timestamp()`), in epoch milliseconds: the clock its
 * rate-limit statements decide on.
 */
export async function postgresClockMs(db: {
  query<R>(text: string): Promise<{ rows: R[] }>;
}): Promise<number> {
  const { rows } = await db.query<{ ms: number }>(
    'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms',
  );
  return rows[0]!.ms;
}

/**
 * `elapse(ms)` for a store that decides on its own clock, read by `now`: waits until that clock reads
 * `ms` past its reading at the call. Postgres and Redis cannot be given a fake clock, so real time
 * has to pass; waiting on their reading rather than on a timer in this process makes the interval
 * the one the store sees.
 */
export function elapseOnStoreClock(now: () => Promise<number>): (ms: number) => Promise<void> {
  return async (ms) => {
    const from = await now();
    await waitFor(
      async () => (await now()) - from >= ms,
      ms + 10_000,
      `${ms} ms to pass on the store's clock`,
    );
  };
}
