// Acquire latency (median, p99) and throughput of the rate-limit primitives per backend.
//
//   npx tsx bench/ratelimit-acquire.ts [--quick]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test; a fresh schema, dropped
// afterwards); Redis at BENCH_REDIS_HOST / BENCH_REDIS_PORT / BENCH_REDIS_DB (default
// 127.0.0.1:6379, db 11; keys under a unique prefix, deleted afterwards). Prints a markdown table.
//
// Latency: sequential acquisitions on one connection path (every one admitted: capacity is huge),
// each timed alone. Throughput: CONCURRENCY loops acquiring for DURATION against one shared
// limiter. A reservation "acquire" is acquire + release of one slot (the release is not timed in
// the latency column).
import { randomBytes, randomUUID } from 'node:crypto';

import { Redis } from 'ioredis';

import { PgDriver } from '../src/db/pg-driver.js';
import { Migrator } from '../src/migrations/migrator.js';
import {
  ConcurrencyReservation,
  SlidingWindow,
  TokenBucket,
  type RateLimitBackend,
  type RateLimitContext,
} from '../src/ratelimit/index.js';
import { SystemClock } from '../src/core/clock.js';

const quick = process.argv.includes('--quick');
const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const LATENCY_N = {
  memory: quick ? 5_000 : 50_000,
  redis: quick ? 500 : 3_000,
  postgres: quick ? 300 : 2_000,
};
const CONCURRENCY = 16;
const DURATION_MS = quick ? 700 : 2_000;

interface Row {
  primitive: string;
  backend: RateLimitBackend;
  medianMs: number;
  p99Ms: number;
  opsPerSec: number;
}

function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

async function measure(
  primitive: string,
  backend: RateLimitBackend,
  op: () => Promise<unknown>,
  timedPart: () => Promise<() => Promise<unknown>> = async () => {
    await op();
    return async () => undefined;
  },
): Promise<Row> {
  for (let i = 0; i < 50; i++) await op(); // warm-up: scripts loaded, statements planned, pool filled
  const samples: number[] = [];
  for (let i = 0; i < LATENCY_N[backend]; i++) {
    const t0 = performance.now();
    const after = await timedPart();
    samples.push(performance.now() - t0);
    await after();
  }
  samples.sort((a, b) => a - b);
  let ops = 0;
  const started = performance.now();
  const deadline = started + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        await op();
        ops++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  const row = {
    primitive,
    backend,
    medianMs: percentile(samples, 50),
    p99Ms: percentile(samples, 99),
    opsPerSec: (ops / elapsed) * 1000,
  };
  process.stderr.write(`${primitive} / ${backend}: median ${row.medianMs.toFixed(3)} ms\n`);
  return row;
}

async function main(): Promise<void> {
  const schema = `bench_rl_${randomBytes(4).toString('hex')}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: CONCURRENCY });
  const redis = new Redis({
    host: process.env.BENCH_REDIS_HOST ?? '127.0.0.1',
    port: Number(process.env.BENCH_REDIS_PORT ?? 6379),
    db: Number(process.env.BENCH_REDIS_DB ?? 11),
  });
  const prefix = `bench-rl:${randomBytes(4).toString('hex')}:`;
  const clock = new SystemClock();
  const ctx: RateLimitContext = { driver, schema, redis, redisKeyPrefix: prefix, clock };
  const rows: Row[] = [];
  try {
    await new Migrator(driver, { schema }).up();
    const huge = 1e12;
    for (const backend of ['memory', 'redis', 'postgres'] as const) {
      const tb = new TokenBucket(`tb-${backend}`, { capacity: huge, refillPerSecond: 1, backend });
      rows.push(await measure('TokenBucket', backend, () => tb.acquire(ctx)));
      const log = new SlidingWindow(`log-${backend}`, {
        limit: 1_000_000_000,
        window: '1s',
        style: 'log',
        backend,
      });
      rows.push(await measure('SlidingWindow log', backend, () => log.acquire(ctx)));
      const gcra = new SlidingWindow(`gcra-${backend}`, {
        limit: 1_000_000_000,
        window: '1s',
        style: 'gcra',
        backend,
      });
      rows.push(await measure('SlidingWindow gcra', backend, () => gcra.acquire(ctx)));
    }
    const worker = randomUUID();
    for (const backend of ['memory', 'postgres'] as const) {
      const res = new ConcurrencyReservation(`res-${backend}`, {
        slots: CONCURRENCY * 2,
        lease: '1m',
        ...(backend === 'memory' ? { clock } : {}),
      });
      await res.ensureSlots(ctx);
      const cycle = async (): Promise<void> => {
        const lease = await res.acquire(randomUUID(), worker, ctx);
        await res.release(lease, worker, ctx);
      };
      rows.push(
        await measure('ConcurrencyReservation', backend, cycle, async () => {
          const lease = await res.acquire(randomUUID(), worker, ctx);
          return () => res.release(lease, worker, ctx);
        }),
      );
    }
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
    await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await driver.close();
  }

  const fmt = (n: number): string => (n < 1 ? n.toFixed(3) : n.toFixed(2));
  const lines = [
    `Rate-limit acquire — latency over sequential calls, throughput with ${CONCURRENCY} concurrent callers for ${DURATION_MS} ms${quick ? ' (quick)' : ''}`,
    '',
    '| primitive | backend | median (ms) | p99 (ms) | throughput (acquires/s) |',
    '| --- | --- | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.primitive} | ${r.backend} | ${fmt(r.medianMs)} | ${fmt(r.p99Ms)} | ${Math.round(r.opsPerSec).toLocaleString('en-US')} |`,
    ),
  ];
  console.log(lines.join('\n'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
