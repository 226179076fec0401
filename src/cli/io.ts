import { once } from 'node:events';
import { createInterface } from 'node:readline/promises';

/** Where a command writes: injected so commands can be run and checked in-process. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  /** Ends a long-running command (`taskq health metrics`) when aborted. Default: SIGINT or SIGTERM. */
  stop?: AbortSignal;
  /**
   * True when a person can answer a question (stdin is a terminal). A command that would ask for
   * confirmation (`taskq jobs cancel --where`) refuses instead when this is not true. Default false.
   */
  interactive?: boolean;
  /** Asks `question` and resolves with the line typed; only called when `interactive` is true. */
  ask?(question: string): Promise<string>;
}

/** The process's own stdout/stderr/env; interactive when stdin and stderr are terminals. */
export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
  async ask(question) {
    // The question goes to stderr so that stdout stays the command's output.
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  },
};

/** Raised by a command to end with a message and exit code (no stack trace for the user). */
export class CliExit extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Resolves when `io.stop` aborts, or on SIGINT / SIGTERM. */
export function stopped(io: CliIo): Promise<void> {
  if (io.stop) return io.stop.aborted ? Promise.resolve() : once(io.stop, 'abort').then(() => undefined);
  return new Promise((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
