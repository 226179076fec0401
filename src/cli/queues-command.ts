import { Command } from 'commander';

import type { Backend } from '../backend/backend.js';
import { toMsOrNull } from '../core/duration.js';
import { openCliBackend, PG_CREDENTIAL_PROVIDER_OPTION, type ConnectionFlags } from './connection-options.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { CliExit, type CliIo } from './io.js';
import { QUEUE_TABLE_HEADER, queueTableRow, queueViews, WORKER_ALIVE_WITHIN_MS } from './queue-view.js';
import { formatTable } from './schedules-command.js';

async function withAdmin<T>(flags: ConnectionFlags, io: CliIo, fn: (b: Backend) => Promise<T>): Promise<T> {
  const backend = await openCliBackend(flags, io);
  try {
    return await fn(backend);
  } finally {
    await backend.close();
  }
}

const connectionOptions = (c: Command): Command =>
  c
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)');

/** `taskq queues list|set-mode|set-max-concurrent`. */
export function queuesCommand(io: CliIo): Command {
  const cmd = new Command('queues').description('queue dispatch modes and fleet-wide caps');
  connectionOptions(
    cmd
      .command('list')
      .description('queues: mode, cap, live jobs by status, alive workers')
      .option('--json', 'print JSON'),
  ).action(async (flags: ConnectionFlags & { json?: boolean }) => {
    await withAdmin(flags, io, async (a) => {
      const views = queueViews(
        await a.listQueues(),
        await a.observeFleet({ aliveWithinMs: WORKER_ALIVE_WITHIN_MS, keyedReservationBases: [] }),
      );
      if (flags.json) return io.out(JSON.stringify(views, null, 2));
      if (views.length === 0)
        return io.out(
          'no queue: no job, no configured queue and no alive worker (every queue is strict_fifo without a cap)',
        );
      for (const l of formatTable(QUEUE_TABLE_HEADER, views.map(queueTableRow))) io.out(l);
    });
  });
  connectionOptions(
    cmd
      .command('set-mode <queue> <mode>')
      .description('strict_fifo (priority, then time) or round_robin (interleave fairness keys)'),
  ).action(async (queue: string, mode: string, flags: ConnectionFlags) => {
    if (mode !== 'strict_fifo' && mode !== 'round_robin')
      throw new CliExit(2, `mode: ${JSON.stringify(mode)} is invalid: must be strict_fifo or round_robin`);
    await withAdmin(flags, io, async (a) => {
      const r = await a.setQueueMode(queue, mode);
      io.out(`queue ${r.name}: mode ${r.mode}`);
    });
  });
  connectionOptions(
    cmd
      .command('set-max-concurrent <queue>')
      .description('cap running jobs of a queue across the whole fleet (workers read it at startup)')
      .option('--max-concurrent <n>', 'the cap (>= 1)')
      .option('--clear', 'remove the cap'),
  ).action(async (queue: string, flags: ConnectionFlags & { maxConcurrent?: string; clear?: boolean }) => {
    if (flags.clear && flags.maxConcurrent !== undefined)
      throw new CliExit(2, '--max-concurrent and --clear are mutually exclusive');
    if (!flags.clear && flags.maxConcurrent === undefined)
      throw new CliExit(2, 'give --max-concurrent N or --clear');
    let n: number | null = null;
    if (!flags.clear) {
      n = Number(flags.maxConcurrent);
      if (!/^\d+$/.test(flags.maxConcurrent ?? '') || n < 1) {
        throw new CliExit(
          2,
          `--max-concurrent: ${JSON.stringify(flags.maxConcurrent)} is invalid: must be an integer >= 1 (use --clear to remove the cap)`,
        );
      }
    }
    await withAdmin(flags, io, async (a) => {
      const r = await a.setQueueMaxConcurrent(queue, n);
      io.out(`queue ${r.name}: max-concurrent ${r.maxConcurrent ?? 'none'} (restart workers to apply)`);
    });
  });
  return cmd;
}

