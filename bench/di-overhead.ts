// What injecting dependencies costs a job: a plain actor against one injecting two job-scoped
// providers (one synchronous factory, one async factory with a disposer), in one run.
//
//   npx tsx bench/di-overhead.ts [--rounds N] [--jobs J] [--calls C]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test; a fresh schema,
// dropped afterwards). One in-process worker (maxConcurrency 8) serves both actors. A round
// truncates the jobs, enqueues J jobs (default 2000) of one actor in batches of 500 and times until
// all have succeeded; rounds alternate between the actors (after one warm-up round each). The median
// of each is printed: jobs/s, and the difference per job in µs. Because that difference is within
// the noise of a Postgres round (the jobs' writes dominate), the attempt's dependency scope is also
// timed alone, in-process: C calls (default 200,000) of the runner's scope around a no-op handler,
// against calling the handler directly, alternating, median of the rounds. The exit code is 1 only
// on errors, never on times.
import { randomUUID } from 'node:crypto';

import { batchItem } from '../src/client/batch-items.js';
import { TaskQ } from '../src/client/taskq.js';
import { actor, type AnyActor } from '../src/core/actor.js';
import { PgDriver } from '../src/db/pg-driver.js';
import { Providers } from '../src/di/providers.js';
import { token } from '../src/di/token.js';
import { WorkerDependencies } from '../src/di/worker-dependencies.js';
import { Migrator } from '../src/migrations/migrator.js';
import type { Logger } from '../src/obs/logger.js';
import { JobScope } from '../src/worker/job-scope.js';
import { Worker } from '../src/worker/worker.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  const n = i > 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
};
const ROUNDS = arg('--rounds', 5);
const JOBS = arg('--jobs', 2000);
const CALLS = arg('--calls', 200_000);
const CONCURRENCY = 8;

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const RequestId = token<string>('RequestId');
const Session = token<{ id: string; closed: boolean }>('Session');
let serial = 0;
let closed = 0;
const providers = new Providers()
  .factory(RequestId, { scope: 'job' }, () => `r${++serial}`)
  .factory(
    Session,
    {
      scope: 'job',
      inject: { requestId: RequestId },
      dispose: async (s) => {
        s.closed = true;
        closed++;
      },
    },
    async ({ requestId }) => ({ id: requestId, closed: false }),
  );

const plain = actor({ name: 'bench_plain', queue: 'bench_di' }, async () => undefined);
const injected = actor(
  { name: 'bench_injected', queue: 'bench_di', inject: { requestId: RequestId, session: Session } },
  async (_p, _c, { requestId, session }) => {
    if (session.id !== requestId) throw new Error('wrong session');
  },
);

/** µs per call of the runner's dependency scope around a no-op handler, minus a direct call. */
async function scopeCost(): Promise<{ direct: number; scoped: number }> {
  const deps = new WorkerDependencies(
    providers,
    new Map<string, AnyActor>([[injected.name, injected]]),
    quiet,
  );
  await deps.start();
  const scope = new JobScope(deps);
  const handler = (_deps?: unknown): Promise<void> => Promise.resolve();
  const time = async (scoped: boolean): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) {
      if (scoped) await scope.invoke(injected, quiet, handler);
      else await handler();
    }
    return ((performance.now() - t0) * 1000) / CALLS;
  };
  await time(false);
  await time(true);
  const direct: number[] = [];
  const scoped: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    direct.push(await time(false));
    scoped.push(await time(true));
  }
  await deps.close();
  return { direct: median(direct), scoped: median(scoped) };
}

async function main(): Promise<void> {
  const schema = `bench_di_${randomUUID().slice(0, 8)}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 4 });
  await new Migrator(driver, { schema }).up();
  const tq = await TaskQ.open({ dsn: DSN, schema, logger: quiet });
  const worker = new Worker({
    actors: [plain, injected],
    providers,
    logger: quiet,
    settings: {
      pgDsn: DSN,
      schema,
      queues: ['bench_di'],
      maxConcurrency: CONCURRENCY,
      watchdogEnabled: false,
      healthEnabled: false,
    },
  });
  await worker.start();
  const sql = (text: string) => driver.query<{ n: number }>(text.replaceAll('$S', `"${schema}"`));
  const succeeded = async (): Promise<number> =>
    Number((await sql(`SELECT count(*)::int AS n FROM $S.jobs WHERE status = 'succeeded'`)).rows[0]!.n);

  const round = async (a: typeof plain | typeof injected): Promise<number> => {
    await sql(`TRUNCATE $S.jobs CASCADE`);
    await sql(`VACUUM ANALYZE $S.jobs`);
    const t0 = performance.now();
    for (let i = 0; i < JOBS; i += 500)
      await tq.enqueueBatch(Array.from({ length: Math.min(500, JOBS - i) }, () => batchItem(a, null)));
    while ((await succeeded()) < JOBS) await new Promise((r) => setTimeout(r, 10));
    return performance.now() - t0;
  };

  const times = { plain: [] as number[], injected: [] as number[] };
  try {
    await round(plain);
    await round(injected);
    for (let i = 0; i < ROUNDS; i++) {
      // Alternating, starting with each in turn, so that load from elsewhere falls on both alike.
      const order = i % 2 === 0 ? (['plain', 'injected'] as const) : (['injected', 'plain'] as const);
      for (const k of order) times[k].push(await round(k === 'plain' ? plain : injected));
      process.stderr.write(`round ${i + 1}/${ROUNDS} done\n`);
    }
  } finally {
    await worker.stop();
    await tq.close();
    await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await driver.close();
  }
  if (closed !== serial) throw new Error(`${serial} sessions made, ${closed} closed`);
  const cost = await scopeCost();
  for (const [k, ts] of Object.entries(times))
    process.stderr.write(`${k}: ${ts.map((t) => t.toFixed(0)).join(', ')} ms\n`);
  const rate = (ms: number): number => JOBS / (ms / 1000);
  const p = median(times.plain);
  const d = median(times.injected);
  const lines = [
    `Dependency injection: ${JOBS} jobs per round, worker maxConcurrency ${CONCURRENCY}, median of ${ROUNDS} rounds`,
    '',
    '| actor | jobs/s | µs per job |',
    '| --- | ---: | ---: |',
    `| plain | ${rate(p).toFixed(0)} | ${((p * 1000) / JOBS).toFixed(1)} |`,
    `| two job-scoped providers (sync; async + disposer) | ${rate(d).toFixed(0)} | ${((d * 1000) / JOBS).toFixed(1)} |`,
    '',
    `Overhead per job, end to end: ${(((d - p) * 1000) / JOBS).toFixed(1)} µs (rounds: plain ` +
      `${Math.min(...times.plain).toFixed(0)}–${Math.max(...times.plain).toFixed(0)} ms, injected ` +
      `${Math.min(...times.injected).toFixed(0)}–${Math.max(...times.injected).toFixed(0)} ms).`,
    `The attempt's dependency scope alone (${CALLS} calls, in-process): ${cost.scoped.toFixed(2)} µs per call ` +
      `against ${cost.direct.toFixed(2)} µs for the bare handler: ${(cost.scoped - cost.direct).toFixed(2)} µs per job.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
