import { Command } from 'commander';

import type { ActorConfigRow } from '../backend/types.js';
import { openCliClient, PG_CREDENTIAL_PROVIDER_OPTION, type ConnectionFlags } from './connection-options.js';
import { type CliIo } from './io.js';
import { formatTable } from './schedules-command.js';

const ms = (n: number | null): string => (n === null ? '-' : `${n}ms`);

/** One `taskq actors` row: the stored values; `-` where the code's literal applies. */
function actorRow(r: ActorConfigRow): string[] {
  return [
    r.actor,
    r.queue,
    r.maxConcurrent === null ? '-' : String(r.maxConcurrent),
    r.maxPending === null ? '-' : String(r.maxPending),
    ms(r.resultTtlMs),
    r.updatedAt.toISOString(),
  ];
}

/**
 * `taskq actors [list]`: the read view of actors (`tq.actors.list()`), with `--json`. Changing them
 * stays with `taskq actor-config set|deregister`. Drift between code and the stored structure is
 * not shown: only a worker, which has the code, can compare them (it does at start).
 */
export function actorsCommand(io: CliIo): Command {
  const cmd = new Command('actors').description(
    'actors with a stored configuration (read-only; change capacity with actor-config)',
  );
  cmd
    .command('list', { isDefault: true })
    .description('every actor a worker has registered: queue and operator-owned capacity')
    .option('--json', 'print JSON (dates in ISO 8601)')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)')
    .action(async (flags: ConnectionFlags & { json?: boolean }) => {
      const tq = await openCliClient(flags, io);
      try {
        const rows = await tq.actors.list();
        if (flags.json) return io.out(JSON.stringify(rows, null, 2));
        if (rows.length === 0)
          return io.out('no actor registered (a worker registers its actors when it starts)');
        for (const l of formatTable(
          ['ACTOR', 'QUEUE', 'MAX CONCURRENT', 'MAX PENDING', 'RESULT TTL', 'UPDATED (UTC)'],
          rows.map(actorRow),
        ))
          io.out(l);
      } finally {
        await tq.close();
      }
    });
  return cmd;
}
