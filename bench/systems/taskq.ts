/**
 * TaskQ, loaded from its compiled package (`dist/`, see taskq-package.ts). Two configurations compared
 * with the peers:
 * - `taskq`: worker defaults (adaptive prefetch, dispatcher pool 4) with only
 *   `maxConcurrency` set; NOTIFY on.
 * - `taskq-tuned`: a deeper local queue (`prefetch` = max(4 × concurrency, 1000)), the counterpart of
 *   graphile-worker's `localQueue`.
 * And three TaskQ-only feature configurations (worker defaults; the actor differs):
 * - `taskq-rl-open`: a Redis token bucket that never binds (its overhead per job);
 * - `taskq-rl-binding`: a Redis token bucket of 500 jobs/s, burst 50 (does it hold the rate?);
 * - `taskq-reservation`: a keyed concurrency reservation, 10 keys × 1 slot (Postgres).
 */
import { randomUUID } from 'node:crypto';

import pg from 'pg';

import type { TaskQ as TaskQInstance } from '../../src/client/taskq.js';
import { stderrLogger } from '../lib/stderr-logger.js';
import type { WorkerSettingsInput } from '../../src/settings/load-worker-settings.js';
import {
  BENCH_QUEUE,
  BENCH_TASK,
  PG_DSN,
  REDIS_DB,
  REDIS_HOST,
  REDIS_PORT,
  uniqueSuffix,
  type BenchPayload,
} from '../lib/common.js';
import { median } from '../lib/stats.js';
import { loadTaskq, type TaskqPackage } from './taskq-package.js';
import type { FillSpec, SystemAdapter, WorkerSpec, WorkerStarter } from './types.js';

export type Variant =
  | 'default'
  | 'tuned'
  | 'rl-open'
  | 'rl-binding'
  | 'reservation'
  | 'otel-on'
  | 'otel-sampled'
  | 'otel-metrics'
  | 'otel-off';

/** The binding token bucket's rate and burst. */
export const BINDING_RATE = 500;
export const BINDING_BURST = 50;
/** Keys and slots per key of the keyed reservation. */
export const RESERVATION_KEYS = 10;

/** A Standard Schema for the benchmark payload (keyed refs derive their key from validated payloads). */
const payloadSchema = {
  '~standard': {
    version: 1 as const,
    vendor: 'taskq-bench',
    validate: (value: unknown) =>
      typeof value === 'object' && value !== null && typeof (value as BenchPayload).i === 'number'
        ? { value: value as BenchPayload }
        : { issues: [{ message: 'expected { i: number, t?: number }' }] },
  },
};

/**
 * The benchmark actor of a variant. `namespace` makes the token bucket's name unique per run (its
 * state lives in Redis, which TaskQ runs do not flush).
 */
function benchActor(
  { main, ratelimit }: TaskqPackage,
  variant: Variant,
  namespace: string,
  handler: (p: BenchPayload) => void,
) {
  const { actor } = main;
  const { TokenBucket, keyedReservation } = ratelimit;
  const run = async (p: BenchPayload) => {
    handler(p);
    return undefined;
  };
  switch (variant) {
    case 'rl-open':
      return actor(
        {
          name: BENCH_TASK,
          queue: BENCH_QUEUE,
          rateLimits: [new TokenBucket(`bench_open_${namespace}`, { capacity: 1e9, refillPerSecond: 1e9 })],
        },
        run,
      );
    case 'rl-binding':
      return actor(
        {
          name: BENCH_TASK,
          queue: BENCH_QUEUE,
          rateLimits: [
            new TokenBucket(`bench_500_${namespace}`, {
              capacity: BINDING_BURST,
              refillPerSecond: BINDING_RATE,
            }),
          ],
        },
        run,
      );
    case 'reservation':
      return actor(
        {
          name: BENCH_TASK,
          queue: BENCH_QUEUE,
          payload: payloadSchema,
          reservations: [
            keyedReservation(payloadSchema, {
              baseName: 'bench_res',
              keyFn: (p: BenchPayload) => `k${p.i % RESERVATION_KEYS}`,
              slots: 1,
              lease: '30s',
            }),
          ],
        },
        run,
      );
    default:
      return actor({ name: BENCH_TASK, queue: BENCH_QUEUE }, run);
  }
}

const SYSTEM_ID: Record<Variant, string> = {
  default: 'taskq',
  tuned: 'taskq-tuned',
  'rl-open': 'taskq-rl-open',
  'rl-binding': 'taskq-rl-binding',
  reservation: 'taskq-reservation',
  'otel-on': 'taskq-otel-on',
  'otel-sampled': 'taskq-otel-sampled',
  'otel-metrics': 'taskq-otel-metrics',
  'otel-off': 'taskq-otel-off',
};

