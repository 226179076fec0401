import { Command } from 'commander';

import type { EnqueueOptions } from '../client/enqueue-options.js';
import type { AnyActor } from '../core/actor.js';
import { BackpressureError } from '../errors/backpressure-errors.js';
import { IdempotencyKeyConflict } from '../errors/idempotency-key-conflict.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { SchemaNotMigratedError, SchemaTooNewError } from '../errors/schema-errors.js';
import { openCliClient, PG_CREDENTIAL_PROVIDER_OPTION, type ConnectionFlags } from './connection-options.js';
import { CliExit, type CliIo } from './io.js';
import { parsePayloadFlag, payloadFlagExit } from './payload-flag.js';
import { jobJson } from './job-view.js';
import { loadActorModule } from './worker-command.js';

/** Flags of `taskq jobs enqueue`. */
interface EnqueueFlags extends ConnectionFlags {
  module?: string;
  payload?: string;
  queue?: string;
  delay?: string;
  scheduledAt?: string;
  priority?: string;
  identityKey?: string;
  fairnessKey?: string;
  idempotencyKey?: string;
  idempotencyScope?: string;
  tag?: string[];
  json?: boolean;
}

/** The client's option names (`enqueue.<option>`) as the flags the user typed. */
const FLAG_OF_OPTION: Readonly<Record<string, string>> = {
  queue: '--queue',
  delay: '--delay',
  scheduledAt: '--scheduled-at',
  priority: '--priority',
  identityKey: '--identity-key',
  fairnessKey: '--fairness-key',
  idempotencyKey: '--idempotency-key',
  idempotencyScope: '--idempotency-scope',
  tags: '--tag',
};

/** An InvalidArgumentError of `enqueue()` with its field renamed to the flag (`enqueue.delay` → `--delay`). */
function flagMessage(err: InvalidArgumentError): string {
  const match = /^enqueue\.([A-Za-z]+)/.exec(err.field);
  const flag = match ? FLAG_OF_OPTION[match[1]!] : undefined;
  if (flag === undefined || !err.message.startsWith(err.field)) return err.message;
  return `${flag}${err.field.slice(match![0].length)}${err.message.slice(err.field.length)}`;
}

/**
 * The flags as `enqueue()` options. Only the command line's own forms are checked here (an integer,
 * a time, a duration's digits); every rule of the options is the client's, reported by flag.
 */
function optionsOf(flags: EnqueueFlags): EnqueueOptions {
  const options: EnqueueOptions = {};
  if (flags.delay !== undefined && flags.scheduledAt !== undefined)
    throw new CliExit(2, '--delay and --scheduled-at are mutually exclusive: give one');
  // A scope only scopes a key: alone it would do nothing.
  if (flags.idempotencyScope !== undefined && flags.idempotencyKey === undefined)
    throw new CliExit(2, '--idempotency-scope needs --idempotency-key: a scope applies to a key');
  if (flags.queue !== undefined) options.queue = flags.queue;
  if (flags.delay !== undefined)
    options.delay = /^\d+$/.test(flags.delay) ? Number(flags.delay) : flags.delay;
  if (flags.scheduledAt !== undefined) {
    const at = new Date(flags.scheduledAt);
    if (Number.isNaN(at.getTime()))
      throw new CliExit(
        2,
        `--scheduled-at: ${JSON.stringify(flags.scheduledAt)} is invalid: must be a time such as 2026-12-24T18:00:00Z`,
      );
    options.scheduledAt = at;
  }
  if (flags.priority !== undefined) {
    if (!/^-?\d+$/.test(flags.priority))
      throw new CliExit(2, `--priority: ${JSON.stringify(flags.priority)} is invalid: must be an integer`);
    options.priority = Number(flags.priority);
  }
  if (flags.identityKey !== undefined) options.identityKey = flags.identityKey;
  if (flags.fairnessKey !== undefined) options.fairnessKey = flags.fairnessKey;
  if (flags.idempotencyKey !== undefined) options.idempotencyKey = flags.idempotencyKey;
  if (flags.idempotencyScope !== undefined) options.idempotencyScope = flags.idempotencyScope;
  if (flags.tag !== undefined) options.tags = flags.tag.flatMap((t) => t.split(','));
  return options;
}

