/**
 * Redis is stopped while a worker is working off a backlog behind a Redis token bucket. With the Postgres fallback
 * (the default) acquisitions move to Postgres, logged with both store names, jobs keep flowing and
 * the limit still holds. With the fallback disabled the acquisitions fail with
 * `RateLimitStoreUnavailable`, recorded on the attempt; the jobs wait (no attempt used) and run once
 * Redis is back. The Redis is the test's own (redis-server.ts), never the machine's.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Logger } from '../../src/obs/logger.js';
import { TokenBucket } from '../../src/ratelimit/index.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const QUEUE = 'rl_redis_down';
const BUCKET = { capacity: 3, refillPerSecond: 3 };

let redis: RedisServer;
let db: TestSchema;
let tq: TaskQ;
const warnings: { msg: string | undefined; fields: Record<string, unknown> }[] = [];

function recordingLogger(): Logger {
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (obj: object, msg?: string) => {
      warnings.push({ msg, fields: obj as Record<string, unknown> });
    },
    error: (obj: object, msg?: string) => {
      warnings.push({ msg, fields: obj as Record<string, unknown> });
    },
    child: () => logger,
  };
  return logger;
}

const settings = (fallback: boolean) => ({
  pgDsn: TEST_DSN,
  schema: db.schema,
  queues: [QUEUE],
  maxConcurrency: 4,
  redisUrl: redis.url,
  rateLimitPgFallbackEnabled: fallback,
  watchdogEnabled: false,
});

/** Start times (ms) of the runs of one actor, in order. */
const starts: Record<string, number[]> = {};
function limitedActor(name: string, bucket: string) {
  return actor(
    {
      name,
      queue: QUEUE,
      rateLimits: [new TokenBucket(bucket, { ...BUCKET, backend: 'redis' })],
    },
    async (_p, ctx) => {
      (starts[name] ??= []).push(Date.now());
      return ctx.attempt;
    },
  );
}

/** At most capacity + refill × T admissions in any stretch of T seconds. */
function expectWithinBucket(times: number[]): void {
  for (let i = 0; i < times.length; i++)
    for (let j = i; j < times.length; j++) {
      const t = (times[j]! - times[i]! + 50) / 1000;
      expect(j - i + 1).toBeLessThanOrEqual(BUCKET.capacity + BUCKET.refillPerSecond * t);
    }
}

beforeAll(async () => {
  redis = await startRedisServer();
  db = await migratedSchema('rlredisdown');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});

afterAll(async () => {
  await tq?.close();
  await db?.drop();
  await redis?.destroy();
});

describe('Redis stopped under a Redis-backed rate limit', () => {
  it('falls back to Postgres (logged), keeps jobs flowing and still holds the limit', async () => {
    const limited = limitedActor('rl_fallback', `fallback-${randomBytes(4).toString('hex')}`);
    const worker = new Worker({ actors: [limited], settings: settings(true), logger: recordingLogger() });
    await worker.start();
    try {
      // One backlog that the bucket spreads over ~5 s; Redis stops while it is being worked off.
      const all = await Promise.all(Array.from({ length: 18 }, () => tq.enqueue(limited, {})));
      await waitFor(async () => (starts.rl_fallback?.length ?? 0) >= 5, 20_000, 'jobs flowing on Redis');
      expect(warnings.some((w) => w.msg === 'ratelimit-redis-fallback')).toBe(false);

      await redis.stop();
      const outageStart = Date.now();
      // Every job runs, as attempt 1: denials (and a store error mid-acquire) used no attempt.
      for (const h of all) expect(await h.wait({ timeout: '40s' })).toBe(1);
      expect(starts.rl_fallback!.filter((t) => t >= outageStart).length).toBeGreaterThan(3);

      const fallback = warnings.find((w) => w.msg === 'ratelimit-redis-fallback');
      expect(fallback?.fields).toMatchObject({ backend: 'redis', fallback: 'postgres' });
      // The limit held on the fallback store (leaving out a job Redis admitted just before the stop
      // and that started a moment after it).
      expectWithinBucket(starts.rl_fallback!.filter((t) => t >= outageStart + 100));
      // And it was the Postgres bucket that paid.
      const { rows } = await db.pool.query(
        `SELECT bucket_name FROM "${db.schema}".rate_limit_buckets WHERE bucket_name LIKE 'fallback-%'`,
      );
      expect(rows).toHaveLength(1);
    } finally {
      await worker.stop();
      if (!(await redis.isUp())) await redis.start();
    }
  });

  it('with the fallback disabled, surfaces RateLimitStoreUnavailable on the attempt and loses nothing', async () => {
    const limited = limitedActor('rl_no_fallback', `nofallback-${randomBytes(4).toString('hex')}`);
    const worker = new Worker({ actors: [limited], settings: settings(false), logger: recordingLogger() });
    await worker.start();
    try {
      await redis.stop();
      const h = await tq.enqueue(limited, {});
      await waitFor(async () => (await h.attempts()).length > 0, 15_000, 'a refused attempt');
      const [first] = await h.attempts();
      expect(first).toMatchObject({ outcome: 'retry_after', errorClass: 'RateLimitStoreUnavailable' });
      expect(first!.errorMessage).toMatch(/fallback disabled/);
      const row = (await tq.getRow(h.jobId))!;
      expect(row.status === 'scheduled' || row.status === 'pending').toBe(true);
      expect(row.attempt).toBe(0);
      expect(warnings.some((w) => w.msg === 'ratelimit-acquire-failed')).toBe(true);

      await redis.start();
      // The job runs once Redis is back (after the default 5 s back-off), as its first attempt.
      expect(await h.wait({ timeout: '30s' })).toBe(1);
    } finally {
      await worker.stop();
    }
  });
});
