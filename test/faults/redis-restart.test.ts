/**
 * Redis is shut down and started again under live progress streams. The streams fall back to
 * Postgres (polling and LISTEN) while it is gone, and go back to pub/sub once it returns. The Redis
 * is the test's own (redis-server.ts), never the machine's; Postgres is the test database, in a
 * schema of the file's own.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { silentLogger } from '../../src/obs/logger.js';
import { progressJobChannel } from '../../src/progress/progress-channels.js';
import type { JobEvent, ProgressEvent } from '../../src/progress/progress-event.js';
import { RedisProgressPublisher } from '../../src/progress/redis-progress-publisher.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

let stopTicking = false;
const ticker = actor(
  { name: 'ticker', queue: 'ticks', payload: z.object({ everyMs: z.number().int() }) },
  async (p, ctx) => {
    let i = 0;
    while (!stopTicking || i < 5) {
      i++;
      await ctx.progress({ step: `tick-${i}`, data: { i } });
      await new Promise((r) => setTimeout(r, p.everyMs));
    }
    return { ticks: i };
  },
);

let redis: RedisServer;
let db: TestSchema;
let tq: TaskQ;
let publisher: RedisProgressPublisher;
let worker: Worker;
let admin: Redis;

async function numsub(channel: string): Promise<number> {
  try {
    const reply = (await admin.pubsub('NUMSUB', channel)) as [string, number];
    return Number(reply[1]);
  } catch {
    return -1;
  }
}

beforeAll(async () => {
  redis = await startRedisServer();
  db = await migratedSchema('redisrestart');
  admin = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redisUrl: redis.url });
  publisher = new RedisProgressPublisher({ redisUrl: redis.url, schema: db.schema, logger: silentLogger });
  worker = new Worker({
    actors: [ticker],
    settings: {
      pgDsn: TEST_DSN,
      schema: db.schema,
      queues: ['ticks'],
      maxConcurrency: 2,
      heartbeatInterval: '1s',
      lockLease: '30s',
      maxHeartbeatFailures: 20,
      cancellationGracePeriod: '2s',
      cleanupGracePeriod: '2s',
      progressCoalesceInterval: '200ms',
      watchdogEnabled: false,
    },
    logger: silentLogger,
    progressPublisher: publisher,
  });
  await worker.start();
});

afterAll(async () => {
  stopTicking = true;
  await worker?.stop();
  await publisher?.close();
  await tq?.close();
  admin?.disconnect();
  await db?.drop();
  await redis?.destroy();
});

describe('Redis restart under live streams', () => {
  it('streams keep delivering through Postgres while Redis is down, then resume on pub/sub', async () => {
    const h = await tq.enqueue(ticker, { everyMs: 50 });
    const channel = progressJobChannel(db.schema, h.jobId);
    const progress: { event: ProgressEvent; at: number }[] = [];
    const snapshots: { event: JobEvent; at: number }[] = [];
    const byProgressStream = (async () => {
      for await (const event of h.progressStream()) progress.push({ event, at: performance.now() });
    })();
    const byStream = (async () => {
      for await (const event of tq.stream(h.jobId)) snapshots.push({ event, at: performance.now() });
    })();
    const settled = Promise.allSettled([byProgressStream, byStream]);

    await waitFor(async () => (await numsub(channel)) === 1, 10_000, 'the subscription');
    await waitFor(() => progress.length >= 10 && snapshots.length >= 10, 10_000, 'events through Redis');

    await redis.stop();
    const downAt = performance.now();
    const failedBefore = publisher.stats.failed;
    // Events keep coming: from Postgres reads (progress NOTIFY, polling).
    await waitFor(
      () =>
        progress.filter((p) => p.at > downAt).length >= 3 &&
        snapshots.filter((s) => s.at > downAt).length >= 3,
      20_000,
      'events while Redis is down',
    );
    expect(publisher.stats.failed).toBeGreaterThan(failedBefore);

    await redis.start();
    const upAt = performance.now();
    await waitFor(async () => (await numsub(channel)) === 1, 20_000, 'the subscription to come back');
    const publishedBefore = publisher.stats.published;
    await waitFor(
      () => publisher.stats.published > publishedBefore + 5,
      20_000,
      'publishes to succeed again',
    );
    // Back on pub/sub: every report arrives again (Postgres alone coalesces ~4 reports per flush).
    await waitFor(
      () => longestConsecutiveRun(progress.filter((p) => p.at > upAt).map((p) => p.event.seq)) >= 8,
      20_000,
      'consecutive events through Redis after the restart',
    );
    await waitFor(
      () => longestConsecutiveRun(snapshots.filter((s) => s.at > upAt).map((s) => s.event.progressSeq)) >= 8,
      20_000,
      'consecutive snapshots through Redis after the restart',
    );

    const seqsIn = (from: number, to: number): number[] =>
      progress.filter((p) => p.at > from && p.at <= to).map((p) => p.event.seq);
    console.log(
      `redis down for ${Math.round(upAt - downAt)} ms; event seqs before: ${seqsIn(0, downAt).join(',')}; ` +
        `while down: ${seqsIn(downAt, upAt).join(',')}; after: ${seqsIn(upAt, Infinity).join(',')}`,
    );
    stopTicking = true;
    const results = await settled;
    for (const r of results) expect(r.status).toBe('fulfilled');

    const events = progress.map((p) => p.event);
    const last = events.at(-1)!;
    expect(last).toMatchObject({ terminal: true, status: 'succeeded' });
    expect(events.filter((e) => e.terminal)).toHaveLength(1);
    const seqs = events.filter((e) => e.kind === 'progress').map((e) => e.seq);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
    const finalRow = await h.refresh();
    expect(last.seq).toBe(finalRow.progressSeq);

    const snaps = snapshots.map((s) => s.event);
    expect(snaps.at(-1)).toMatchObject({
      terminal: true,
      status: 'succeeded',
      progressSeq: finalRow.progressSeq,
    });
    expect(snaps.filter((e) => e.terminal)).toHaveLength(1);
    for (let i = 1; i < snaps.length; i++)
      expect(snaps[i]!.progressSeq).toBeGreaterThanOrEqual(snaps[i - 1]!.progressSeq);
    await waitFor(async () => (await numsub(channel)) === 0, 5000, 'the subscription to be released');
  }, 120_000);
});

function longestConsecutiveRun(seqs: number[]): number {
  let best = 0;
  let run = 0;
  for (let i = 0; i < seqs.length; i++) {
    run = i > 0 && seqs[i] === seqs[i - 1]! + 1 ? run + 1 : 1;
    best = Math.max(best, run);
  }
  return best;
}
