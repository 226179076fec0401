import { Command, CommanderError } from 'commander';

import { TaskQError } from '../errors/taskq-error.js';
import { TASKQ_VERSION } from '../core/version.js';
import { CliExit, processIo, type CliIo } from './io.js';
import { migrateCommand } from './migrate-command.js';
import { actorConfigCommand, queuesCommand } from './queues-command.js';
import { actorsCommand } from './actors-command.js';
import { jobsCommand } from './jobs-command.js';
import { rateLimitsCommand } from './ratelimits-command.js';
import { schedulesCommand } from './schedules-command.js';
import { workerCommand } from './worker-command.js';
import { devCommand } from './dev-command.js';
import { healthCommand } from './health-command.js';
import { uiCommand } from './ui-command.js';

/** Builds the `taskq` command tree. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('taskq')
    .description('TaskQ: Postgres-backed background jobs for Node.js')
    .version(TASKQ_VERSION, '-v, --version', 'print the TaskQ version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });
  program.addCommand(migrateCommand(io));
  program.addCommand(queuesCommand(io));
  program.addCommand(actorConfigCommand(io));
  program.addCommand(actorsCommand(io));
  program.addCommand(jobsCommand(io));
  program.addCommand(rateLimitsCommand(io));
  program.addCommand(schedulesCommand(io));
  program.addCommand(workerCommand(io));
  program.addCommand(devCommand(io));
  program.addCommand(healthCommand(io));
  program.addCommand(uiCommand(io));
  // Commands built apart and added (addCommand) inherit neither setting: a usage error of a
  // subcommand would otherwise bypass `io` and exit the process.
  const output = {
    writeOut: (s: string) => io.out(s.trimEnd()),
    writeErr: (s: string) => io.err(s.trimEnd()),
  };
  for (const sub of program.commands) {
    sub.exitOverride().configureOutput(output);
    for (const leaf of sub.commands) leaf.exitOverride().configureOutput(output);
  }
  return program;
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof CliExit) {
      io.err(`taskq: ${err.message}`);
      return err.exitCode;
    }
    if (err instanceof TaskQError) {
      io.err(`taskq: ${err.message}`);
      return 1;
    }
    const e = err as { message?: string; code?: string };
    io.err(`taskq: ${e.code ? `[${e.code}] ` : ''}${e.message ?? String(err)}`);
    return 1;
  }
}
