import { Command } from 'commander';

import { PgDriver } from '../db/pg-driver.js';
import { Migrator, type MigrationPhase } from '../migrations/migrator.js';
import type { Logger } from '../obs/logger.js';
import { pgCredentialConfig } from '../credentials/pg-credential-config.js';
import {
  cliCredentialProvider,
  resolveConnection,
  type ConnectionFlags,
  type CredentialFlags,
} from './connection-options.js';
import { CliExit, type CliIo } from './io.js';

function phaseOf(value: string | undefined): MigrationPhase | undefined {
  if (value === undefined) return undefined;
  if (value !== 'pre' && value !== 'post')
    throw new CliExit(2, `--phase: ${JSON.stringify(value)} is invalid: must be pre or post`);
  return value;
}

/** Logger that prints warnings (checksum drift) to the command's stderr. */
function cliLogger(io: CliIo): Logger {
  const log: Logger = {
    debug() {},
    info() {},
    warn(obj, msg) {
      io.err(`warning: ${msg ?? ''} ${JSON.stringify(obj)}`);
    },
    error(obj, msg) {
      io.err(`error: ${msg ?? ''} ${JSON.stringify(obj)}`);
    },
    child: () => log,
  };
  return log;
}

/**
 * Runs `fn` with a migrator on the flags' connection (and credential provider), then closes it.
 * `taskq migrate` and `taskq ui serve` (`TASKQ_MIGRATE_ON_START`) share it.
 */
export async function withMigrator<T>(
  flags: ConnectionFlags & CredentialFlags,
  io: CliIo,
  fn: (m: Migrator) => Promise<T>,
): Promise<T> {
  const { dsn, schema } = resolveConnection(flags, io);
  const provider = await cliCredentialProvider(flags, io, 'pg');
  const driver = new PgDriver({
    connection: provider ? await pgCredentialConfig(dsn as string, provider, 'pool') : (dsn as string),
    maxPoolSize: 2,
    applicationName: 'taskq-migrate',
  });
  try {
    return await fn(new Migrator(driver, { schema, logger: cliLogger(io) }));
  } finally {
    await driver.close();
  }
}

/** `taskq migrate up|status|sql`. */
export function migrateCommand(io: CliIo): Command {
  const cmd = new Command('migrate').description('apply and inspect TaskQ schema migrations');
  cmd
    .command('up')
    .description('apply pending migrations (pre, then post) under an advisory lock')
    .option(
      '--phase <phase>',
      'apply only "pre" (safe during a rolling deploy) or "post" (after it) migrations',
    )
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option('--schema <schema>', 'schema to migrate (default: $TASKQ_SCHEMA_NAME or taskq)')
    .option(
      '--pg-credential-provider <module:export>',
      'Postgres credential provider (default: $TASKQ_PG_CREDENTIAL_PROVIDER); see docs/credentials.md',
    )
    .action(async (flags: ConnectionFlags & CredentialFlags & { phase?: string }) => {
      const phase = phaseOf(flags.phase);
      await withMigrator(flags, io, async (m) => {
        const { applied } = await m.up({ phase });
        if (applied.length === 0) io.out(`schema ${m.schema}: up to date`);
        for (const id of applied) io.out(`schema ${m.schema}: applied ${id}`);
      });
    });
  cmd
    .command('status')
    .description('list migrations and whether each is applied')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option('--schema <schema>', 'schema to inspect (default: $TASKQ_SCHEMA_NAME or taskq)')
    .option(
      '--pg-credential-provider <module:export>',
      'Postgres credential provider (default: $TASKQ_PG_CREDENTIAL_PROVIDER); see docs/credentials.md',
    )
    .action(async (flags: ConnectionFlags & CredentialFlags) => {
      await withMigrator(flags, io, async (m) => {
        const rows = await m.status();
        for (const r of rows) {
          const state = r.applied ? `applied ${r.appliedAt?.toISOString() ?? ''}` : 'pending';
          io.out(
            `${r.id.padEnd(32)} ${r.phase.padEnd(4)} ${state}${r.checksumDrift ? '  (checksum drift)' : ''}`,
          );
        }
        const pending = rows.filter((r) => !r.applied).length;
        io.out(
          pending === 0
            ? `schema ${m.schema}: up to date`
            : `schema ${m.schema}: ${pending} pending; run \`taskq migrate up\``,
        );
      });
    });
  cmd
    .command('sql')
    .description('print the migrations as one SQL script for your own migration tool')
    .option('--phase <phase>', 'only "pre" or only "post" migrations')
    .option('--schema <schema>', 'schema to render (default: $TASKQ_SCHEMA_NAME or taskq)')
    .action(async (flags: ConnectionFlags & { phase?: string }) => {
      const phase = phaseOf(flags.phase);
      const { schema } = resolveConnection(flags, io, { dsnRequired: false });
      // Rendering needs no connection; the driver is never used.
      const m = new Migrator(null as never, { schema });
      io.out(m.script({ phase }));
    });
  return cmd;
}
