// The TaskQ demo: enqueue a few jobs, run a worker, print each job as it finishes, stop cleanly.
// Used by `npm run demo` (examples/demo/run.ts) and by `taskq dev` without --module.
import { mkdirSync } from 'node:fs';

import {
  JobFailed,
  Migrator,
  PayloadValidationError,
  PgDriver,
  PgliteDriver,
  TaskQ,
  type Driver,
  type JobHandle,
  type JobRow,
  type Logger,
} from '../../src/index.js';
import { maskConnectionString } from '../../src/db/connection-string.js';
import { Worker } from '../../src/worker/index.js';
import demoActors, {
  add,
  chargeCard,
  DEMO_QUEUE,
  exportReport,
  fetchRates,
  greet,
  sendReminder,
} from './actors.js';

/** The schema the demo works in, on the embedded database and on a server alike. */
export const DEMO_SCHEMA = 'taskq_demo';

/** Where the demo writes its lines. */
export interface DemoIo {
  out(line: string): void;
  err(line: string): void;
}

/** Options of {@link runDemo}. */
export interface RunDemoOptions {
  /** Output. */
  io: DemoIo;
  /** Folder of the embedded database (PGlite), used when `dsn` is not set. */
  dataDir: string;
  /** A Postgres server to use instead (schema `taskq_demo`, migrated automatically). */
  dsn?: string | null;
}

/** One enqueued job and the status the demo means it to end in. */
interface DemoJob {
  handle: JobHandle<unknown>;
  expected: 'succeeded' | 'failed';
}

/** How long the demo waits for any one job before calling the run a failure. */
const JOB_TIMEOUT = '20s';

/**
 * Runs the demo and resolves with the exit code: 0 when every job ended as intended, 1 otherwise.
 */
export async function runDemo({ io, dataDir, dsn }: RunDemoOptions): Promise<number> {
  let driver: Driver;
  if (dsn) {
    driver = new PgDriver({ connection: dsn, maxPoolSize: 6, applicationName: 'taskq-demo' });
    io.out(`TaskQ demo on Postgres ${maskConnectionString(dsn)}, schema ${DEMO_SCHEMA}`);
  } else {
    mkdirSync(dataDir, { recursive: true });
    driver = await PgliteDriver.open(dataDir);
    io.out(`TaskQ demo on an embedded Postgres (PGlite) in ${dataDir}, schema ${DEMO_SCHEMA}`);
  }
  // The TaskQ client owns the driver from here on: tq.close() closes it.
  const tq = await TaskQ.open({ driver, schema: DEMO_SCHEMA });
  let worker: Worker | null = null;
  try {
    const { applied } = await new Migrator(driver, { schema: DEMO_SCHEMA }).up();
    if (applied.length > 0) io.out(`migrated schema ${DEMO_SCHEMA}: ${applied.join(', ')}`);

    worker = new Worker({
      actors: demoActors,
      driver,
      logger: problemsOnly(io),
      settings: {
        schema: DEMO_SCHEMA,
        queues: [DEMO_QUEUE],
        maxConcurrency: 4,
        cancellationGracePeriod: '2s',
        cleanupGracePeriod: '1s',
        // A demo may be edited between runs; let the code's actor config win.
        forceUpdateActorConfig: true,
      },
    });
    await worker.start();
    io.out(`worker started on queue ${DEMO_QUEUE} (concurrency 4)`);

    try {
      // @ts-expect-error -- the payload type is checked at compile time too; this shows the run-time check.
      await tq.enqueue(greet, { name: 42 });
    } catch (err) {
      if (!(err instanceof PayloadValidationError)) throw err;
      io.out(`refused at enqueue, nothing written: greet({ name: 42 }): ${err.message}`);
    }

    const t0 = performance.now();
    const jobs: DemoJob[] = [
      { handle: await tq.enqueue(greet, { name: 'Ada' }), expected: 'succeeded' },
      { handle: await tq.enqueue(add, { a: 2, b: 3 }), expected: 'succeeded' },
      { handle: await tq.enqueue(fetchRates, { currency: 'EUR' }), expected: 'succeeded' },
      {
        handle: await tq.enqueue(exportReport, { reportId: 'q3', readyAt: Date.now() + 400 }),
        expected: 'succeeded',
      },
      {
        handle: await tq.enqueue(sendReminder, { to: 'ada@example.com' }, { delay: '1s' }),
        expected: 'succeeded',
      },
      { handle: await tq.enqueue(chargeCard, { cents: 4200 }), expected: 'failed' },
    ];
    io.out(
      `enqueued ${jobs.length} jobs (send_reminder with a 1 s delay); each line below is one job finishing:`,
    );

    const outcomes = await Promise.all(jobs.map((job) => finish(job, io)));
    const counts = new Map<string, number>();
    for (const o of outcomes) counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
    const tally = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
    const unexpected = outcomes.filter((o) => !o.asExpected).length;
    io.out(
      `summary: ${jobs.length} jobs, ${tally}, ${seconds(performance.now() - t0)} after the first enqueue` +
        (unexpected === 0
          ? ' (all as intended: charge_card is meant to fail)'
          : `; ${unexpected} unexpected`),
    );

    const stopStart = performance.now();
    await worker.stop();
    worker = null;
    io.out(`worker stopped cleanly in ${seconds(performance.now() - stopStart)}`);
    io.out('next: the actors are in examples/demo/actors.ts; run yours with `taskq dev --module <file>`');
    return unexpected === 0 ? 0 : 1;
  } finally {
    await worker?.stop();
    await tq.close();
  }
}

