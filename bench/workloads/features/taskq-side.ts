/**
 * TaskQ's side of the features workload, from its compiled package (see
 * `bench/systems/taskq-package.ts`): the actors of every case, the worker of each case (run in a
 * worker process) and the producer the harness drives.
 *
 * Settings: one worker, `maxConcurrency` c, watchdog and health endpoint off; the cases' actors:
 * - cron: schedules `* * * * * *` (every second) declared in code, payload from a factory carrying
 *   the slot; catch-up: run-time schedules `* * * * *` whose stored next slot is moved 10 minutes back;
 * - batch: `enqueueBatch` with a finalizer (a batch row); the finalizer waits with
 *   `waitForBatch(batchId)` (snooze mode, the default 10 s interval), and runs again when the batch
 *   ends;
 * - sub-jobs: the parent buffers its children with `ctx.jobs.enqueueBatch` (written with its success);
 * - retries: `retry: { maxAttempts: 2, backoff: 'fixed', base: 100, jitter: 0 }`;
 * - rate limit: a Redis `TokenBucket` of `RATE` jobs/s with a burst of `BURST`.
 */
import pg from 'pg';

import type { TaskQ as TaskQInstance } from '../../../src/client/taskq.js';
import type { Logger } from '../../../src/obs/logger.js';
import {
  BENCH_QUEUE,
  PG_DSN,
  REDIS_DB,
  REDIS_HOST,
  REDIS_PORT,
  nowMs,
  uniqueSuffix,
} from '../../lib/common.js';
import { loadTaskq, type TaskqPackage } from '../../systems/taskq-package.js';
import type { FeatureHooks, FeatureSpec, SideStarter } from './protocol.js';

/** The rate limit of the rate-limit case (jobs/s) and its burst (jobs). */
export const RATE = 500;
export const BURST = 50;
/** Backoff before the second attempt in the retries case (ms): the smallest BullMQ's and TaskQ's fixed backoff share. */
export const BACKOFF_MS = 100;
/** Slots each schedule of the catch-up case missed. */
export const MISSED_SLOTS = 10;

/** The slot a cron job was fired for (wall-clock ms) and whether it is a missed slot of the catch-up. */
function cronKind(due: number, catchUpMinute: number | undefined): string {
  return catchUpMinute !== undefined && due < catchUpMinute ? 'backfill' : 'fire';
}

/** The actors of every case; on the producer side `hooks` is null (their handlers never run there). */
function actors(
  pkg: TaskqPackage,
  spec: Pick<FeatureSpec, 'namespace' | 'params'>,
  hooks: FeatureHooks | null,
  tq: () => TaskQInstance,
) {
  const { actor, batchItem } = pkg.main;
  const { TokenBucket } = pkg.ratelimit;
  const mark = (kind: string, sample?: number) => hooks?.mark(kind, sample);
  const tick = actor({ name: 'tick', queue: BENCH_QUEUE }, async (p: { due: number }) => {
    const kind = cronKind(p.due, spec.params.catchUpMinute);
    mark(kind, Date.now() - p.due);
    // The slot too, in step with the lag: the harness counts the slots inside its window.
    mark(`${kind} slot`, p.due);
  });
  const child = actor({ name: 'child', queue: BENCH_QUEUE }, async () => {
    mark('child');
  });
  const final = actor({ name: 'final', queue: BENCH_QUEUE }, async (p: { batchId: string }) => {
    // Throws Snooze while children are pending: the finalizer comes back, without a slot held meanwhile,
    // when the batch ends (its 10 s snooze is the fallback).
    await tq().waitForBatch(p.batchId);
    mark('final', nowMs());
  });
  const parent = actor({ name: 'parent', queue: BENCH_QUEUE }, async (p: { n: number }, ctx) => {
    await ctx.jobs.enqueueBatch(Array.from({ length: p.n }, (_, i) => batchItem(child, { i })));
    mark('parent');
  });
  const flaky = actor(
    {
      name: 'flaky',
      queue: BENCH_QUEUE,
      retry: { maxAttempts: 2, backoff: 'fixed', base: BACKOFF_MS, jitter: 0 },
    },
    async (_p: { i: number }, ctx) => {
      mark('attempt');
      if (ctx.attempt === 1) throw new Error('bench: the first attempt fails');
      mark('done');
    },
  );
  const limited = actor(
    {
      name: 'limited',
      queue: BENCH_QUEUE,
      // Named per run: the bucket's state lives in Redis, which TaskQ runs do not flush.
      rateLimits: [
        new TokenBucket(`bench_feat_${spec.namespace}`, { capacity: BURST, refillPerSecond: RATE }),
      ],
    },
    async (_p: { i: number }) => {
      mark('job');
    },
  );
  return { tick, child, final, parent, flaky, limited };
}

/** Only errors, to stderr (the retries case fails every first attempt on purpose). */
const errorLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error(obj, msg) {
    process.stderr.write(`[taskq error] ${msg ?? ''} ${JSON.stringify(obj).slice(0, 300)}\n`);
  },
  child: () => errorLogger,
};

