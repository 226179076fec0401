import { jobsEnqueueCommand } from './jobs-enqueue-command.js';
import { jobsExplainCommand } from './jobs-explain-command.js';
import { Command } from 'commander';

import type { JobRow } from '../backend/types.js';
import { RETRYABLE_TERMINAL_STATUSES } from '../backend/state-machine.js';
import type { TaskQ } from '../client/taskq.js';
import { EmptyFilterError } from '../errors/client-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import { openCliClient, PG_CREDENTIAL_PROVIDER_OPTION, type ConnectionFlags } from './connection-options.js';
import { CliExit, type CliIo } from './io.js';
import {
  flagOfFilterError,
  jobFilterOf,
  withJobFilterFlags,
  withJobPageFlags,
  type JobFilterFlags,
  type JobPageFlags,
} from './job-filter-flags.js';
import { attemptJson, describeJob, JOB_TABLE_HEADER, jobJson, jobTableRow, recent } from './job-view.js';
import { formatTable } from './schedules-command.js';

interface JsonFlag extends ConnectionFlags {
  json?: boolean;
}

/**
 * Opens a client for one command. Bad input (a filter value, an id that is not a UUID) exits 2
 * naming the flag; a job that does not exist exits 1.
 */
async function withClient<T>(flags: ConnectionFlags, io: CliIo, fn: (tq: TaskQ) => Promise<T>): Promise<T> {
  const tq = await openCliClient(flags, io);
  try {
    return await fn(tq);
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new CliExit(2, flagOfFilterError(err));
    if (err instanceof EmptyFilterError)
      throw new CliExit(
        2,
        'cancel --where needs at least one filter (--queue, --status, --actor, --identity-key, --batch-id, --tag, --active or --finished)',
      );
    if (err instanceof JobNotFoundError) throw new CliExit(1, err.message);
    throw err;
  } finally {
    await tq.close();
  }
}

const withConnection = (c: Command): Command =>
  c
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)');

const withJson = (c: Command): Command =>
  withConnection(c.option('--json', 'print one JSON document (dates in ISO 8601)'));

