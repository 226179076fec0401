import { Command } from 'commander';

import type { ScheduleFireRecord, ScheduleRecord } from '../backend/schedule-types.js';
import { CRON_FIRE_HISTORY } from '../backend/schedule-types.js';
import type { CreateScheduleOptions, ScheduleHandle, UpdateScheduleOptions } from '../client/schedules.js';
import type { TaskQ } from '../client/taskq.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ScheduleExistsError, ScheduleNotFoundError } from '../errors/schedule-errors.js';
import { openCliClient, PG_CREDENTIAL_PROVIDER_OPTION, type ConnectionFlags } from './connection-options.js';
import { CliExit, type CliIo } from './io.js';
import { parsePayloadFlag, payloadFlagExit } from './payload-flag.js';

interface JsonFlag extends ConnectionFlags {
  json?: boolean;
}

/**
 * The client API's field names as the flags and arguments the user typed, so that an error says
 * `--timezone: "Mars/Base" is invalid: ...` rather than `createSchedule.timezone`.
 */
const FLAG_OF_FIELD: readonly [field: string, flag: string][] = [
  ['createSchedule.actor', '<actor>'],
  ['createSchedule.expression', '<expression>'],
  ['createSchedule.timezone', '--timezone'],
  ['createSchedule.dstStrategy', '--dst-strategy'],
  ['createSchedule.options.name', '--name'],
  ['createSchedule.options.payloadFactory', '--payload-factory'],
  ['createSchedule.options.payload', '--payload'],
  ['createSchedule.options.identityKey', '--identity-key'],
  ['updateSchedule.expression', '--expression'],
  ['updateSchedule.change.payloadFactory', '--payload-factory'],
  ['updateSchedule.change.payload', '--payload'],
  ['listSchedules.filter.actor', '--actor'],
  ['getSchedule.id', '<id>'],
  ['updateSchedule.id', '<id>'],
  ['enable.id', '<id>'],
  ['disable.id', '<id>'],
  ['deleteSchedule.id', '<id>'],
];

/** An InvalidArgumentError's message with its field renamed to the flag the user typed. */
function flagMessage(err: InvalidArgumentError): string {
  const hit = FLAG_OF_FIELD.find(([field]) => err.field === field || err.field.startsWith(`${field}.`));
  if (!hit || !err.message.startsWith(err.field)) return err.message;
  return `${hit[1]}${err.field.slice(hit[0].length)}${err.message.slice(err.field.length)}`;
}

/**
 * Opens a client for one command and maps the schedule errors to exit codes: input the command
 * refuses (a malformed id, expression, zone, payload...) exits 2 naming the flag; a well-formed id
 * no schedule has, or an `(actor, name)` that already has one, exits 1 (the database's state, not
 * the command line, is what differs from what the user expected).
 */
async function withClient<T>(flags: ConnectionFlags, io: CliIo, fn: (tq: TaskQ) => Promise<T>): Promise<T> {
  const tq = await openCliClient(flags, io);
  try {
    return await fn(tq);
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new CliExit(2, flagMessage(err));
    const payloadExit = payloadFlagExit(err);
    if (payloadExit) throw payloadExit;
    if (err instanceof ScheduleNotFoundError || err instanceof ScheduleExistsError)
      throw new CliExit(1, err.message);
    throw err;
  } finally {
    await tq.close();
  }
}

/** The schedule of `id`, or exit 1 when there is none. */
async function handleOf(tq: TaskQ, id: string): Promise<ScheduleHandle> {
  const handle = await tq.getSchedule(id);
  if (!handle) throw new ScheduleNotFoundError(id.toLowerCase());
  return handle;
}

const withConnection = (c: Command): Command =>
  c
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)');

const withJson = (c: Command): Command =>
  withConnection(c.option('--json', 'print JSON (dates in ISO 8601)'));

const iso = (d: Date | null): string => (d === null ? '-' : d.toISOString());