/** Waits for one job, prints its line, and says how it ended. */
async function finish(job: DemoJob, io: DemoIo): Promise<{ status: string; asExpected: boolean }> {
  let row: JobRow;
  let shown: string;
  try {
    const result = await job.handle.wait({ timeout: JOB_TIMEOUT });
    row = job.handle.row;
    shown = `→ ${JSON.stringify(result)}`;
  } catch (err) {
    if (!(err instanceof JobFailed)) {
      const message = err instanceof Error ? err.message : String(err);
      io.out(`  ? ${job.handle.actorName.padEnd(14)} did not finish: ${message}`);
      return { status: 'unfinished', asExpected: false };
    }
    row = err.row;
    shown = `→ ${row.errorClass ?? 'Error'}: ${row.errorMessage ?? '(no message)'}`;
  }
  const asExpected = row.status === job.expected;
  const mark = row.status === 'succeeded' ? '✓' : '✗';
  const history = (await job.handle.attempts()).map((a) => a.outcome);
  const trail = history.length > 1 ? `  (attempt history: ${history.join(' → ')})` : '';
  io.out(
    `  ${mark} ${row.actor.padEnd(14)} ${row.status.padEnd(10)} attempts ${row.attempt}  ${shown}${trail}` +
      (asExpected ? '' : `  [expected ${job.expected}]`),
  );
  return { status: row.status, asExpected };
}

/**
 * The worker's warnings and errors that are not job outcomes, printed; its routine info lines are
 * not, and neither are its `job-attempt-failed` / `job-failed` lines: the demo's failures are
 * simulated, and each job's outcome is printed in the results above.
 */
const JOB_OUTCOME_EVENTS = new Set(['job-attempt-failed', 'job-failed']);

function problemsOnly(io: DemoIo): Logger {
  const print = (level: string, obj: object, msg?: string): void => {
    if (msg !== undefined && JOB_OUTCOME_EVENTS.has(msg)) return;
    const fields = Object.entries(obj)
      .map(([k, v]) => `${k}=${v instanceof Error ? v.message : JSON.stringify(v)}`)
      .join(' ');
    io.err(`[worker ${level}] ${msg ?? ''} ${fields}`.trimEnd());
  };
  const logger: Logger = {
    debug() {},
    info() {},
    warn: (obj, msg) => print('warn', obj, msg),
    error: (obj, msg) => print('error', obj, msg),
    child: () => logger,
  };
  return logger;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
