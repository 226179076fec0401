import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

import { Command } from 'commander';

import type { AnyActor } from '../core/actor.js';
import { isCronDeclaration, type CronDeclaration, type PayloadFactory } from '../cron/cron-declaration.js';
import { ActorConfigDriftList } from '../errors/actor-config-errors.js';
import { SchemaNotMigratedError, SchemaTooNewError } from '../errors/schema-errors.js';
import { TaskQError } from '../errors/taskq-error.js';
import {
  loadWorkerSettings,
  SettingsError,
  type WorkerSettingsInput,
} from '../settings/load-worker-settings.js';
import type { WorkerSettings } from '../settings/worker-settings.js';
import { EXIT_CODES, runWorker, type RunWorkerOptions } from '../worker/run-worker.js';
import { MissingProvider } from '../errors/missing-provider-error.js';
import { DependencyCycle, DependencyValidationError, DIError, ScopeViolation } from '../errors/di-errors.js';
import { Providers } from '../di/providers.js';
import { RateLimitRegistry } from '../ratelimit/registry.js';
import { importUserModule, type ImportUserModuleOptions } from './import-user-module.js';
import { cliCredentialProvider, REDIS_CREDENTIAL_PROVIDER_OPTION } from './connection-options.js';
import { CliExit, type CliIo } from './io.js';

/** Flags of `taskq worker` as commander hands them over (all text). */
export interface WorkerFlags {
  module?: string;
  queues?: string;
  concurrency?: string;
  untilIdle?: boolean;
  dsn?: string;
  schema?: string;
  pgCredentialProvider?: string;
  redisCredentialProvider?: string;
}

/** Which flag set which override, so a settings problem names the flag the user typed. */
const FLAG_OF_SETTING: Readonly<Record<string, string>> = {
  'settings.pgDsn': '--dsn',
  'settings.schema': '--schema',
  'settings.queues': '--queues',
  'settings.maxConcurrency': '--concurrency',
};

/** True for what `actor()` returns; checked structurally so a module may bundle its own copy of taskq. */
export function looksLikeActor(value: unknown): value is AnyActor {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.name === 'string' &&
    typeof v.queue === 'string' &&
    typeof v.handler === 'function' &&
    v.retry !== null &&
    typeof v.retry === 'object'
  );
}

/** A loaded `--module`: its actors, schedules, payload factories and all its exports. */
export interface ActorModule {
  actors: AnyActor[];
  /** Its exported `cron()` declarations (each export, or the items of an exported array), for `schedules`. */
  schedules: CronDeclaration[];
  /** Its exported `payloadFactories` object (name → function), for schedules created at run time. */
  payloadFactories: Record<string, PayloadFactory>;
  exports: Record<string, unknown>;
  /** The module's exported `RateLimitRegistry`, where actors' limit names resolve (or undefined). */
  rateLimitRegistry: RateLimitRegistry | undefined;
  /** The module's exported `Providers`, the values its actors `inject` (or undefined). */
  providers: Providers | undefined;
}

/**
 * Imports the module at `modulePath` (relative to the current directory) and finds its actors:
 * a default export that is an array of actors, or else every export that is an actor. Its `cron()`
 * declarations (every export that is one, or an array of them; items of a default array too) and
 * its `payloadFactories` export become the worker's `schedules` and `payloadFactories`. An exported
 * `RateLimitRegistry` and an exported `Providers` (at most one of each) are handed to the worker. A TypeScript module is loaded through
 * the project's tsx on a Node.js that cannot load TypeScript itself (see `importUserModule`).
 * @throws CliExit (2) when the file is missing, fails to load, or holds no actors.
 */
