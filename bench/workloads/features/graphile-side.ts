/**
 * graphile-worker 0.17.3's side of the features workload: its worker for each case (run in a worker
 * process) and the producer the harness drives. Worker: `run()` with `concurrentJobs` c and its
 * defaults otherwise (pool 10, no local queue, pollInterval 2 s), as the `graphile` system of the
 * other workloads.
 * - cron catch-up: a crontab item `* * * * * tick ?id=s<i>&fill=15m` per schedule (its crontab is
 *   per-minute at best); the harness marks each item known with a last execution 10 minutes ago, so
 *   the worker backfills the missed minutes at its start;
 * - sub-jobs: the parent adds its children with `helpers.addJobs` (one call; not transactional with
 *   the parent's completion);
 * - retries: jobs added with `maxAttempts: 2`; its backoff is fixed by the library, `exp(min(attempts,
 *   10))` seconds (≈ 2.7 s after the first failure), and cannot be set smaller.
 */
import { Logger, makeWorkerUtils, parseCrontab, run, type Task, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';

import { PG_DSN, uniqueSuffix } from '../../lib/common.js';
import type { SideStarter } from './protocol.js';
import { MISSED_SLOTS } from './taskq-side.js';

/** Nothing: every first attempt of the retries case fails on purpose, and graphile logs each. */
const silent = process.env.BENCH_GRAPHILE_DEBUG
  ? new Logger(() => (level, message) => process.stderr.write(`[graphile ${level}] ${message}\n`))
  : new Logger(() => () => undefined);

/** Backfill period of the crontab items (longer than the missed slots, so all of them are filled). */
const FILL = '15m';

/** Starts graphile-worker with the tasks and crontab of `spec`'s case. */
export const graphileSide: SideStarter = async (spec, hooks) => {
  const minute = spec.params.catchUpMinute;
  const tasks: Record<string, Task> = {
    tick: async (payload) => {
      const due = Date.parse((payload as { _cron: { ts: string } })._cron.ts);
      const kind = minute !== undefined && due < minute ? 'backfill' : 'fire';
      hooks.mark(kind, Date.now() - due);
      hooks.mark(`${kind} slot`, due);
    },
    child: async () => {
      hooks.mark('child');
    },
    parent: async (payload, helpers) => {
      const n = (payload as { n: number }).n;
      await helpers.addJobs(Array.from({ length: n }, (_, i) => ({ identifier: 'child', payload: { i } })));
      hooks.mark('parent');
    },
    flaky: async (_payload, helpers) => {
      hooks.mark('attempt');
      if (helpers.job.attempts === 1) throw new Error('bench: the first attempt fails');
      hooks.mark('done');
    },
  };
  const crontab =
    spec.case === 'cron-catch-up'
      ? Array.from(
          { length: spec.params.schedules ?? 0 },
          (_, i) => `* * * * * tick ?id=s${i}&fill=${FILL}`,
        ).join('\n')
      : '';
  const runner = await run({
    preset: {
      worker: {
        connectionString: PG_DSN,
        schema: spec.namespace,
        concurrentJobs: spec.concurrency,
        logger: silent,
      },
    },
    noHandleSignals: true,
    parsedCronItems: parseCrontab(crontab),
    taskList: tasks,
  });
  return {
    async stop() {
      await runner.stop();
    },
  };
};

/** The harness's side: a fresh schema and what each case enqueues or prepares. */
export class GraphileProducer {
  readonly id = 'graphile' as const;
  namespace = '';
  private utils: WorkerUtils | null = null;
  private pool: pg.Pool | null = null;

  async setup(): Promise<void> {
    this.namespace = `bench_feat_gw_${uniqueSuffix()}`;
    this.pool = new pg.Pool({ connectionString: PG_DSN, max: 1 });
    this.utils = await makeWorkerUtils({
      connectionString: PG_DSN,
      schema: this.namespace,
      maxPoolSize: 2,
      logger: silent,
    });
    await this.utils.migrate();
  }

  async teardown(): Promise<void> {
    await Promise.resolve(this.utils?.release()).catch(() => undefined);
    this.utils = null;
    if (this.pool) {
      await this.pool.query(`DROP SCHEMA IF EXISTS "${this.namespace}" CASCADE`).catch(() => undefined);
      await this.pool.end().catch(() => undefined);
      this.pool = null;
    }
  }

  /**
   * Marks `n` crontab identifiers known, last executed `MISSED_SLOTS` + 1 minutes before `minute`: the
   * `MISSED_SLOTS` minutes after that one are missed (graphile-worker's `last_execution` is the last
   * slot that ran, TaskQ's `next_fire_at` the first that did not).
   */
  async prepareCatchUp(n: number, minute: number): Promise<void> {
    await this.pool!.query(
      `INSERT INTO "${this.namespace}"._private_known_crontabs (identifier, known_since, last_execution)
       SELECT 's' || g, $1, $1 FROM generate_series(0, $2::int - 1) AS g`,
      [new Date(minute - (MISSED_SLOTS + 1) * 60_000), n],
    );
  }

  /** `p` parents, each adding `c` children from its task. */
  async enqueueParents(p: number, c: number): Promise<void> {
    await this.utils!.addJobs(Array.from({ length: p }, () => ({ identifier: 'parent', payload: { n: c } })));
  }

  /** `n` jobs whose first attempt fails, two attempts each. */
  async enqueueFlaky(n: number): Promise<void> {
    for (let i = 0; i < n; i += 1000)
      await this.utils!.addJobs(
        Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({
          identifier: 'flaky',
          payload: { i: i + j },
          maxAttempts: 2,
        })),
      );
  }
}
