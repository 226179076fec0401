import { spawn, type ChildProcess } from 'node:child_process';

import { TEST_DSN } from './db.js';

/** A worker running in its own process (tsx), for fault and fleet tests. */
export interface WorkerProcess {
  proc: ChildProcess;
  /** Resolves with the worker id once the worker has started. */
  ready: Promise<{ workerId: string; pid: number }>;
  /** Resolves with the exit code (or null and the signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: string[];
  stderr: string[];
  /** Sends SIGTERM and waits for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `test/fixtures/worker-process.ts` against a schema with extra TASKQ_* settings; `env` wins
 * over the defaults (`TASKQ_PG_DSN` points it at a fault test's private cluster). A variable set to
 * `undefined` is left out of the child's environment (`TASKQ_LOG_LEVEL: undefined`: the default level).
 */
export function startWorkerProcess(
  schema: string,
  env: Record<string, string | undefined> = {},
  script = 'test/fixtures/worker-process.ts',
): WorkerProcess {
  const proc = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      TASKQ_PG_DSN: TEST_DSN,
      TASKQ_SCHEMA_NAME: schema,
      TASKQ_WATCHDOG_ENABLED: 'false',
      // Not on the machine's shared default socket path; a health test gives a path of its own.
      TASKQ_HEALTH_ENABLED: 'false',
      TASKQ_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  let resolveReady!: (v: { workerId: string; pid: number }) => void;
  let rejectReady!: (e: Error) => void;
  const ready = new Promise<{ workerId: string; pid: number }>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  let buf = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      stdout.push(line);
      try {
        const msg = JSON.parse(line) as { event?: string; workerId?: string; pid?: number };
        if (msg.event === 'ready') resolveReady({ workerId: msg.workerId!, pid: msg.pid! });
      } catch {
        // log lines
      }
    }
  });
  proc.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      rejectReady(
        new Error(
          `worker exited before ready (code ${code}, signal ${signal}): ${stderr.join('').slice(-2000)}`,
        ),
      );
      resolve({ code, signal });
    });
  });
  ready.catch(() => undefined);
  return {
    proc,
    ready,
    exited,
    stdout,
    stderr,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}
