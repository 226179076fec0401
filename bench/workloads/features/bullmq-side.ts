/**
 * BullMQ 6.7.0 on Redis: its side of the features workload. One `Worker` with `concurrency` c, a key
 * prefix per run in the benchmark's Redis logical database (flushed before and after, never
 * database 0), `removeOnComplete: true` as in the other workloads.
 * - batch: a `FlowProducer` flow, a parent (the finalizer) with K children: the parent runs once
 *   every child has completed;
 * - sub-jobs: the parent's processor adds its children with `queue.addBulk` (one call);
 * - retries: `attempts: 2, backoff: { type: 'fixed', delay: 100 }`;
 * - rate limit: the worker's queue limiter `{ max: BURST, duration: 1000 × BURST / RATE }` (50 jobs
 *   per 100 ms = 500/s).
 */
import { FlowProducer, Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { Redis } from 'ioredis';

import { BENCH_QUEUE, REDIS_DB, REDIS_HOST, REDIS_PORT, nowMs, uniqueSuffix } from '../../lib/common.js';
import type { SideStarter } from './protocol.js';
import { BACKOFF_MS, BURST, RATE } from './taskq-side.js';

function connection(): ConnectionOptions {
  return { host: REDIS_HOST, port: REDIS_PORT, db: REDIS_DB, maxRetriesPerRequest: null };
}

async function flush(): Promise<void> {
  const redis = new Redis({ host: REDIS_HOST, port: REDIS_PORT, db: REDIS_DB });
  try {
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
}

/** Starts a BullMQ worker processing every job name of `spec`'s case. */
export const bullmqSide: SideStarter = async (spec, hooks) => {
  const queue =
    spec.case === 'sub-jobs'
      ? new Queue(BENCH_QUEUE, { connection: connection(), prefix: spec.namespace })
      : null;
  const processor = async (job: Job): Promise<void> => {
    switch (job.name) {
      case 'child':
        hooks.mark('child');
        return;
      case 'final':
        hooks.mark('final', nowMs());
        return;
      case 'parent': {
        const n = (job.data as { n: number }).n;
        await queue!.addBulk(
          Array.from({ length: n }, (_, i) => ({
            name: 'child',
            data: { i },
            opts: { removeOnComplete: true },
          })),
        );
        hooks.mark('parent');
        return;
      }
      case 'flaky':
        hooks.mark('attempt');
        if (job.attemptsMade === 0) throw new Error('bench: the first attempt fails');
        hooks.mark('done');
        return;
      default:
        hooks.mark('job');
    }
  };
  const worker = new Worker(BENCH_QUEUE, processor, {
    connection: connection(),
    prefix: spec.namespace,
    concurrency: spec.concurrency,
    ...(spec.case === 'rate-limit' ? { limiter: { max: BURST, duration: (1000 * BURST) / RATE } } : {}),
  });
  worker.on('error', (err: Error) => process.stderr.write(`[bullmq error] ${err.message}\n`));
  await worker.waitUntilReady();
  return {
    async stop() {
      await worker.close();
      await queue?.close();
    },
  };
};

/** The harness's side: a flushed Redis database, a queue and a flow producer under a fresh prefix. */
export class BullmqProducer {
  readonly id = 'bullmq-redis' as const;
  namespace = '';
  private queue: Queue | null = null;
  private flows: FlowProducer | null = null;

  async setup(): Promise<void> {
    this.namespace = `bench_feat_bq_${uniqueSuffix()}`;
    await flush();
    this.queue = new Queue(BENCH_QUEUE, {
      connection: connection(),
      prefix: this.namespace,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000 },
    });
    this.flows = new FlowProducer({ connection: connection(), prefix: this.namespace });
    await this.queue.waitUntilReady();
  }

  async teardown(): Promise<void> {
    await this.queue?.close().catch(() => undefined);
    await this.flows?.close().catch(() => undefined);
    this.queue = null;
    this.flows = null;
    await flush().catch(() => undefined);
  }

  /** One flow: a parent (`final`) with `k` children. */
  async enqueueBatchWithFinalizer(k: number): Promise<void> {
    await this.flows!.add({
      name: 'final',
      queueName: BENCH_QUEUE,
      data: {},
      opts: { removeOnComplete: true },
      children: Array.from({ length: k }, (_, i) => ({
        name: 'child',
        queueName: BENCH_QUEUE,
        data: { i },
        opts: { removeOnComplete: true },
      })),
    });
  }

  /** `p` parents, each adding `c` children from its processor. */
  async enqueueParents(p: number, c: number): Promise<void> {
    await this.queue!.addBulk(Array.from({ length: p }, () => ({ name: 'parent', data: { n: c } })));
  }

  /** `n` jobs whose first attempt fails: two attempts, a fixed backoff of `BACKOFF_MS`. */
  async enqueueFlaky(n: number): Promise<void> {
    await this.bulk('flaky', n, { attempts: 2, backoff: { type: 'fixed', delay: BACKOFF_MS } });
  }

  /** `n` jobs for the rate-limited worker. */
  async enqueueLimited(n: number): Promise<void> {
    await this.bulk('limited', n, {});
  }

  private async bulk(name: string, n: number, opts: object): Promise<void> {
    for (let i = 0; i < n; i += 1000)
      await this.queue!.addBulk(
        Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ name, data: { i: i + j }, opts })),
      );
  }
}