/** Rows as columns padded to their widest cell (the last column is not padded). */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

const TABLE_HEADER = ['ID', 'ACTOR', 'NAME', 'EXPRESSION', 'ZONE', 'ENABLED', 'NEXT FIRE (UTC)', 'FAILURES'];

function tableRow(s: ScheduleRecord): string[] {
  return [
    s.id,
    s.actor,
    s.name === '' ? '-' : s.name,
    s.cronExpr,
    s.timezone,
    s.enabled ? 'yes' : 'no',
    iso(s.nextFireAt),
    String(s.consecutiveFailures),
  ];
}

/** A record for `--json`: the stored fields, dates as ISO text, `payload` null when it has none. */
function recordJson(s: ScheduleRecord): Record<string, unknown> {
  const { staticPayload, ...rest } = s;
  return { ...rest, payload: staticPayload === undefined ? null : staticPayload };
}

function describeSchedule(s: ScheduleRecord): string[] {
  const payload =
    s.payloadFactory !== null
      ? `factory ${s.payloadFactory}`
      : s.staticPayload === undefined
        ? 'none'
        : JSON.stringify(s.staticPayload);
  return [
    `schedule ${s.id}`,
    `  actor        ${s.actor}`,
    `  name         ${s.name === '' ? '(unnamed)' : s.name}`,
    `  expression   ${s.cronExpr}`,
    `  timezone     ${s.timezone}`,
    `  dst strategy ${s.dstStrategy}`,
    `  payload      ${payload}`,
    `  identity key ${s.identityKey ?? '-'}`,
    `  enabled      ${s.enabled ? 'yes' : 'no'}`,
    `  next fire    ${iso(s.nextFireAt)}`,
    `  last fired   ${iso(s.lastFiredAt)}`,
    `  failures     ${s.consecutiveFailures}${s.lastFireError === null ? '' : ` (last error: ${s.lastFireError})`}`,
    `  created      ${iso(s.createdAt)}`,
    `  updated      ${iso(s.updatedAt)}`,
  ];
}

/** An integer flag in `[min, max]` (default when absent), or exit 2 naming it. */
function intFlag(
  value: string | undefined,
  flag: string,
  min: number,
  max: number,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max)
    throw new CliExit(
      2,
      `${flag}: ${JSON.stringify(value)} is invalid: must be an integer from ${min} to ${max}`,
    );
  return n;
}

/** `--enabled true|false`, or exit 2. */
function boolFlag(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new CliExit(2, `${flag}: ${JSON.stringify(value)} is invalid: must be true or false`);
}

const fireJson = (f: ScheduleFireRecord): Record<string, unknown> => ({
  fireAt: f.fireAt,
  jobId: f.jobId,
  firedAt: f.firedAt,
});

