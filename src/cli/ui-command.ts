import { Command } from 'commander';

import { serveAdmin, type AdminServer } from '../admin/serve-admin.js';
import { openClientBackend } from '../backend/open-backend.js';
import { TaskQ } from '../client/taskq.js';
import { AdminAuthRequiredError } from '../errors/admin-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { createLogger } from '../obs/logger.js';
import { RedisLiveProgress } from '../progress/redis-live-progress.js';
import { createOwnedRedis } from '../progress/redis-progress-publisher.js';
import { ReloadableRedisCredentials } from '../credentials/reloadable-redis-credentials.js';
import { loadWorkerSettings, SettingsError } from '../settings/load-worker-settings.js';
import { ignoredSsoVars, ssoEnvVarOf, ssoOptionsFromEnv } from '../settings/sso-settings.js';
import type { WorkerSettings } from '../settings/worker-settings.js';
import {
  cliCredentialProvider,
  cliPgSource,
  PG_CREDENTIAL_PROVIDER_OPTION,
  REDIS_CREDENTIAL_PROVIDER_OPTION,
  resolveConnection,
  type ConnectionFlags,
} from './connection-options.js';
import { CliExit, stopped, type CliIo } from './io.js';
import { withMigrator } from './migrate-command.js';
import { loadActorModule } from './worker-command.js';

/** Flags of `taskq ui serve`. */
interface ServeFlags extends ConnectionFlags {
  redisCredentialProvider?: string;
  host?: string;
  port?: string;
  module?: string;
}

/** `--port` as a number, or a CLI error naming the rule (exit 2). */
function parsePort(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n > 65_535)
    throw new CliExit(2, `--port: ${JSON.stringify(text)} is invalid: must be an integer from 0 to 65535`);
  return n;
}

/**
 * `TASKQ_MIGRATE_ON_START`: applies pending migrations before the UI serves anything. A failure
 * aborts the start (exit 1): serving a half-migrated schema would answer with errors.
 */
async function migrateBeforeServing(flags: ServeFlags, io: CliIo, schema: string): Promise<void> {
  try {
    const { applied } = await withMigrator(flags, io, (m) => m.up());
    io.out(
      applied.length === 0
        ? `TASKQ_MIGRATE_ON_START: schema ${schema} is up to date`
        : `TASKQ_MIGRATE_ON_START: applied ${applied.join(', ')} to schema ${schema}`,
    );
  } catch (err) {
    if (err instanceof CliExit) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new CliExit(1, `TASKQ_MIGRATE_ON_START: migrating schema ${schema} failed: ${message}`);
  }
}

/**
 * `taskq ui serve`: the admin UI on `TASKQ_ADMIN_HOST:TASKQ_ADMIN_PORT` (flags win) until SIGINT /
 * SIGTERM. Authentication is the bearer token `TASKQ_HEALTH_TOKEN` (header or login form) and/or
 * single sign-on (`TASKQ_SSO_BACKEND=oidc|saml` with the `TASKQ_OIDC_*` / `TASKQ_SAML_*`
 * variables; a missing required one exits 2 naming it); without either it starts only in
 * `TASKQ_ENVIRONMENT=dev` or with `TASKQ_ADMIN_UI_REQUIRE_AUTH=false`, and otherwise exits 2
 * saying so. Every other `TASKQ_ADMIN_*` setting in docs/ui.md applies. With `--module`, the
 * module's actors (found as `taskq worker` finds them) are the code the actors page checks stored
 * configuration against (drift). With `TASKQ_REDIS_URL`, the rate-limits page reads Redis-backed
 * state through it.
 */
