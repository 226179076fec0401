// One tick of the leader's cron loop (CronFirer.runOnce) against many due schedules.
//
//   npx tsx bench/cron-tick.ts [--rounds N]
//
// Postgres at BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test; a fresh schema,
// dropped afterwards). 10,000 enabled hourly schedules of a plain actor; before each round one
// UPDATE makes the first `due` of them due at the current hour's slot (inside the catch-up window,
// one slot each) and the rest due next hour, the previous round's jobs and fire records are
// deleted, and the tick is timed, split into the due reads, the fire writes (one fenced
// transaction per batch) and the rest (deciding in memory: slots, payloads, the jobs' arguments).
// Rows: 10,000, 1,000 and 100 due; the median round of each (after one warm-up round) is printed
// as a markdown table. The exit code is 1 only on errors (a tick that did not fire every due
// schedule included), never on times.
import { randomUUID } from 'node:crypto';

import { PostgresBackend } from '../src/backend/postgres/postgres-backend.js';
import type {
  DueSchedules,
  ScheduleFireDecision,
  ScheduleFireResult,
} from '../src/backend/schedule-types.js';
import type { LeaderFence } from '../src/backend/worker-types.js';
import { actor } from '../src/core/actor.js';
import { PgDriver } from '../src/db/pg-driver.js';
import { Migrator } from '../src/migrations/migrator.js';
import type { Logger } from '../src/obs/logger.js';
import { loadWorkerSettings } from '../src/settings/load-worker-settings.js';
import { CRON_FIRE_BATCH } from '../src/worker/maintenance/cron-firer.js';
import { MaintenanceLeader } from '../src/worker/maintenance/maintenance-leader.js';

const DSN = process.env.BENCH_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEDULES = 10_000;
const DUE = [10_000, 1_000, 100];
const roundsArg = process.argv.indexOf('--rounds');
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 5;
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds must be a positive integer`);

/** The backend with the time spent in the two cron statements' calls counted. */
class TimedBackend extends PostgresBackend {
  dueMs = 0;
  fireMs = 0;
  batches = 0;

  override async dueSchedules(limit: number): Promise<DueSchedules> {
    const t0 = performance.now();
    try {
      return await super.dueSchedules(limit);
    } finally {
      this.dueMs += performance.now() - t0;
    }
  }

  override async fireSchedules(
    decisions: readonly ScheduleFireDecision[],
    options: { autoDisableThreshold: number },
    fence?: LeaderFence,
  ): Promise<ScheduleFireResult[]> {
    const t0 = performance.now();
    this.batches++;
    try {
      return await super.fireSchedules(decisions, options, fence);
    } finally {
      this.fireMs += performance.now() - t0;
    }
  }

  reset(): void {
    this.dueMs = 0;
    this.fireMs = 0;
    this.batches = 0;
  }
}

interface Round {
  due: number;
  tickMs: number;
  dueMs: number;
  fireMs: number;
  batches: number;
}

const quiet: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => quiet,
};

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const schema = `bench_cron_${randomUUID().slice(0, 8)}`;
  const driver = new PgDriver({ connection: DSN, maxPoolSize: 4 });
  try {
    await new Migrator(driver, { schema }).up();
    const S = `"${schema}"`;
    const sql = (text: string, values: unknown[] = []) => driver.query(text.replaceAll('$S', S), values);
    const plain = actor({ name: 'bench_cron_plain' }, async () => undefined);
    await sql(
      `INSERT INTO $S.cron_schedules (id, actor, name, cron_expr, next_fire_at)
       SELECT gen_random_uuid(), $1, 'bench-' || i, '0 * * * *', date_trunc('hour', clock_timestamp()) + interval '1 hour'
       FROM generate_series(1, $2) AS i`,
      [plain.name, SCHEDULES],
    );
    const backend = new TimedBackend(driver, { schema });
    const { settings } = loadWorkerSettings({ overrides: { schema } });
    const leader = new MaintenanceLeader(
      backend,
      settings,
      { workerId: randomUUID(), hostname: 'bench' },
      quiet,
      (reason) => {
        throw new Error(`maintenance loop fatal: ${reason}`);
      },
      { actors: new Map([[plain.name, plain]]), factories: new Map() },
    );
    if (!(await leader.elector.runOnce())) throw new Error('the benchmark leader did not get the lease');

    const round = async (due: number): Promise<Round> => {
      await sql(`TRUNCATE $S.jobs, $S.cron_fires CASCADE`);
      // One UPDATE: the first `due` schedules at this hour's slot (one slot each, inside the
      // window), the rest at next hour's.
      await sql(
        `UPDATE $S.cron_schedules s
         SET next_fire_at = date_trunc('hour', clock_timestamp()) + CASE WHEN o.rn <= $1 THEN interval '0' ELSE interval '1 hour' END
         FROM (SELECT id, row_number() OVER (ORDER BY name) AS rn FROM $S.cron_schedules) o
         WHERE s.id = o.id`,
        [due],
      );
      await sql(`VACUUM ANALYZE $S.cron_schedules`);
      await sql(`VACUUM ANALYZE $S.jobs`);
      if (!(await leader.elector.runOnce())) throw new Error('the benchmark leader lost the lease');
      backend.reset();
      const t0 = performance.now();
      const report = await leader.cron.runOnce();
      const tickMs = performance.now() - t0;
      if (report.fired !== due || report.failed + report.stale !== 0)
        throw new Error(`tick of ${due} due schedules: ${JSON.stringify(report)}`);
      return { due, tickMs, dueMs: backend.dueMs, fireMs: backend.fireMs, batches: backend.batches };
    };

    const rows: Round[] = [];
    for (const due of DUE) {
      await round(due); // warm-up: statements planned, pool filled, caches warm
      const rs: Round[] = [];
      for (let i = 0; i < ROUNDS; i++) rs.push(await round(due));
      const mid = rs.find((r) => r.tickMs === median(rs.map((x) => x.tickMs)))!;
      rows.push(mid);
      process.stderr.write(`${due} due: ${rs.map((r) => r.tickMs.toFixed(0)).join(', ')} ms\n`);
    }
    await leader.elector.stop();

    const f = (n: number, d = 1) => n.toFixed(d);
    const lines = [
      `Cron tick: ${SCHEDULES.toLocaleString('en-US')} enabled schedules, CRON_FIRE_BATCH ${CRON_FIRE_BATCH}, median of ${ROUNDS} rounds`,
      '',
      '| due | ms per tick | µs per fire | batches | due reads ms | fire writes ms | deciding ms |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows.map(
        (r) =>
          `| ${r.due.toLocaleString('en-US')} | ${f(r.tickMs)} | ${f((r.tickMs * 1000) / r.due, 0)} | ${r.batches} | ${f(r.dueMs)} | ${f(r.fireMs)} | ${f(r.tickMs - r.dueMs - r.fireMs)} |`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await driver.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await driver.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