/** `taskq actor-config list|set|deregister`. */
export function actorConfigCommand(io: CliIo): Command {
  const cmd = new Command('actor-config').description(
    "operator-owned actor capacity (wins over the code's literals)",
  );
  connectionOptions(cmd.command('list').description('stored actor configuration')).action(
    async (flags: ConnectionFlags) => {
      await withAdmin(flags, io, async (a) => {
        for (const r of await a.getActorConfigs()) {
          io.out(
            `${r.actor.padEnd(32)} queue ${r.queue.padEnd(16)} max-concurrent ${r.maxConcurrent ?? '-'} max-pending ${r.maxPending ?? '-'} result-ttl ${r.resultTtlMs === null ? '-' : `${r.resultTtlMs}ms`}`,
          );
        }
      });
    },
  );
  const parse = (
    value: string | undefined,
    clear: boolean | undefined,
    flag: string,
  ): number | null | undefined => {
    if (clear && value !== undefined)
      throw new CliExit(2, `--${flag} and --clear-${flag} are mutually exclusive`);
    if (clear) return null;
    if (value === undefined) return undefined;
    if (!/^\d+$/.test(value))
      throw new CliExit(2, `--${flag}: ${JSON.stringify(value)} is invalid: must be an integer >= 0`);
    return Number(value);
  };
  connectionOptions(
    cmd
      .command('set <actor>')
      .description('store capacity values (workers and clients pick them up within seconds)')
      .option('--max-concurrent <n>', 'fleet-wide running cap (0 = drain)')
      .option('--clear-max-concurrent', 'fall back to the code literal')
      .option('--max-pending <n>', 'refuse enqueues at this many pending + scheduled jobs')
      .option('--clear-max-pending', 'fall back to the code literal')
      .option('--result-ttl <duration>', "keep results this long, e.g. '1h' or ms")
      .option('--clear-result-ttl', 'fall back to the code literal'),
  ).action(
    async (actorName: string, flags: ConnectionFlags & Record<string, string | boolean | undefined>) => {
      const maxConcurrent = parse(
        flags.maxConcurrent as string | undefined,
        flags.clearMaxConcurrent as boolean | undefined,
        'max-concurrent',
      );
      const maxPending = parse(
        flags.maxPending as string | undefined,
        flags.clearMaxPending as boolean | undefined,
        'max-pending',
      );
      if (flags.clearResultTtl && flags.resultTtl !== undefined)
        throw new CliExit(2, '--result-ttl and --clear-result-ttl are mutually exclusive');
      const rawTtl = flags.resultTtl as string | undefined;
      const resultTtl = flags.clearResultTtl
        ? null
        : rawTtl === undefined
          ? undefined
          : /^\d+$/.test(rawTtl)
            ? Number(rawTtl)
            : rawTtl;
      if (maxConcurrent === undefined && maxPending === undefined && resultTtl === undefined)
        throw new CliExit(2, 'nothing to set: give at least one option');
      await withAdmin(flags, io, async (a) => {
        let row;
        try {
          row = await a.setActorCapacity(actorName, {
            maxConcurrent,
            maxPending,
            ...(resultTtl === undefined
              ? {}
              : { resultTtlMs: toMsOrNull(resultTtl, 'resultTtl', 'nonNegative') }),
          });
        } catch (err) {
          throw new CliExit(2, (err as Error).message);
        }
        if (!row)
          throw new CliExit(
            1,
            `actor ${JSON.stringify(actorName)} has no actor_config row: start a worker that runs it first`,
          );
        io.out(
          `actor ${row.actor}: max-concurrent ${row.maxConcurrent ?? '-'} max-pending ${row.maxPending ?? '-'} result-ttl ${row.resultTtlMs === null ? '-' : `${row.resultTtlMs}ms`}`,
        );
      });
    },
  );
  connectionOptions(
    cmd
      .command('deregister <actor>')
      .description(
        "remove an actor's actor_config row (refused while it has jobs not finished or enabled cron schedules)",
      )
      .option(
        '--force',
        'cancel its pending and scheduled jobs and disable its schedules (running jobs still refuse)',
      )
      .option('--purge-queue', "also delete its queue's queues row when nothing else uses the queue"),
  ).action(async (actorName: string, flags: ConnectionFlags & { force?: boolean; purgeQueue?: boolean }) => {
    await withAdmin(flags, io, async (a) => {
      let r;
      try {
        r = await a.deregisterActor(actorName, {
          force: flags.force === true,
          purgeQueue: flags.purgeQueue === true,
        });
      } catch (err) {
        // Bad input is a usage error; a refusal (ActorDeregistrationError) exits 1 with its message.
        if (err instanceof InvalidArgumentError) throw new CliExit(2, err.message);
        throw err;
      }
      io.out(
        `actor ${r.actor} deregistered (queue ${r.queue}): jobs cancelled ${r.jobsCancelled}, schedules disabled ${r.schedulesDisabled}, terminal jobs remaining ${r.terminalJobsRemaining}, queue row purged ${r.queuePurged ? 'yes' : 'no'}`,
      );
    });
  });
  return cmd;
}
