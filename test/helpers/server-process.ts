/**
 * Runs a test-private server (postgres, redis-server) as a child of the test process. The child gets
 * a parent-death signal (`setpriv --pdeathsig`), so a test process that dies without its `afterAll`
 * takes its servers with it; an `exit` hook covers the ordinary exits.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

let setprivPresent: boolean | undefined;

/** True when util-linux `setpriv` is on PATH. */
function hasSetpriv(): boolean {
  if (setprivPresent === undefined) {
    try {
      execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
      setprivPresent = true;
    } catch {
      setprivPresent = false;
    }
  }
  return setprivPresent;
}

/** An OS account to run a server as (postgres refuses to run as root). */
export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

/** The account `name`, read with `id`. */
export function osUser(name: string): OsUser {
  const id = (flag: string): number => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  return { name, uid: id('-u'), gid: id('-g') };
}

/** True when the test process runs as root. */
export function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * The command line that runs `file args` as `user` (when given) and with `deathSignal` delivered
 * when the test process dies (when `setpriv` is available). `setpriv` execs the program, so the
 * child's pid is the server's pid.
 */
export function wrapCommand(
  file: string,
  args: string[],
  options: { user?: OsUser; deathSignal?: NodeJS.Signals },
): [string, string[]] {
  const { user, deathSignal } = options;
  if (user) {
    if (!hasSetpriv()) throw new Error(`running ${file} as ${user.name} needs util-linux setpriv on PATH`);
  } else if (!deathSignal || !hasSetpriv()) {
    return [file, args];
  }
  const wrapped: string[] = [];
  if (user) wrapped.push('--reuid', String(user.uid), '--regid', String(user.gid), '--init-groups');
  if (deathSignal) wrapped.push('--pdeathsig', deathSignal.replace(/^SIG/, ''));
  return ['setpriv', [...wrapped, '--', file, ...args]];
}

/** A running server child process. */
export interface ServerProcess {
  readonly proc: ChildProcess;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  /** True until the process has exited. */
  running(): boolean;
  /** Sends `signal` and waits for the exit; SIGKILL after `killAfterMs` if it is still there. */
  stop(signal: NodeJS.Signals, killAfterMs?: number): Promise<void>;
}

/**
 * Spawns a server with stdout and stderr appended to `logFile`. Until it exits, an `exit` hook of
 * the test process sends it `deathSignal` (which it would also get from the kernel as the parent
 * dies; the hook also covers a test process that exits while still running).
 */
export function spawnServer(
  file: string,
  args: string[],
  options: { user?: OsUser; deathSignal: NodeJS.Signals; logFile: string; cwd: string },
): ServerProcess {
  const [cmd, cmdArgs] = wrapCommand(file, args, options);
  const log = openSync(options.logFile, 'a');
  let proc: ChildProcess;
  try {
    proc = spawn(cmd, cmdArgs, {
      cwd: options.cwd,
      stdio: ['ignore', log, log],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    });
  } finally {
    closeSync(log);
  }
  let alive = true;
  const onExit = (): void => {
    if (alive) proc.kill(options.deathSignal);
  };
  process.on('exit', onExit);
  const exited = new Promise<void>((resolve) => {
    proc.once('exit', () => {
      alive = false;
      process.off('exit', onExit);
      resolve();
    });
    proc.once('error', () => {
      alive = false;
      process.off('exit', onExit);
      resolve();
    });
  });
  return {
    proc,
    exited,
    running: () => alive,
    async stop(signal, killAfterMs = 30_000) {
      if (!alive) return;
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The last `chars` characters of a log file ('' when it cannot be read), for error messages. */
export function logTail(file: string, chars = 2000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return '';
  }
}
