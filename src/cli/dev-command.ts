import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Command } from 'commander';

import type { AnyActor } from '../core/actor.js';
import { TaskQ } from '../client/taskq.js';
import type { PgCredentialProvider } from '../credentials/credential-types.js';
import type { Driver } from '../db/driver.js';
import { PgliteDriver } from '../db/pglite-driver.js';
import { Migrator } from '../migrations/migrator.js';
import type { WorkerSettingsInput } from '../settings/load-worker-settings.js';
import type { Worker } from '../worker/worker.js';
import { MissingDependencyError } from '../errors/missing-dependency-error.js';
import { checkCliDsn, cliCredentialProvider } from './connection-options.js';
import { CliExit, type CliIo } from './io.js';
import {
  loadActorModule,
  resolveWorkerSettings,
  runWorkerCommand,
  warnUnclaimedQueues,
} from './worker-command.js';

/** Flags of `taskq dev`. */
interface DevFlags {
  module?: string;
  dataDir?: string;
  untilIdle?: boolean;
}

/** What `examples/demo/main.ts` exports (declared here: the package build compiles `src/` only). */
interface DemoModule {
  runDemo(options: { io: Pick<CliIo, 'out' | 'err'>; dataDir: string; dsn?: string | null }): Promise<number>;
}

/**
 * Optional export of a `--module` run by `taskq dev`: called once the worker runs, with a client on
 * the worker's database, so the module can enqueue sample jobs (an embedded database accepts no
 * connection from another process).
 */
type SeedJobs = (tq: TaskQ) => unknown;

/** Where the embedded database lives: `--data-dir`, else `$TASKQ_DEV_DATA_DIR`, else `./.taskq-dev`. */
export function devDataDir(flags: { dataDir?: string }, io: CliIo): string {
  const fromEnv = io.env.TASKQ_DEV_DATA_DIR?.trim();
  return resolve(process.cwd(), flags.dataDir ?? (fromEnv ? fromEnv : '.taskq-dev'));
}

async function runBuiltInDemo(io: CliIo, dataDir: string, dsn: string | null): Promise<void> {
  // Resolved at run time so the package build (rootDir src/) never pulls examples/ in. From source
  // (tsx) the .js specifier finds main.ts; an installed package has no examples/ folder.
  const url = new URL('../../examples/demo/main.js', import.meta.url);
  const file = fileURLToPath(url);
  if (!existsSync(file) && !existsSync(file.replace(/\.js$/, '.ts'))) {
    throw new CliExit(
      2,
      'the built-in demo ships with the TaskQ source repository (examples/demo), not with this install; ' +
        'pass --module <path to your actors> to run your own',
    );
  }
  const { runDemo } = (await import(url.href)) as DemoModule;
  const code = await runDemo({ io, dataDir, dsn }).catch((err: unknown) => {
    if (err instanceof MissingDependencyError) throw new CliExit(2, err.message);
    throw err;
  });
  if (code !== 0) throw new CliExit(code, 'the demo did not finish as expected (see above)');
}

/**
 * Opens the embedded database in `dataDir`.
 * @throws CliExit (2) naming the package to install when PGlite is not installed
 */
async function openEmbedded(dataDir: string): Promise<PgliteDriver> {
  try {
    mkdirSync(dataDir, { recursive: true });
    return await PgliteDriver.open(dataDir);
  } catch (err) {
    if (err instanceof MissingDependencyError) throw new CliExit(2, err.message);
    throw err;
  }
}

/** Defaults the queues to the actors' home queues, unless `TASKQ_QUEUES` names them. */
function devOverrides(actors: readonly AnyActor[], io: CliIo): WorkerSettingsInput {
  if (io.env.TASKQ_QUEUES?.trim()) return {};
  return { queues: [...new Set(actors.map((a) => a.queue))] };
}

/**
 * Runs the module's `seedJobs(tq)` once the worker has started. A seeding failure is printed and
 * stops the worker (exit 1); this never rejects. On the embedded database the client shares the
 * worker's driver, so only the client's own subscription is closed afterwards, never the driver.
 */
