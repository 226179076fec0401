/**
 * `taskq ratelimits list|peek|reset` against real Postgres and Redis: limits published by a
 * worker's startup are listed, peeked from their own store without spending a token, and reset;
 * unknown names and reservation resets are refused with exit code 2.
 */
import { randomBytes } from 'node:crypto';

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import {
  ConcurrencyReservation,
  RateLimitRegistry,
  SlidingWindow,
  TokenBucket,
  syncRateLimitBuckets,
  syncSlots,
} from '../../src/ratelimit/index.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { TEST_REDIS_URL } from '../ratelimit/helpers.js';

let db: TestSchema;
let redis: Redis;
const run_ = randomBytes(4).toString('hex');
const pgBucket = new TokenBucket(`cli-pg-${run_}`, { capacity: 3, refillPerSecond: 0, backend: 'postgres' });
const redisBucket = new TokenBucket(`cli-redis-${run_}`, {
  capacity: 5,
  refillPerSecond: 1,
  backend: 'redis',
});
const window = new SlidingWindow(`cli-gcra-${run_}`, {
  limit: 10,
  window: '1m',
  backend: 'postgres',
  style: 'gcra',
});
const slots = new ConcurrencyReservation(`cli-slots-${run_}`, { slots: 2, lease: '1m' });

beforeAll(async () => {
  db = await migratedSchema('clirl');
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  // What a worker does at startup: register, publish, sync slots.
  const registry = new RateLimitRegistry();
  for (const p of [pgBucket, redisBucket, window, slots]) registry.register(p);
  const ctx = { driver: db.driver, schema: db.schema, redis };
  await syncRateLimitBuckets(registry, ctx);
  await syncSlots([slots], ctx);
  await pgBucket.acquire(ctx);
  await redisBucket.acquire(ctx, 2);
});
afterAll(async () => {
  await redisBucket.reset({ redis }).catch(() => undefined);
  redis.disconnect();
  await db.drop();
});

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: CliIo = {
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema, TASKQ_REDIS_URL: TEST_REDIS_URL },
  };
  const code = await runCli(argv, io);
  return { code, out: stdout.join('\n'), err: stderr.join('\n') };
}

describe('taskq ratelimits', () => {
  it('lists published rate limits and reservations', async () => {
    const r = await run('ratelimits', 'list');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`cli-pg-${run_}\\s+token_bucket\\s+postgres\\s+capacity 3 refill 0/s`));
    expect(r.out).toMatch(new RegExp(`cli-redis-${run_}\\s+token_bucket\\s+redis\\s+capacity 5 refill 1/s`));
    expect(r.out).toMatch(new RegExp(`cli-gcra-${run_}\\s+gcra\\s+postgres\\s+limit 10 per 60000 ms`));
    expect(r.out).toMatch(new RegExp(`cli-slots-${run_}\\s+reservation\\s+postgres\\s+held 0/2`));
  });

  it('peeks each from its own store without spending a token', async () => {
    const pg = await run('ratelimits', 'peek', `cli-pg-${run_}`);
    expect(pg).toMatchObject({ code: 0 });
    expect(pg.out).toContain('tokens 2.00/3 (store: postgres)');
    expect((await run('ratelimits', 'peek', `cli-pg-${run_}`)).out).toContain('tokens 2.00/3');
    const rd = await run('ratelimits', 'peek', `cli-redis-${run_}`);
    expect(rd.out).toMatch(/tokens [34]\.\d\d\/5 \(store: redis\)/);
    expect((await run('ratelimits', 'peek', `cli-slots-${run_}`)).out).toContain('held 0/2 slots');
  });

  it('resets a rate limit to full', async () => {
    const ctx = { driver: db.driver, schema: db.schema };
    await pgBucket.acquire(ctx);
    await pgBucket.acquire(ctx);
    expect((await run('ratelimits', 'peek', `cli-pg-${run_}`)).out).toContain('exhausted (fixed quota');
    expect(await run('ratelimits', 'reset', `cli-pg-${run_}`)).toMatchObject({ code: 0 });
    expect((await pgBucket.peek(ctx)).tokensRemaining).toBe(3);
  });

  it.each([
    [['ratelimits', 'peek', 'no-such-limit'], /no rate limit named "no-such-limit".*never published/],
    [['ratelimits', 'reset', 'no-such-limit'], /no rate limit named "no-such-limit"/],
    [['ratelimits', 'reset', `cli-slots-${run_}`], /is a reservation: slots are freed by their holders/],
  ])('refuses %j with exit code 2', async (argv, message) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });
});