export async function loadActorModule(
  modulePath: string,
  io: CliIo,
  options: ImportUserModuleOptions = {},
): Promise<ActorModule> {
  const file = resolve(process.cwd(), modulePath);
  if (!existsSync(file)) throw new CliExit(2, `--module ${modulePath}: no such file (looked for ${file})`);
  let mod: Record<string, unknown>;
  try {
    mod = commonJsExports(await importUserModule(file, modulePath, options));
  } catch (err) {
    if (err instanceof CliExit) throw err;
    const e = err as { message?: string; stack?: string };
    // A bug in the user's module: its stack says where.
    if (!(err instanceof TaskQError) && e.stack) io.err(e.stack);
    throw new CliExit(2, `--module ${modulePath}: loading it failed: ${e.message ?? String(err)}`);
  }
  const actors = actorsOf(mod, modulePath);
  return {
    actors,
    schedules: schedulesOf(mod, actors, modulePath),
    payloadFactories: payloadFactoriesOf(mod, modulePath),
    exports: mod,
    rateLimitRegistry: onlyInstanceOf(RateLimitRegistry, 'rate-limit registries', mod, modulePath),
    providers: onlyInstanceOf(Providers, 'dependency providers (Providers)', mod, modulePath),
  };
}

/**
 * The module's `cron()` declarations: every export that is one, and the items of every exported
 * array of them (a default array of actors may list them too). Each must schedule one of the
 * module's actors: the leader fires a schedule with the actor's definition, so a worker refuses a
 * declaration of an actor it does not run.
 */
function schedulesOf(
  mod: Record<string, unknown>,
  actors: readonly AnyActor[],
  modulePath: string,
): CronDeclaration[] {
  const found: { exportName: string; decl: CronDeclaration }[] = [];
  for (const [exportName, value] of Object.entries(mod)) {
    if (isCronDeclaration(value)) found.push({ exportName, decl: value });
    else if (Array.isArray(value))
      value.forEach((item: unknown, i) => {
        if (isCronDeclaration(item)) found.push({ exportName: `${exportName}[${i}]`, decl: item });
      });
  }
  const byKey = new Map<string, { exportName: string; decl: CronDeclaration }>();
  for (const entry of found) {
    const { decl, exportName } = entry;
    const key = `${decl.actor.name}\u0000${decl.name}`;
    const seen = byKey.get(key);
    if (seen !== undefined) {
      if (seen.decl === decl) continue;
      throw new CliExit(
        2,
        `--module ${modulePath}: exports ${seen.exportName} and ${exportName} are two schedules of actor ` +
          `${JSON.stringify(decl.actor.name)} named ${JSON.stringify(decl.name)}; give one another name`,
      );
    }
    if (!actors.includes(decl.actor))
      throw new CliExit(
        2,
        `--module ${modulePath}: export ${exportName} schedules actor ${JSON.stringify(decl.actor.name)}, ` +
          'which the module does not export as an actor; export the actor too (the leader runs what it fires)',
      );
    byKey.set(key, entry);
  }
  return [...byKey.values()].map((e) => e.decl);
}

/** The `payloadFactories` export: an object of functions by name (or none). */
function payloadFactoriesOf(
  mod: Record<string, unknown>,
  modulePath: string,
): Record<string, PayloadFactory> {
  const value = mod.payloadFactories;
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new CliExit(
      2,
      `--module ${modulePath}: export payloadFactories must be an object of functions by name ({ name: (ctx) => payload })`,
    );
  for (const [name, fn] of Object.entries(value as Record<string, unknown>))
    if (typeof fn !== 'function')
      throw new CliExit(
        2,
        `--module ${modulePath}: payloadFactories.${name} is not a function (a payload factory is called with ` +
          '{ scheduleId, scheduleName, actor, fireAt } and returns the payload)',
      );
  return { ...(value as Record<string, PayloadFactory>) };
}

/**
 * The exports of a CommonJS module whose named exports Node could not detect (the namespace then
 * holds only `default`, the `module.exports` object), else the namespace as it is. A default export
 * that is itself an actor or an array stays as it is.
 */
function commonJsExports(ns: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(ns).filter((k) => k !== 'module.exports');
  const value = ns.default;
  if (keys.length !== 1 || keys[0] !== 'default' || value === null || typeof value !== 'object') return ns;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (Array.isArray(value) || looksLikeActor(value) || (proto !== Object.prototype && proto !== null))
    return ns;
  return { ...(value as Record<string, unknown>) };
}