const TITLE: Record<Variant, string> = {
  default: 'TaskQ (defaults)',
  tuned: 'TaskQ (prefetch 1,000)',
  'rl-open': 'TaskQ, Redis token bucket (not binding)',
  'rl-binding': `TaskQ, Redis token bucket ${BINDING_RATE}/s, burst ${BINDING_BURST}`,
  reservation: `TaskQ, keyed reservation (${RESERVATION_KEYS} keys × 1 slot)`,
  'otel-on': 'TaskQ, every attempt traced, metrics on a Prometheus endpoint',
  'otel-sampled': 'TaskQ, 10 % of traces sampled, metrics on a Prometheus endpoint',
  'otel-metrics': 'TaskQ, metrics on a Prometheus endpoint, no tracing SDK',
  'otel-off': 'TaskQ, otelEnabled false',
};

function workerOverrides(variant: Variant, concurrency: number): Partial<WorkerSettingsInput> {
  switch (variant) {
    case 'tuned':
      return { prefetch: Math.max(4 * concurrency, 1000) };
    case 'otel-on':
    case 'otel-sampled':
    case 'otel-metrics':
      // The worker's own meter provider behind a Prometheus endpoint (nobody scrapes it here).
      return { metricsPort: 0, healthHost: '127.0.0.1' };
    case 'otel-off':
      return { otelEnabled: false };
    default:
      return {};
  }
}

/**
 * What an application with tracing on registers before it starts a worker: a tracer provider whose
 * batch processor hands finished spans to an exporter (one that drops them: the cost measured is
 * TaskQ's and the SDK's, not a collector's), and an AsyncLocalStorage context manager.
 */
async function registerTracingSdk(ratio: number): Promise<void> {
  const { context, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } =
    await import('@opentelemetry/sdk-trace-base');
  const dropping = {
    export: (_spans: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }),
    shutdown: async () => undefined,
  };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
      spanProcessors: [new BatchSpanProcessor(dropping)],
    }),
  );
}