/** The module's actor named `name`, or exit 2 naming the actors it has. */
function actorNamed(actors: readonly AnyActor[], name: string, modulePath: string): AnyActor {
  const found = actors.find((a) => a.name === name);
  if (found) return found;
  const names = actors.map((a) => a.name).join(', ');
  throw new CliExit(
    2,
    `<actor>: ${JSON.stringify(name)} is not an actor of --module ${modulePath} (it has ${names})`,
  );
}

/**
 * `taskq jobs enqueue <actor> --module <path> [--payload <json>] [options] [--json]`: one job, by
 * the client's `enqueue()` with the actor as the module declares it, so the payload is checked
 * against its schema and every gate applies (see docs/cli.md). Exit 0 with the job (a new one, or
 * the existing one an idempotency key or `uniqueFor` returned), 1 when a gate refuses it, 2 for bad
 * input; nothing is written unless it exits 0. The `taskq jobs` group attaches it.
 */
export function jobsEnqueueCommand(io: CliIo): Command {
  return new Command('enqueue')
    .description(
      "enqueue one job of an actor a module declares (its payload checked against the actor's schema)",
    )
    .argument('<actor>', 'the actor name')
    .option('--module <path>', 'module exporting the actor, as for taskq worker (required)')
    .option('--payload <json>', 'the payload, as JSON (default: null)')
    .option('--queue <queue>', "queue override (default: the actor's queue)")
    .option(
      '--delay <duration>',
      "run after this long, e.g. '30s', '5m' or ms (exclusive with --scheduled-at)",
    )
    .option('--scheduled-at <time>', 'run at this time, ISO 8601 (e.g. 2026-12-24T18:00:00Z)')
    .option('--priority <n>', "higher runs first (default: the actor's)")
    .option('--identity-key <key>', 'business key: at most one running job per actor and key')
    .option('--fairness-key <key>', 'cohort for round_robin queues')
    .option('--idempotency-key <key>', 'deduplicate: an existing job with this key is returned instead')
    .option('--idempotency-scope <scope>', "the scope of --idempotency-key (default: '', the global scope)")
    .option(
      '--tag <tags>',
      'tags for filtering, comma-separated or repeated',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--json', 'print the job as JSON (dates in ISO 8601)')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)')
    .action(async (name: string, flags: EnqueueFlags) => {
      // Everything the command line alone decides is checked before the module loads or a
      // connection opens: bad input is a usage error whether or not the database is up.
      if (flags.module === undefined)
        throw new CliExit(2, 'pass --module <path>: the module exporting the actor (as for taskq worker)');
      // No --payload: null, the payload of an actor that takes none.
      const payload = parsePayloadFlag(flags.payload) ?? null;
      const options = optionsOf(flags);
      const ref = actorNamed((await loadActorModule(flags.module, io)).actors, name, flags.module);
      const tq = await openCliClient(flags, io);
      try {
        const handle = await tq.enqueue(ref, payload, options);
        const row = handle.row;
        if (flags.json) {
          io.out(JSON.stringify({ ...jobJson(row, false), existing: handle.wasExisting }, null, 2));
          return;
        }
        const when = row.status === 'scheduled' ? ` at ${row.scheduledAt.toISOString()}` : '';
        io.out(
          `${handle.wasExisting ? 'existing job' : 'enqueued job'} ${row.id} (actor ${row.actor}, queue ${row.queue}): ${row.status}${when}`,
        );
      } catch (err) {
        if (err instanceof InvalidArgumentError) throw new CliExit(2, flagMessage(err));
        const payloadExit = payloadFlagExit(err);
        if (payloadExit) throw payloadExit;
        if (err instanceof SchemaNotMigratedError || err instanceof SchemaTooNewError)
          throw new CliExit(2, err.message);
        // The database's state refused it (maxPending, a singleton's active job, a key another
        // actor's job holds): not the command line's fault.
        if (err instanceof BackpressureError || err instanceof IdempotencyKeyConflict)
          throw new CliExit(1, err.message);
        throw err;
      } finally {
        await tq.close();
      }
    });
}