/** The row of `id`, or exit 1 when there is none. */
async function rowOf(tq: TaskQ, id: string): Promise<JobRow> {
  const row = await tq.getRow(id);
  if (!row) throw new JobNotFoundError(id.toLowerCase());
  return row;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** `taskq jobs list|show|retry|cancel|explain|enqueue` (docs/cli.md#taskq-jobs). */
export function jobsCommand(io: CliIo): Command {
  const cmd = new Command('jobs').description('enqueue, find, inspect, retry and cancel jobs');
  const json = (value: unknown): void => io.out(JSON.stringify(value, null, 2));

  withJson(
    withJobPageFlags(
      withJobFilterFlags(cmd.command('list').description('one page of jobs matching the filters')),
    ),
  ).action(async (flags: JsonFlag & JobFilterFlags & JobPageFlags) => {
    const filter = jobFilterOf(flags);
    await withClient(flags, io, async (tq) => {
      const page = await tq.list(filter);
      if (flags.json)
        return json({ jobs: page.jobs.map((j) => jobJson(j, false)), nextCursor: page.nextCursor });
      if (page.jobs.length === 0) io.out('no job matches');
      else for (const l of formatTable(JOB_TABLE_HEADER, page.jobs.map(jobTableRow))) io.out(l);
      if (page.nextCursor !== null) io.out(`next page: --cursor ${page.nextCursor}`);
    });
  });

  withJson(
    cmd
      .command('show <id>')
      .description('one job: its row, attempts, events and last error')
      .option('--payload', 'also show the payload, result and heartbeat details (bounded in size)'),
  ).action(async (id: string, flags: JsonFlag & { payload?: boolean }) => {
    await withClient(flags, io, async (tq) => {
      const row = await rowOf(tq, id);
      const [attempts, events] = await Promise.all([
        tq.backend.getAttempts(row.id),
        tq.backend.getEvents(row.id),
      ]);
      const withValues = flags.payload === true;
      if (flags.json) {
        const a = recent(attempts);
        const e = recent(events);
        return json({
          ...jobJson(row, withValues),
          attempts: a.rows.map(attemptJson),
          attemptsOmitted: a.omitted,
          events: e.rows,
          eventsOmitted: e.omitted,
        });
      }
      for (const l of describeJob(row, attempts, events, withValues)) io.out(l);
    });
  });

  withJson(
    withJobFilterFlags(
      cmd
        .command('retry [id]')
        .description(
          'send a failed, crashed, cancelled or abandoned job back to pending with a fresh attempt budget, or with --where every such job matching the filters',
        )
        .option(
          '--where',
          'retry every failed, crashed, cancelled or abandoned job matching the filter flags',
        )
        .option('--yes', 'do not ask for confirmation (retry --where)'),
    ),
  ).action(
    async (id: string | undefined, flags: JsonFlag & JobFilterFlags & { where?: boolean; yes?: boolean }) => {
      const filterGiven = Object.keys(jobFilterOf(flags)).length > 0;
      if (id !== undefined && flags.where)
        throw new CliExit(2, 'give a job id or --where with filters, not both');
      if (id === undefined && !flags.where)
        throw new CliExit(
          2,
          'give a job id, or --where with filter flags (e.g. --where --actor send_email --status failed)',
        );
      if (id !== undefined && (filterGiven || flags.yes || flags.json))
        throw new CliExit(
          2,
          'filter flags, --yes and --json go with --where; to retry one job give only its id',
        );
      if (id === undefined) return retryWhere(io, flags, json);
      await withClient(flags, io, async (tq) => {
        const before = await rowOf(tq, id);
        if (await tq.retryJob(before.id)) {
          io.out(`job ${before.id}: ${before.status} → pending (attempts start again from 1)`);
          return;
        }
        const now = (await tq.getRow(before.id)) ?? before;
        throw new CliExit(
          1,
          `job ${now.id} is ${now.status}: only ${[...RETRYABLE_TERMINAL_STATUSES].join(', ')} jobs can be retried` +
            (now.status === 'running' ? ' (cancel it first, or wait for it to finish)' : ''),
        );
      });
    },
  );

  withJson(
    withJobFilterFlags(
      cmd
        .command('cancel [id]')
        .description('cancel one job, or with --where every active job matching the filters')
        .option('--reason <text>', 'recorded on the job and its cancel event')
        .option('--where', 'cancel every pending, scheduled or running job matching the filter flags')
        .option('--yes', 'do not ask for confirmation (cancel --where)'),
    ),
  ).action(
    async (
      id: string | undefined,
      flags: JsonFlag & JobFilterFlags & { reason?: string; where?: boolean; yes?: boolean },
    ) => {
      const filterGiven = Object.keys(jobFilterOf(flags)).length > 0;
      if (id !== undefined && flags.where)
        throw new CliExit(2, 'give a job id or --where with filters, not both');
      if (id === undefined && !flags.where)
        throw new CliExit(2, 'give a job id, or --where with filter flags (e.g. --where --queue emails)');
      if (id !== undefined && filterGiven)
        throw new CliExit(
          2,
          'filter flags select jobs only with --where; to cancel one job give only its id',
        );
      if (id !== undefined) {
        await withClient(flags, io, async (tq) => {
          const r = await tq.cancel(id, flags.reason ?? null);
          const refused = r.newStatus !== 'cancelled' && r.newStatus !== 'running';
          if (flags.json) json(r);
          else if (r.newStatus === 'cancelled' && r.cancellationInitiated)
            io.out(`job ${r.jobId}: ${r.previousStatus} → cancelled`);
          else if (r.newStatus === 'running')
            io.out(
              r.cancellationInitiated
                ? `job ${r.jobId}: running, cancel requested (its handler's signal is aborted)`
                : `job ${r.jobId}: running, cancel already requested`,
            );
          else if (r.newStatus === 'cancelled') io.out(`job ${r.jobId}: already cancelled`);
          // A job that ended otherwise cannot be cancelled: exit 1, with --json too.
          if (refused)
            throw new CliExit(1, `job ${r.jobId} is ${r.newStatus}: a finished job cannot be cancelled`);
        });
        return;
      }
      await cancelWhere(io, flags, json);
    },
  );

  cmd.addCommand(jobsExplainCommand(io));
  cmd.addCommand(jobsEnqueueCommand(io));
  return cmd;
}

/** `taskq jobs cancel --where …`: preview, confirm (or `--yes`), cancel, print the counts. */
/**
 * `retry --where`: counts what the filters match, asks (or takes `--yes`), then retries them in one
 * statement. Without a filter it exits 2: retrying every finished job is not something to type by
 * accident.
 */
async function retryWhere(
  io: CliIo,
  flags: JsonFlag & JobFilterFlags & { yes?: boolean },
  json: (value: unknown) => void,
): Promise<void> {
  const filter = jobFilterOf(flags);
  if (Object.keys(filter).length === 0)
    throw new CliExit(
      2,
      'retry --where needs at least one filter (--queue, --status, --actor, --identity-key, --batch-id, --tag or --finished)',
    );
  await withClient(flags, io, async (tq) => {
    const { retried } = await tq.retryWhere(filter, { dryRun: true });
    if (retried === 0) {
      if (flags.json) return json({ dryRun: false, retried: 0, retriedIds: [] });
      return io.out('no failed, crashed, cancelled or abandoned job matches: nothing to retry');
    }
    const what = plural(retried, 'failed, crashed, cancelled or abandoned job');
    if (!flags.yes) {
      if (!io.interactive || !io.ask)
        throw new CliExit(
          2,
          `refusing to retry without confirmation: matches ${what}; no terminal to ask on, pass --yes to retry them`,
        );
      io.err(`matches ${what}`);
      const answer = await io.ask(`type yes to retry ${plural(retried, 'job')}: `);
      if (answer.trim() !== 'yes') throw new CliExit(1, 'not confirmed: nothing retried');
    }
    const r = await tq.retryWhere(filter);
    if (flags.json) return json({ dryRun: false, ...r });
    io.out(`retried ${plural(r.retried, 'job')}: back to pending, attempts start again from 1`);
  });
}

async function cancelWhere(
  io: CliIo,
  flags: JsonFlag & JobFilterFlags & { reason?: string; yes?: boolean },
  json: (value: unknown) => void,
): Promise<void> {
  const filter = jobFilterOf(flags);
  const reason = flags.reason ?? null;
  await withClient(flags, io, async (tq) => {
    const preview = await tq.cancelWhere(filter, reason, { dryRun: true });
    const what =
      `${plural(preview.cancelledDirectly, 'pending or scheduled job')} to cancel at once, ` +
      `${plural(preview.cancelRequested, 'running job')} to ask to cancel`;
    if (preview.totalAffected === 0) {
      if (flags.json) return json({ ...preview, dryRun: false, cancelledIds: [], cancelRequestedIds: [] });
      return io.out('no active job matches: nothing to cancel');
    }
    if (!flags.yes) {
      if (!io.interactive || !io.ask)
        throw new CliExit(
          2,
          `refusing to cancel without confirmation: ${what}; no terminal to ask on, pass --yes to cancel them`,
        );
      io.err(`matches ${what}`);
      const answer = await io.ask(`type yes to cancel ${plural(preview.totalAffected, 'job')}: `);
      if (answer.trim() !== 'yes') throw new CliExit(1, 'not confirmed: nothing cancelled');
    }
    const r = await tq.cancelWhere(filter, reason);
    if (flags.json) return json({ dryRun: false, ...r });
    io.out(
      `cancelled ${plural(r.cancelledDirectly, 'job')} at once, cancel requested for ${plural(r.cancelRequested, 'running job')} (${r.totalAffected} in all)`,
    );
  });
}
