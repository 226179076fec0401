import { once } from 'node:events';

/** Where a command writes: injected so commands can be run and checked in-process. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  /** Ends a long-running command (`taskq health metrics`) when aborted. Default: SIGINT or SIGTERM. */
  stop?: AbortSignal;
}

/** The process's own stdout/stderr/env. */
export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
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