/** The one exported instance of `cls` (the same object may be exported under several names). */
function onlyInstanceOf<T>(
  cls: abstract new (...args: never[]) => T,
  what: string,
  mod: Record<string, unknown>,
  modulePath: string,
): T | undefined {
  const found = Object.entries(mod).filter(([, v]) => v instanceof cls);
  const distinct = new Set(found.map(([, v]) => v));
  if (distinct.size > 1)
    throw new CliExit(
      2,
      `--module ${modulePath}: exports ${found.map(([k]) => k).join(' and ')} are different ${what}; export one`,
    );
  return found[0]?.[1] as T | undefined;
}

function actorsOf(mod: Record<string, unknown>, modulePath: string): AnyActor[] {
  const found: { exportName: string; actor: AnyActor }[] = [];
  if (Array.isArray(mod.default)) {
    mod.default.forEach((item: unknown, i) => {
      if (isCronDeclaration(item)) return;
      if (!looksLikeActor(item)) {
        throw new CliExit(
          2,
          `--module ${modulePath}: the default export is an array, but item ${i} is neither an actor declared with actor() nor a schedule declared with cron()`,
        );
      }
      found.push({ exportName: `default[${i}]`, actor: item });
    });
  } else {
    for (const [exportName, value] of Object.entries(mod)) {
      if (looksLikeActor(value)) found.push({ exportName, actor: value });
    }
  }
  const byName = new Map<string, { exportName: string; actor: AnyActor }>();
  for (const entry of found) {
    const seen = byName.get(entry.actor.name);
    if (seen === undefined) byName.set(entry.actor.name, entry);
    else if (seen.actor !== entry.actor) {
      throw new CliExit(
        2,
        `--module ${modulePath}: exports ${seen.exportName} and ${entry.exportName} are two different actors ` +
          `named ${JSON.stringify(entry.actor.name)}; actor names must be unique`,
      );
    }
  }
  if (byName.size === 0) {
    throw new CliExit(
      2,
      `--module ${modulePath}: no actors found; export the actors declared with actor() ` +
        '(export const sendEmail = actor(...)), or export default [sendEmail, ...]',
    );
  }
  return [...byName.values()].map((e) => e.actor);
}

/** `--dsn`, `--schema`, `--queues`, `--concurrency` as settings overrides (they win over TASKQ_*). */
export function settingsFromFlags(flags: WorkerFlags): WorkerSettingsInput {
  const s: WorkerSettingsInput = {};
  if (flags.dsn !== undefined) s.pgDsn = flags.dsn;
  if (flags.schema !== undefined) s.schema = flags.schema;
  // Empty entries are kept so the settings loader can point at the stray comma.
  if (flags.queues !== undefined) s.queues = flags.queues.split(',').map((q) => q.trim());
  if (flags.concurrency !== undefined) {
    const text = flags.concurrency.trim();
    // Text that is not an integer goes through as text, so the loader reports it with the rule.
    s.maxConcurrency = (/^[+-]?\d+$/.test(text) ? Number(text) : flags.concurrency) as number;
  }
  return s;
}

/**
 * Resolves settings from `io.env` overlaid with `overrides`, as `runWorker` will, so bad values
 * end the command (exit 2) before anything connects; problems from flags name the flag.
 */
export function resolveWorkerSettings(io: CliIo, overrides: WorkerSettingsInput): WorkerSettings {
  try {
    return loadWorkerSettings({ env: io.env, overrides }).settings;
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    const renamed = err.problems.map((p) => ({ ...p, source: FLAG_OF_SETTING[p.source] ?? p.source }));
    throw new CliExit(2, new SettingsError(renamed, err.warnings).message);
  }
}

/**
 * Runs `runWorker` and turns its outcome into the command's: 0 returns normally; a startup refusal
 * the operator must fix (unmigrated or too-new schema, actor config drift, a missing rate limit or
 * dependency provider, a dependency cycle or scope violation, a failing process- or worker-scoped
 * factory) exits 2; an until-idle
 * timeout exits 4; a fatal stop exits 1. `notMigrated` words the message for an unmigrated schema.
 */
