import { Command } from 'commander';

import { explainJob } from '../client/job-explainer.js';
import type { ExplainOptions, JobExplanation } from '../client/job-explanation.js';
import { isUuid } from '../core/ids.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import { openCliBackend, PG_CREDENTIAL_PROVIDER_OPTION, type ConnectionFlags } from './connection-options.js';
import { CliExit, type CliIo } from './io.js';

/** Flags of `taskq jobs explain`. */
interface ExplainFlags extends ConnectionFlags {
  json?: boolean;
  workerAliveWithin?: string;
  listLimit?: string;
}

/** The library's field names as the command's argument and flags. */
const FLAG_OF: Readonly<Record<string, string>> = {
  jobId: '<jobId>',
  'explain.workerAliveWithin': '--worker-alive-within',
  'explain.listLimit': '--list-limit',
};

/** The explanation as lines for a terminal: the verdict, then each reason, most decisive first. */
export function formatExplanation(e: JobExplanation): string[] {
  const lines = [
    `job ${e.jobId} (actor ${e.actor}, queue ${e.queue}, ${e.queueMode}): ${e.status}, ${e.verdict}`,
  ];
  if (e.verdict === 'ready')
    lines.push('  nothing holds it back: a worker serving its queue should claim it soon');
  for (const [i, r] of e.reasons.entries()) lines.push(`  ${i + 1}. ${r.kind}: ${r.message}`);
  lines.push(`checked at ${e.checkedAt.toISOString()} (database clock)`);
  return lines;
}

/**
 * `taskq jobs explain <jobId> [--json]`: why a job is not running (see docs/explain.md). Exit 0 with
 * the explanation, 1 when there is no such job, 2 for bad input. The `taskq jobs` group attaches it.
 */
export function jobsExplainCommand(io: CliIo): Command {
  return new Command('explain')
    .description("say what holds a pending or scheduled job back, from the database's current state")
    .argument('<jobId>', 'the job id (a UUID)')
    .option('--json', 'print the explanation as JSON')
    .option(
      '--worker-alive-within <duration>',
      "a worker counts as alive when seen within this, e.g. '2m' (default 60s)",
    )
    .option('--list-limit <n>', 'longest list of job ids a reason shows (default 10)')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)')
    .action(async (jobId: string, flags: ExplainFlags) => {
      // Checked before connecting: bad input is a usage error whether or not the database is up.
      if (!isUuid(jobId))
        throw new CliExit(2, `<jobId>: ${JSON.stringify(jobId)} is invalid: must be a UUID`);
      const options: ExplainOptions = {};
      if (flags.workerAliveWithin !== undefined)
        options.workerAliveWithin = /^\d+$/.test(flags.workerAliveWithin)
          ? Number(flags.workerAliveWithin)
          : flags.workerAliveWithin;
      if (flags.listLimit !== undefined) {
        if (!/^\d+$/.test(flags.listLimit))
          throw new CliExit(
            2,
            `--list-limit: ${JSON.stringify(flags.listLimit)} is invalid: must be an integer from 0 to 1000`,
          );
        options.listLimit = Number(flags.listLimit);
      }
      const backend = await openCliBackend(flags, io);
      let explanation: JobExplanation | null;
      try {
        explanation = await explainJob(backend, jobId, options);
      } catch (err) {
        if (err instanceof InvalidArgumentError) {
          const flag = FLAG_OF[err.field];
          throw new CliExit(
            2,
            flag === undefined
              ? err.message
              : `${flag}: ${JSON.stringify(err.value)} is invalid: ${err.rule}`,
          );
        }
        throw err;
      } finally {
        await backend.close();
      }
      if (!explanation) throw new CliExit(1, new JobNotFoundError(jobId).message);
      if (flags.json) io.out(JSON.stringify(explanation, null, 2));
      else for (const line of formatExplanation(explanation)) io.out(line);
    });
}