async function seed(
  hook: SeedJobs,
  target:
    | { driver: Driver; schema: string }
    | { dsn: string; schema: string; pgCredentialProvider: PgCredentialProvider | null },
  worker: Worker,
  io: CliIo,
): Promise<void> {
  const shared = 'driver' in target;
  let tq: TaskQ | null = null;
  try {
    tq = shared
      ? new TaskQ(worker.jobsBackend)
      : await TaskQ.open({
          dsn: target.dsn,
          schema: target.schema,
          maxPoolSize: 2,
          // The worker authenticates through TASKQ_PG_CREDENTIAL_PROVIDER; the seeding client too.
          ...(target.pgCredentialProvider ? { pgCredentialProvider: target.pgCredentialProvider } : {}),
        });
    await hook(tq);
  } catch (err) {
    io.err(`taskq dev: seedJobs failed: ${(err as Error).stack ?? String(err)}`);
    await worker.stop('fatal');
  } finally {
    await tq?.close().catch(() => undefined);
  }
}

/** `taskq dev [--module <path>] [--data-dir <dir>] [--until-idle]`. */
export function devCommand(io: CliIo): Command {
  return new Command('dev')
    .description(
      'run a worker for development: on an embedded Postgres (PGlite), migrated automatically, when ' +
        'TASKQ_PG_DSN is unset; without --module, run the built-in demo',
    )
    .option('--module <path>', 'module exporting the actors (default: run the built-in demo)')
    .option('--data-dir <dir>', 'embedded database folder (default: $TASKQ_DEV_DATA_DIR or ./.taskq-dev)')
    .option('--until-idle', 'stop once the queues stay empty')
    .action(async (flags: DevFlags) => {
      const dsn = io.env.TASKQ_PG_DSN?.trim() ? checkCliDsn(io.env.TASKQ_PG_DSN, 'TASKQ_PG_DSN') : null;
      const dataDir = devDataDir(flags, io);
      if (flags.module === undefined) {
        await runBuiltInDemo(io, dataDir, dsn);
        return;
      }
      const { actors, schedules, payloadFactories, exports, rateLimitRegistry, providers } =
        await loadActorModule(flags.module, io);
      const fromModule = {
        schedules,
        payloadFactories,
        ...(rateLimitRegistry ? { rateLimitRegistry } : {}),
        ...(providers ? { providers } : {}),
      };
      const overrides = devOverrides(actors, io);
      const settings = resolveWorkerSettings(io, overrides);
      warnUnclaimedQueues(actors, settings.queues, io);
      const hook = typeof exports.seedJobs === 'function' ? (exports.seedJobs as SeedJobs) : null;
      const untilIdle = flags.untilIdle ?? false;
      const schema = settings.schema;
      const running = `actors ${actors.map((a) => a.name).join(', ')} on queues ${settings.queues.join(', ')}`;
      const stopHint = untilIdle ? '' : '; Ctrl-C stops';
      // `seed` reports its own failure; it is awaited so the database outlives it.
      let seeding: Promise<void> = Promise.resolve();

      if (dsn !== null) {
        const pgCredentialProvider = hook ? await cliCredentialProvider({}, io, 'pg') : null;
        io.out(`taskq dev: ${running}; Postgres from TASKQ_PG_DSN, schema ${schema}${stopHint}`);
        await runWorkerCommand(
          {
            actors,
            ...fromModule,
            env: io.env,
            settings: overrides,
            untilIdle,
            onStarted: (worker) => {
              if (hook) seeding = seed(hook, { dsn, schema, pgCredentialProvider }, worker, io);
            },
          },
          () =>
            `schema ${JSON.stringify(schema)} on TASKQ_PG_DSN is not migrated; run ` +
            `\`taskq migrate up --schema ${schema}\` first (taskq dev migrates only its embedded database)`,
        );
        await seeding;
        return;
      }

      const driver = await openEmbedded(dataDir);
      try {
        const { applied } = await new Migrator(driver, { schema }).up();
        for (const id of applied) io.out(`taskq dev: schema ${schema}: applied ${id}`);
        io.out(
          `taskq dev: ${running}; embedded Postgres (PGlite) in ${dataDir}, schema ${schema}${stopHint}`,
        );
        await runWorkerCommand({
          actors,
          ...fromModule,
          env: io.env,
          settings: overrides,
          driver,
          untilIdle,
          onStarted: (worker) => {
            if (hook) seeding = seed(hook, { driver, schema }, worker, io);
          },
        });
      } finally {
        await seeding;
        await driver.close();
      }
    });
}