export async function runWorkerCommand(
  options: RunWorkerOptions,
  notMigrated: (err: SchemaNotMigratedError) => string = (err) => err.message,
): Promise<void> {
  let code: number;
  try {
    code = await runWorker(options);
  } catch (err) {
    if (err instanceof SchemaNotMigratedError) throw new CliExit(2, notMigrated(err));
    if (
      err instanceof SettingsError ||
      err instanceof SchemaTooNewError ||
      err instanceof ActorConfigDriftList ||
      err instanceof MissingProvider ||
      err instanceof DIError ||
      err instanceof DependencyCycle ||
      err instanceof ScopeViolation ||
      err instanceof DependencyValidationError
    ) {
      throw new CliExit(2, err.message);
    }
    throw err;
  }
  if (code === EXIT_CODES['idle-timeout']) {
    throw new CliExit(
      code,
      'until-idle: the queues were still busy when TASKQ_IDLE_MAX_RUNTIME ran out; the worker stopped',
    );
  }
  if (code !== 0) throw new CliExit(code, 'the worker stopped after a fatal error (see its log above)');
}

/** Warns about actors whose home queue this worker does not claim from (their jobs would wait). */
export function warnUnclaimedQueues(actors: readonly AnyActor[], queues: readonly string[], io: CliIo): void {
  for (const a of actors) {
    if (!queues.includes(a.queue)) {
      io.err(
        `warning: actor ${a.name}'s home queue ${JSON.stringify(a.queue)} is not among this worker's queues ` +
          `(${queues.join(', ')}); its jobs there will wait. Pass --queues or set TASKQ_QUEUES.`,
      );
    }
  }
}

/** `taskq worker --module <path> [...]`. */
export function workerCommand(io: CliIo): Command {
  return new Command('worker')
    .description('run a worker for the actors exported by a module')
    .option(
      '--module <path>',
      'module exporting the actors (each actor export, or a default export array of actors), ' +
        'its cron() schedules and a payloadFactories object',
    )
    .option('--queues <list>', 'comma-separated queues to claim from (default: $TASKQ_QUEUES or default)')
    .option('--concurrency <n>', 'jobs run at once (default: $TASKQ_MAX_CONCURRENCY or 8)')
    .option('--until-idle', 'stop once the queues stay empty (exit 4 after $TASKQ_IDLE_MAX_RUNTIME)')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option('--schema <schema>', 'schema holding the TaskQ tables (default: $TASKQ_SCHEMA_NAME or taskq)')
    .option(
      '--pg-credential-provider <module:export>',
      'Postgres credential provider: an instance, factory or class a module exports (default: $TASKQ_PG_CREDENTIAL_PROVIDER)',
    )
    .option(...REDIS_CREDENTIAL_PROVIDER_OPTION)
    .action(async (flags: WorkerFlags) => {
      if (flags.module === undefined || flags.module.trim() === '') {
        throw new CliExit(2, 'no actors: pass --module <path to the module exporting your actors>');
      }
      const overrides = settingsFromFlags(flags);
      const settings = resolveWorkerSettings(io, overrides);
      if (settings.pgDsn === null) {
        throw new CliExit(
          2,
          'no database configured: set TASKQ_PG_DSN (or pass --dsn postgres://...), ' +
            'or run `taskq dev` to work on an embedded Postgres',
        );
      }
      const { actors, schedules, payloadFactories, rateLimitRegistry, providers } = await loadActorModule(
        flags.module,
        io,
      );
      warnUnclaimedQueues(actors, settings.queues, io);
      // Imported here, so a bad reference ends the command (exit 1) with what is wrong with it.
      const pgCredentialProvider = await cliCredentialProvider(flags, io, 'pg');
      const redisCredentialProvider = await cliCredentialProvider(flags, io, 'redis');
      if (redisCredentialProvider && settings.redisUrl === null)
        throw new CliExit(
          2,
          'a Redis credential provider needs TASKQ_REDIS_URL: it authenticates the Redis clients TaskQ builds from it',
        );
      await runWorkerCommand({
        ...(pgCredentialProvider ? { pgCredentialProvider } : {}),
        ...(redisCredentialProvider ? { redisCredentialProvider } : {}),
        actors,
        schedules,
        payloadFactories,
        ...(rateLimitRegistry ? { rateLimitRegistry } : {}),
        ...(providers ? { providers } : {}),
        env: io.env,
        settings: overrides,
        untilIdle: flags.untilIdle ?? false,
      });
    });
}