/** Loads the package (before the harness says go), then returns the starter of the worker side. */
export async function prepareTaskqSide(): Promise<SideStarter> {
  const pkg = await loadTaskq();
  const { Worker } = pkg.worker;
  const { TaskQ, cron } = pkg.main;
  return async (s, hooks) => {
    let client: TaskQInstance | null = null;
    const a = actors(pkg, s, hooks, () => client!);
    if (s.case === 'batch')
      client = await TaskQ.open({ dsn: PG_DSN, schema: s.namespace, logger: errorLogger });
    const byCase = {
      cron: [a.tick],
      'cron-catch-up': [a.tick],
      batch: [a.child, a.final],
      'sub-jobs': [a.parent, a.child],
      retries: [a.flaky],
      'rate-limit': [a.limited],
    } as const;
    const schedules =
      s.case === 'cron'
        ? Array.from({ length: s.params.schedules ?? 0 }, (_, i) =>
            cron('* * * * * *', a.tick, {
              name: `s${i}`,
              payloadFactory: ({ fireAt }) => ({ due: fireAt.getTime() }),
            }),
          )
        : [];
    const worker = new Worker({
      actors: [...byCase[s.case]],
      schedules,
      payloadFactories: { due: ({ fireAt }) => ({ due: fireAt.getTime() }) },
      settings: {
        pgDsn: PG_DSN,
        schema: s.namespace,
        queues: [BENCH_QUEUE],
        maxConcurrency: s.concurrency,
        watchdogEnabled: false,
        healthEnabled: false,
        ...(s.case === 'rate-limit' ? { redisUrl: `redis://${REDIS_HOST}:${REDIS_PORT}/${REDIS_DB}` } : {}),
      },
      logger: errorLogger,
    });
    await worker.start();
    return {
      async stop() {
        await worker.stop();
        await client?.close();
      },
    };
  };
}

/** The harness's side: a fresh schema, a client, and what each case enqueues or prepares. */
export class TaskqProducer {
  readonly id = 'taskq' as const;
  namespace = '';
  private tq: TaskQInstance | null = null;
  private pool: pg.Pool | null = null;
  private pkg: TaskqPackage | null = null;
  private a: ReturnType<typeof actors> | null = null;

  async setup(params: Record<string, number> = {}): Promise<void> {
    this.pkg = await loadTaskq();
    const { TaskQ, PgDriver, Migrator } = this.pkg.main;
    this.namespace = `bench_feat_tq_${uniqueSuffix()}`;
    const driver = new PgDriver({ connection: PG_DSN, maxPoolSize: 2 });
    try {
      await new Migrator(driver, { schema: this.namespace }).up();
    } finally {
      await driver.close();
    }
    this.tq = await TaskQ.open({ dsn: PG_DSN, schema: this.namespace, logger: errorLogger });
    this.pool = new pg.Pool({ connectionString: PG_DSN, max: 1 });
    this.a = actors(this.pkg, { namespace: this.namespace, params }, null, () => this.tq!);
  }

  async teardown(): Promise<void> {
    await this.tq?.close().catch(() => undefined);
    this.tq = null;
    if (this.pool) {
      await this.pool.query(`DROP SCHEMA IF EXISTS "${this.namespace}" CASCADE`).catch(() => undefined);
      await this.pool.end().catch(() => undefined);
      this.pool = null;
    }
  }

  /** `n` per-minute schedules whose stored next slot is `MISSED_SLOTS` minutes before `minute`. */
  async prepareCatchUp(n: number, minute: number): Promise<void> {
    for (let i = 0; i < n; i++)
      await this.tq!.createSchedule(this.a!.tick, '* * * * *', { name: `s${i}`, payloadFactory: 'due' });
    await this.pool!.query(`UPDATE "${this.namespace}".cron_schedules SET next_fire_at = $1`, [
      new Date(minute - MISSED_SLOTS * 60_000),
    ]);
  }

  /** One batch of `k` children with a finalizer (a batch row). */
  async enqueueBatchWithFinalizer(k: number): Promise<void> {
    const { batchItem } = this.pkg!.main;
    const batchId = crypto.randomUUID();
    await this.tq!.enqueueBatch(
      Array.from({ length: k }, (_, i) => batchItem(this.a!.child, { i })),
      { batchId, finalizer: batchItem(this.a!.final, { batchId }) },
    );
  }

  /** `p` parents, each enqueueing `c` children from its handler. */
  async enqueueParents(p: number, c: number): Promise<void> {
    const { batchItem } = this.pkg!.main;
    await this.tq!.enqueueBatch(Array.from({ length: p }, () => batchItem(this.a!.parent, { n: c })));
  }

  /** `n` jobs whose first attempt fails. */
  async enqueueFlaky(n: number): Promise<void> {
    await this.bulk(this.a!.flaky, n);
  }

  /** `n` jobs of the rate-limited actor. */
  async enqueueLimited(n: number): Promise<void> {
    await this.bulk(this.a!.limited, n);
  }

  private async bulk(ref: ReturnType<typeof actors>['flaky' | 'limited'], n: number): Promise<void> {
    const { batchItem } = this.pkg!.main;
    for (let i = 0; i < n; i += 1000)
      await this.tq!.enqueueBatch(
        Array.from({ length: Math.min(1000, n - i) }, (_, j) => batchItem(ref, { i: i + j })),
      );
  }
}