export async function createTaskq(variant: Variant): Promise<SystemAdapter> {
  const pkg = await loadTaskq();
  const { TaskQ, PgDriver, Migrator, batchItem } = pkg.main;
  const { ADAPTIVE_PREFETCH_MAX } = pkg.producer;
  let schema = '';
  let tq: TaskQInstance | null = null;
  let pool: pg.Pool | null = null;
  let noopRef = benchActor(pkg, variant, '', () => undefined);
  const id = SYSTEM_ID[variant];
  return {
    id,
    title: TITLE[variant],
    pkg: 'taskq (this repository)',
    store: 'postgres',
    settings:
      variant === 'rl-open' || variant === 'rl-binding' || variant === 'reservation'
        ? `Worker defaults with maxConcurrency c; the actor declares ${TITLE[variant]}${variant === 'reservation' ? ' (Postgres-backed)' : `; redisUrl redis://${REDIS_HOST}:${REDIS_PORT}/${REDIS_DB}`}; watchdog off.`
        : variant === 'tuned'
          ? 'Worker: maxConcurrency c, prefetch max(4c, 1000); everything else default (dispatcherPoolSize 4, NOTIFY on, oversample 2); watchdog off. Client: TaskQ.open, pool 5.'
          : `Worker: maxConcurrency c; everything else default (adaptive prefetch, at most ${ADAPTIVE_PREFETCH_MAX}; dispatcherPoolSize 4, NOTIFY on, oversample 2); watchdog off. Client: TaskQ.open, pool 5.`,
    async setup() {
      schema = `bench_tq_${uniqueSuffix()}`;
      noopRef = benchActor(pkg, variant, schema, () => undefined);
      const driver = new PgDriver({ connection: PG_DSN, maxPoolSize: 2 });
      try {
        await new Migrator(driver, { schema }).up();
      } finally {
        await driver.close();
      }
      tq = await TaskQ.open({ dsn: PG_DSN, schema });
      pool = new pg.Pool({ connectionString: PG_DSN, max: 2 });
    },
    async teardown() {
      await tq?.close().catch(() => undefined);
      tq = null;
      if (pool) {
        if (schema) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await pool.end().catch(() => undefined);
        pool = null;
      }
    },
    async enqueueOne(payload) {
      await tq!.enqueue(noopRef, payload);
    },
    async enqueueBulk(payloads) {
      await tq!.enqueueBatch(payloads.map((p) => batchItem(noopRef, p)));
    },
    async enqueueCopy(payloads) {
      await tq!.enqueueBatchFast(payloads.map((p) => batchItem(noopRef, p)));
    },
    async outstanding() {
      return tq!.countActiveJobs([BENCH_QUEUE]);
    },
    workerSpec(concurrency, processes): WorkerSpec {
      return { system: id, namespace: schema, concurrency, processes };
    },
    async fill(spec: FillSpec) {
      const jobs = `"${schema}".jobs`;
      const status = `"${schema}".job_status`;
      // Pending rows are the backlog (oldest first); terminal rows are succeeded history. Ids are
      // UUIDv7 in row order, as TaskQ's own enqueues make them (48-bit milliseconds, version 7, the
      // microsecond within the millisecond as the 12-bit counter, variant, 60 bits from md5): random
      // v4 ids would put every claimed version's primary-key entry on a random leaf page of a large
      // index, a cost a table grown by TaskQ does not have.
      await pool!.query(
        `INSERT INTO ${jobs} (id, actor, queue, payload, status, attempt, max_attempts, retry_kind,
                              created_at, scheduled_at, started_at, finished_at)
         SELECT (lpad(to_hex(floor(t.us / 1000)::bigint), 12, '0') || '7' ||
                 lpad(to_hex((t.us % 1000)::int), 3, '0') || '8' || substr(md5(g::text), 1, 15))::uuid,
                $1, $2, jsonb_build_object('i', g),
                CASE WHEN g <= $3 THEN 'pending' ELSE 'succeeded' END::${status},
                CASE WHEN g <= $3 THEN 0 ELSE 1 END, 3, 'transient',
                now() - interval '2 hours', a.at,
                CASE WHEN g <= $3 THEN NULL ELSE now() - interval '1 hour' END,
                CASE WHEN g <= $3 THEN NULL ELSE now() - interval '1 hour' END
         FROM generate_series(1, $4::int) AS g
         CROSS JOIN LATERAL (SELECT now() - interval '1 hour' + g * interval '1 microsecond' AS at) a
         CROSS JOIN LATERAL (SELECT floor(extract(epoch FROM a.at) * 1000000)::bigint AS us) t`,
        [BENCH_TASK, BENCH_QUEUE, spec.pending, spec.rows],
      );
      await pool!.query(`VACUUM ANALYZE ${jobs}`);
    },
    async probeDispatch(jobs, batch, options = {}) {
      // The worker's own statements, called directly: claim `batch` jobs, settle them as succeeded.
      // `jitOff` runs them on a client whose sessions have `jit = off` (a diagnostic: TaskQ's own
      // pools leave the server default).
      const client = options.jitOff
        ? await TaskQ.open({
            dsn: `${PG_DSN}${PG_DSN.includes('?') ? '&' : '?'}options=-c%20jit%3Doff`,
            schema,
          })
        : tq!;
      const backend = client.backend;
      const workerId = randomUUID();
      const req = {
        workerId,
        queues: [BENCH_QUEUE],
        actors: [{ name: BENCH_TASK, maxConcurrent: null }],
        limit: batch,
        leaseMs: 60_000,
        oversample: 2,
      };
      // Each call's time per job it claimed (or settled); the probe reports their medians, so that
      // a few stalls of the instance cannot decide the scale rows as a mean would.
      let claimed = 0;
      const dispatchMs: number[] = [];
      const settleMs: number[] = [];
      try {
        while (claimed < jobs) {
          const t0 = performance.now();
          const rows = await backend.dispatchBatch(req);
          const t1 = performance.now();
          if (rows.length === 0) break;
          await backend.settle(
            rows.map((r) => ({
              kind: 'succeeded' as const,
              jobId: r.id,
              workerId,
              handlerStartedAt: new Date(),
              durationMs: 0,
              resultJson: null,
              resultSizeBytes: null,
              fallbackResultTtlMs: null,
            })),
          );
          dispatchMs.push((t1 - t0) / rows.length);
          settleMs.push((performance.now() - t1) / rows.length);
          claimed += rows.length;
        }
      } finally {
        if (client !== tq) await client.close();
      }
      return { jobs: claimed, dispatchMsPerJob: median(dispatchMs), settleMsPerJob: median(settleMs) };
    },
  };
}

const workerLogger = stderrLogger();

/** Loads the package first, so that the worker process has imported it before the harness says go. */
export async function taskqWorkerStarter(variant: Variant): Promise<WorkerStarter> {
  const pkg = await loadTaskq();
  const { Worker } = pkg.worker;
  if (variant === 'otel-on') await registerTracingSdk(1);
  if (variant === 'otel-sampled') await registerTracingSdk(0.1);
  // The endpoint's optional packages are imported at the worker's start, which runs after the
  // harness says go: load them now, so their import is not counted as CPU spent on jobs.
  if (variant === 'otel-on' || variant === 'otel-sampled' || variant === 'otel-metrics')
    await Promise.all([import('@opentelemetry/exporter-prometheus'), import('@opentelemetry/sdk-metrics')]);
  return async (spec, hooks) => {
    const noop = benchActor(pkg, variant, spec.namespace, (p) => hooks.onJob(p));
    const worker = new Worker({
      actors: [noop],
      settings: {
        pgDsn: PG_DSN,
        schema: spec.namespace,
        queues: [BENCH_QUEUE],
        maxConcurrency: spec.concurrency,
        watchdogEnabled: false,
        // Only the token-bucket variants get Redis (with a URL the worker may also publish progress there).
        ...(variant === 'rl-open' || variant === 'rl-binding'
          ? { redisUrl: `redis://${REDIS_HOST}:${REDIS_PORT}/${REDIS_DB}` }
          : {}),
        ...workerOverrides(variant, spec.concurrency),
      },
      logger: workerLogger,
    });
    await worker.start();
    return {
      async stop() {
        await worker.stop();
      },
    };
  };
}