export function uiCommand(io: CliIo): Command {
  const cmd = new Command('ui').description('the admin web UI');
  cmd
    .command('serve')
    .description('serve the admin UI until SIGINT/SIGTERM')
    .option('--host <host>', 'bind address (default: $TASKQ_ADMIN_HOST or 0.0.0.0)')
    .option('--port <port>', 'TCP port, 0 = a free one (default: $TASKQ_ADMIN_PORT or 8080)')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option(...REDIS_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)')
    .option('--module <file>', "your actors' module, so the actors page shows drift against the code")
    .action(async (flags: ServeFlags) => {
      const { dsn, schema } = resolveConnection(flags, io);
      // Loaded before connecting: a bad module is a usage error (exit 2) whatever the database.
      const actors =
        flags.module === undefined ? undefined : (await loadActorModule(flags.module, io)).actors;
      const overrides: Partial<WorkerSettings> = {};
      if (flags.host !== undefined) overrides.adminHost = flags.host;
      if (flags.port !== undefined) overrides.adminPort = parsePort(flags.port);
      let settings: WorkerSettings;
      try {
        ({ settings } = loadWorkerSettings({ env: io.env, overrides }));
      } catch (err) {
        if (err instanceof SettingsError) throw new CliExit(2, err.message);
        throw err;
      }
      const logger = createLogger({ level: settings.logLevel, format: settings.logFormat });
      if (settings.migrateOnStart) await migrateBeforeServing(flags, io, schema);
      const ignored = ignoredSsoVars(io.env, settings.ssoBackend);
      if (ignored.length > 0)
        io.err(`${ignored.join(', ')} ignored: TASKQ_SSO_BACKEND is ${settings.ssoBackend}`);
      let sso: ReturnType<typeof ssoOptionsFromEnv>;
      try {
        sso = ssoOptionsFromEnv(io.env, settings.ssoBackend, settings.adminUrl);
      } catch (err) {
        if (err instanceof InvalidArgumentError) throw new CliExit(2, err.message);
        throw err;
      }
      // Imported before connecting, so a bad reference ends the command (exit 1) saying what is wrong.
      const redisProvider = await cliCredentialProvider(flags, io, 'redis');
      if (redisProvider && settings.redisUrl === null)
        throw new CliExit(
          2,
          'a Redis credential provider needs TASKQ_REDIS_URL: it authenticates the Redis client the UI builds from it',
        );
      const backend = await openClientBackend({
        ...(await cliPgSource(flags, io, dsn as string, 4)),
        schema,
        maxPoolSize: 4,
        field: '--dsn',
      });
      // TASKQ_REDIS_URL gives the UI the Redis-backed rate limits' state (the client owns and closes it).
      const redis = settings.redisUrl
        ? createOwnedRedis(settings.redisUrl, 'TASKQ_REDIS_URL', {
            connectionName: 'taskq-admin-ui',
            lazyConnect: true,
            credentials: redisProvider
              ? new ReloadableRedisCredentials({ name: 'redis:admin-ui', provider: redisProvider, logger })
              : null,
          })
        : null;
      if (redis) {
        redis.on('error', () => undefined);
        await redis
          .connect()
          .catch(() => io.err(`taskq: Redis at TASKQ_REDIS_URL is unreachable; rate limits read Postgres`));
      }
      const tq = new TaskQ(backend, {
        ownsBackend: true,
        liveProgress: redis ? new RedisLiveProgress(redis, schema, { owned: true, logger }) : null,
      });
      let server: AdminServer;
      try {
        await backend.verifySchema();
        server = await serveAdmin({
          tq,
          host: settings.adminHost,
          port: settings.adminPort,
          token: settings.healthToken,
          environment: settings.environment,
          requireAuth: settings.adminUiRequireAuth,
          actionsEnabled: settings.adminActionsEnabled,
          allowRateLimitReset: settings.adminUiAllowRateLimitReset,
          frameAncestors: settings.adminUiFrameAncestors,
          secureCookies: settings.adminUiSecureCookies,
          maxSseConnections: settings.adminMaxSseConnections,
          pollInterval: Math.round(settings.adminUiPollingIntervalSeconds * 1000),
          workerLiveness: settings.adminWorkerLivenessSeconds * 1000,
          adminUrl: settings.adminUrl,
          ...sso,
          logger,
          ...(actors === undefined ? {} : { actors }),
        });
      } catch (err) {
        await tq.close();
        if (err instanceof InvalidArgumentError) {
          const from = ssoEnvVarOf(err.field);
          throw new CliExit(2, from === undefined ? err.message : `${from}: ${err.message}`);
        }
        if (err instanceof AdminAuthRequiredError) throw new CliExit(2, err.message);
        if (err instanceof Error && 'code' in err && err.code === 'EADDRINUSE')
          throw new CliExit(2, `port ${settings.adminPort} is in use by another process`);
        throw err;
      }
      io.out(`serving the admin UI of schema ${schema} at ${server.url}/`);
      // Behind a proxy or with SSO the bind address is not what a browser should open.
      if (settings.adminUrl !== null) io.out(`open it at ${settings.adminUrl.replace(/\/+$/, '')}/`);
      await stopped(io);
      await server.close();
      await tq.close();
    });
  return cmd;
}
