import type pg from 'pg';

import type { Backend } from '../backend/backend.js';
import { openClientBackend } from '../backend/open-backend.js';
import { TaskQ } from '../client/taskq.js';

import { makePgPoolFactory } from '../credentials/pg-pool-factory.js';
import {
  resolveCredentialProvider,
  type ProviderKind,
  type ProviderOf,
} from '../credentials/provider-reference.js';
import { validateConnectionString } from '../db/connection-string.js';
import { CredentialProviderReferenceError } from '../errors/credential-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { validateSchemaName } from '../core/schema-name.js';
import { notAvailableEnvProblems } from '../settings/setting-fields.js';
import { SettingNotAvailableError } from '../settings/settings-error.js';
import { unknownEnvVarWarnings } from '../settings/unknown-env-vars.js';
import { importUserModule } from './import-user-module.js';
import { CliExit, type CliIo } from './io.js';

/** `--dsn` / `--schema` resolved over `TASKQ_PG_DSN` / `TASKQ_SCHEMA_NAME` (flags win). */
export interface ConnectionFlags {
  dsn?: string;
  schema?: string;
  pgCredentialProvider?: string;
}

/**
 * Checks a connection string the CLI read from `source` (`--dsn`, `TASKQ_PG_DSN`) with the rule
 * `TaskQ.open` applies, and returns it trimmed.
 * @throws CliExit (2) naming the source, the value with its password masked, and the rule
 */
export function checkCliDsn(dsn: string, source: string): string {
  try {
    return validateConnectionString(dsn, source);
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new CliExit(2, err.message);
    throw err;
  }
}

/**
 * Resolves the connection string and schema, failing with an actionable message (exit 2). A
 * variable TaskQ does not implement yet (a credential provider, say) fails it too, as it fails the
 * worker and client loaders: the command would otherwise connect without it, silently. A
 * `TASKQ_*` variable no part of TaskQ reads gets a warning on stderr, as the worker logs one.
 */
export function resolveConnection(
  flags: ConnectionFlags,
  io: CliIo,
  options: { dsnRequired?: boolean } = {},
): { dsn: string | null; schema: string } {
  const unavailable = notAvailableEnvProblems(io.env);
  if (unavailable.length > 0)
    throw new CliExit(2, new SettingNotAvailableError(unavailable, [], 'settings').message);
  // `TASKQ_SCHEMA=x taskq migrate up` would otherwise migrate the default schema without a word.
  for (const warning of unknownEnvVarWarnings(io.env)) io.err(`taskq: warning: ${warning}`);
  const raw = flags.dsn ?? io.env.TASKQ_PG_DSN ?? null;
  const source = flags.dsn !== undefined ? '--dsn' : 'TASKQ_PG_DSN';
  let dsn: string | null = null;
  // A command that never connects (`migrate sql`) neither needs nor checks a DSN.
  if (options.dsnRequired !== false) {
    if (raw === null || raw.trim() === '') {
      throw new CliExit(2, 'no database: pass --dsn postgres://... or set TASKQ_PG_DSN');
    }
    dsn = checkCliDsn(raw, source);
  }
  const rawSchema = flags.schema ?? io.env.TASKQ_SCHEMA_NAME ?? 'taskq';
  try {
    return {
      dsn,
      schema: validateSchemaName(rawSchema, flags.schema !== undefined ? '--schema' : 'TASKQ_SCHEMA_NAME'),
    };
  } catch (err) {
    throw new CliExit(2, (err as Error).message);
  }
}

/** The credential provider flags of the commands that connect. */
export interface CredentialFlags {
  pgCredentialProvider?: string;
  redisCredentialProvider?: string;
}

/**
 * The Postgres (or Redis) credential provider of a command: `--pg-credential-provider` over
 * `TASKQ_PG_CREDENTIAL_PROVIDER` (the Redis ones likewise), imported from the working directory
 * (TypeScript through the project's tsx). Null when neither is set.
 * @throws CliExit (1) naming the flag or variable, the reference and what is wrong with it
 */
export async function cliCredentialProvider<K extends ProviderKind>(
  flags: CredentialFlags,
  io: CliIo,
  kind: K,
): Promise<ProviderOf<K> | null> {
  const flag = kind === 'pg' ? '--pg-credential-provider' : '--redis-credential-provider';
  const env = kind === 'pg' ? 'TASKQ_PG_CREDENTIAL_PROVIDER' : 'TASKQ_REDIS_CREDENTIAL_PROVIDER';
  const given = kind === 'pg' ? flags.pgCredentialProvider : flags.redisCredentialProvider;
  const fromEnv = io.env[env]?.trim() ? io.env[env] : undefined;
  const reference = given ?? fromEnv;
  if (reference === undefined) return null;
  try {
    return await resolveCredentialProvider(reference.trim(), kind, given !== undefined ? flag : env, {
      importFile: (file, module) => importUserModule(file, module),
    });
  } catch (err) {
    if (err instanceof CredentialProviderReferenceError) throw new CliExit(1, err.message);
    throw err;
  }
}

/** The `--pg-credential-provider` option of the commands that connect. */
export const PG_CREDENTIAL_PROVIDER_OPTION = [
  '--pg-credential-provider <module:export>',
  'Postgres credential provider: an instance, factory or class a module exports (default: $TASKQ_PG_CREDENTIAL_PROVIDER)',
] as const;

/** The `--redis-credential-provider` option of the commands that build a Redis client from TASKQ_REDIS_URL. */
export const REDIS_CREDENTIAL_PROVIDER_OPTION = [
  '--redis-credential-provider <module:export>',
  'Redis credential provider, same shapes; needs TASKQ_REDIS_URL (default: $TASKQ_REDIS_CREDENTIAL_PROVIDER)',
] as const;

/**
 * Where a command's client backend connects: the DSN, or, with a Postgres credential provider (flag
 * or variable), a pool factory authenticating through it.
 * @throws CliExit (1) for a provider reference that cannot be used
 */
export async function cliPgSource(
  flags: CredentialFlags,
  io: CliIo,
  dsn: string,
  maxSize: number,
): Promise<{ dsn: string } | { poolFactory: () => Promise<pg.Pool> }> {
  const provider = await cliCredentialProvider(flags, io, 'pg');
  if (provider === null) return { dsn };
  return { poolFactory: makePgPoolFactory(dsn, provider, { maxSize, applicationName: 'taskq' }) };
}

/**
 * A client for one command, over one connection, from `--dsn` / `--schema` / the credential flags.
 * @throws CliExit (2) for a bad connection string, schema or option; (1) for an unusable provider
 */
export async function openCliClient(flags: ConnectionFlags & CredentialFlags, io: CliIo): Promise<TaskQ> {
  const { dsn, schema } = resolveConnection(flags, io);
  try {
    return await TaskQ.open({ ...(await cliPgSource(flags, io, dsn as string, 1)), schema, maxPoolSize: 1 });
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new CliExit(2, err.message);
    throw err;
  }
}

/** A backend for one command (the admin reads a client does not expose), as {@link openCliClient}. */
export async function openCliBackend(flags: ConnectionFlags & CredentialFlags, io: CliIo): Promise<Backend> {
  const { dsn, schema } = resolveConnection(flags, io);
  return openClientBackend({
    ...(await cliPgSource(flags, io, dsn as string, 1)),
    schema,
    maxPoolSize: 1,
    field: '--dsn',
  });
}