/** `taskq schedules list|show|create|update|enable|disable|run-now|delete|next` (docs/cron.md). */
export function schedulesCommand(io: CliIo): Command {
  const cmd = new Command('schedules').description('cron schedules: list, inspect, create, change, fire now');
  const json = (value: unknown): void => io.out(JSON.stringify(value, null, 2));

  withJson(
    cmd
      .command('list')
      .description('schedules, by actor and name')
      .option('--actor <actor>', 'only this actor')
      .option('--enabled <bool>', 'only enabled (true) or disabled (false) schedules'),
  ).action(async (flags: JsonFlag & { actor?: string; enabled?: string }) => {
    const enabled = boolFlag(flags.enabled, '--enabled');
    await withClient(flags, io, async (tq) => {
      const rows = await tq.listSchedules({
        ...(flags.actor === undefined ? {} : { actor: flags.actor }),
        ...(enabled === undefined ? {} : { enabled }),
      });
      if (flags.json) return json(rows.map(recordJson));
      if (rows.length === 0) return io.out('no schedule');
      for (const l of formatTable(TABLE_HEADER, rows.map(tableRow))) io.out(l);
    });
  });

  withJson(
    cmd
      .command('show <id>')
      .description('one schedule and its most recent fires (slot, job id)')
      .option('--fires <n>', `how many recent fires to show (1-${CRON_FIRE_HISTORY}, default 10)`),
  ).action(async (id: string, flags: JsonFlag & { fires?: string }) => {
    const limit = intFlag(flags.fires, '--fires', 1, CRON_FIRE_HISTORY, 10);
    await withClient(flags, io, async (tq) => {
      const handle = await handleOf(tq, id);
      const fires = await handle.history(limit);
      if (flags.json) return json({ ...recordJson(handle.record), fires: fires.map(fireJson) });
      for (const l of describeSchedule(handle.record)) io.out(l);
      if (fires.length === 0) return io.out('  fires        none yet');
      io.out(`  last ${fires.length} fires (newest first):`);
      for (const l of formatTable(
        ['SLOT (UTC)', 'JOB', 'FIRED AT (UTC)'],
        fires.map((f) => [iso(f.fireAt), f.jobId, iso(f.firedAt)]),
      ))
        io.out(`    ${l}`);
    });
  });

  withJson(
    cmd
      .command('create <actor> <expression>')
      .description('create a schedule (the actor is named; its payload is checked when a slot fires)')
      .option('--name <name>', 'unique per actor (default: unnamed)')
      .option('--timezone <zone>', 'IANA zone the expression is read in (default UTC)')
      .option('--dst-strategy <strategy>', 'skip (default), firstof or allof')
      .option('--payload <json>', 'static payload of every fired job, as JSON')
      .option('--payload-factory <name>', "a payload factory registered on the workers' payloadFactories")
      .option('--identity-key <key>', 'carried to every fired job')
      .option('--disabled', 'create it disabled'),
  ).action(
    async (
      actor: string,
      expression: string,
      flags: JsonFlag & {
        name?: string;
        timezone?: string;
        dstStrategy?: string;
        payload?: string;
        payloadFactory?: string;
        identityKey?: string;
        disabled?: boolean;
      },
    ) => {
      if (flags.payload !== undefined && flags.payloadFactory !== undefined)
        throw new CliExit(2, '--payload and --payload-factory are mutually exclusive: give one');
      const payload = parsePayloadFlag(flags.payload);
      const options: CreateScheduleOptions = {
        ...(flags.name === undefined ? {} : { name: flags.name }),
        ...(flags.timezone === undefined ? {} : { timezone: flags.timezone }),
        ...(flags.dstStrategy === undefined
          ? {}
          : { dstStrategy: flags.dstStrategy as CreateScheduleOptions['dstStrategy'] }),
        ...(payload === undefined ? {} : { payload }),
        ...(flags.payloadFactory === undefined ? {} : { payloadFactory: flags.payloadFactory }),
        ...(flags.identityKey === undefined ? {} : { identityKey: flags.identityKey }),
        ...(flags.disabled ? { enabled: false } : {}),
      };
      await withClient(flags, io, async (tq) => {
        const handle = await tq.createSchedule(actor, expression, options);
        const s = handle.record;
        if (flags.json) return json(recordJson(s));
        io.out(
          `created schedule ${s.id} (actor ${s.actor}${s.name === '' ? '' : `, name ${s.name}`}): ` +
            `${s.enabled ? `next fire ${iso(s.nextFireAt)}` : 'disabled'}`,
        );
      });
    },
  );

  withJson(
    cmd
      .command('update <id>')
      .description('change a schedule (how a changed cron() declaration is applied; docs/cron.md)')
      .option('--expression <expr>', 'a new expression: the next slot is recomputed from now')
      .option('--payload <json>', 'a new static payload, as JSON (replaces a payload factory)')
      .option('--clear-payload', 'remove the static payload')
      .option('--payload-factory <name>', 'a registered payload factory (replaces the static payload)')
      .option('--clear-payload-factory', 'remove the payload factory'),
  ).action(
    async (
      id: string,
      flags: JsonFlag & {
        expression?: string;
        payload?: string;
        clearPayload?: boolean;
        payloadFactory?: string;
        clearPayloadFactory?: boolean;
      },
    ) => {
      if (flags.payload !== undefined && flags.clearPayload)
        throw new CliExit(2, '--payload and --clear-payload are mutually exclusive');
      if (flags.payloadFactory !== undefined && flags.clearPayloadFactory)
        throw new CliExit(2, '--payload-factory and --clear-payload-factory are mutually exclusive');
      if (flags.payload !== undefined && flags.payloadFactory !== undefined)
        throw new CliExit(2, '--payload and --payload-factory are mutually exclusive: give one');
      const payload = parsePayloadFlag(flags.payload);
      const change: UpdateScheduleOptions = {
        ...(flags.expression === undefined ? {} : { expression: flags.expression }),
        ...(payload === undefined ? {} : { payload }),
        ...(flags.clearPayload ? { payload: null } : {}),
        ...(flags.payloadFactory === undefined ? {} : { payloadFactory: flags.payloadFactory }),
        ...(flags.clearPayloadFactory ? { payloadFactory: null } : {}),
      };
      if (Object.keys(change).length === 0)
        throw new CliExit(
          2,
          'nothing to update: give --expression, --payload, --clear-payload, --payload-factory or --clear-payload-factory',
        );
      await withClient(flags, io, async (tq) => {
        const s = await tq.updateSchedule(id, change);
        if (flags.json) return json(recordJson(s));
        io.out(`updated schedule ${s.id}: next fire ${iso(s.nextFireAt)}`);
      });
    },
  );

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    withConnection(
      cmd
        .command(`${verb} <id>`)
        .description(enabled ? 'enable it (clears its failure count and last error)' : 'stop firing it'),
    ).action(async (id: string, flags: ConnectionFlags) => {
      await withClient(flags, io, async (tq) => {
        const handle = await handleOf(tq, id);
        const s = enabled ? await handle.enable() : await handle.disable();
        io.out(`schedule ${s.id}: ${enabled ? `enabled, next fire ${iso(s.nextFireAt)}` : 'disabled'}`);
      });
    });
  }

  withConnection(
    cmd.command('run-now <id>').description('make it due now: the leader fires it within about a second'),
  ).action(async (id: string, flags: ConnectionFlags) => {
    await withClient(flags, io, async (tq) => {
      const handle = await handleOf(tq, id);
      const s = await handle.runNow();
      io.out(
        s.enabled
          ? `schedule ${s.id}: due now; the leader fires it within about a second (see \`taskq schedules show ${s.id}\`)`
          : `schedule ${s.id}: due now, but disabled: it fires once enabled (taskq schedules enable ${s.id})`,
      );
    });
  });

  withConnection(
    cmd.command('delete <id>').description('delete it and its fire history (idempotent)'),
  ).action(async (id: string, flags: ConnectionFlags) => {
    await withClient(flags, io, async (tq) => {
      const existed = await tq.deleteSchedule(id);
      io.out(
        existed ? `schedule ${id.toLowerCase()}: deleted` : `schedule ${id.toLowerCase()}: did not exist`,
      );
    });
  });

  withJson(
    cmd
      .command('next <id>')
      .description('preview the next slots, from the stored next slot, as the leader will fire them')
      .option('--count <n>', 'how many (1-1000, default 5)'),
  ).action(async (id: string, flags: JsonFlag & { count?: string }) => {
    const count = intFlag(flags.count, '--count', 1, 1000, 5);
    await withClient(flags, io, async (tq) => {
      const handle = await handleOf(tq, id);
      const slots = handle.nextFireTimes(count);
      if (flags.json) return json(slots);
      if (slots.length === 0) return io.out(`schedule ${handle.id}: no slot left`);
      for (const d of slots) io.out(d.toISOString());
    });
  });

  return cmd;
}
