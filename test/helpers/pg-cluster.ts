/**
 * A Postgres cluster of a test's own, for fault tests that restart or stop Postgres: `initdb` into a
 * temporary directory, a superuser password with scram-sha-256 authentication, a free port on
 * 127.0.0.1 and a unix socket inside the directory. Only this cluster is ever stopped or restarted;
 * the machine's own server is never touched.
 *
 * The test process usually runs as root, which `initdb` and `postgres` refuse: they then run as the
 * `postgres` OS account (or `TASKQ_TEST_PG_OS_USER`), which owns the directory.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import pg from 'pg';

import { freePort } from './free-port.js';
import { makeScratchDir } from './scratch-dir.js';
import {
  logTail,
  osUser,
  runningAsRoot,
  spawnServer,
  wrapCommand,
  type OsUser,
  type ServerProcess,
} from './server-process.js';
import { waitFor } from './wait.js';

/** How a cluster stops: `fast` (clients disconnected, checkpoint) or `immediate` (a crash). */
export type PgStopMode = 'fast' | 'immediate';

/** A private Postgres cluster. `destroy()` it in `afterAll`. */
export interface PgCluster {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/postgres`. */
  readonly dsn: string;
  readonly port: number;
  /** The temporary directory holding the data directory, the socket and `postgres.log`. */
  readonly dir: string;
  /** The postmaster's pid while it runs, else null. */
  pid(): number | null;
  /** True when the server accepts an authenticated connection. */
  isUp(): Promise<boolean>;
  /** Starts the server (on the same port) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops the server and waits for the postmaster to exit (`fast` by default). */
  stop(mode?: PgStopMode): Promise<void>;
  /** `stop(mode)` then `start()`. */
  restart(mode?: PgStopMode): Promise<void>;
  /** Stops the server (if running) and deletes the directory. */
  destroy(): Promise<void>;
  /** The end of the server log, for failure messages. */
  log(): string;
}

/** Options for {@link startPgCluster}. */
export interface PgClusterOptions {
  /** `max_connections` (default 100: a few worker processes with their pools). */
  maxConnections?: number;
  /** `shared_buffers` (default `32MB`: the machine has two cores and other tenants). */
  sharedBuffers?: string;
}

/** The directory with `initdb` and `postgres`: `TASKQ_TEST_PG_BINDIR`, else the newest Debian install, else PATH. */
export function postgresBinDir(): string {
  const fromEnv = process.env.TASKQ_TEST_PG_BINDIR;
  if (fromEnv) return fromEnv;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      'no Postgres server binaries found (initdb, postgres): install them or set TASKQ_TEST_PG_BINDIR',
    );
  }
}

/** Runs `initdb` and starts a private cluster on a free port; resolves once it accepts connections. */
export async function startPgCluster(options: PgClusterOptions = {}): Promise<PgCluster> {
  const bin = postgresBinDir();
  const user: OsUser | undefined = runningAsRoot()
    ? osUser(process.env.TASKQ_TEST_PG_OS_USER ?? 'postgres')
    : undefined;
  const dir = makeScratchDir('taskq-pg-');
  const dataDir = join(dir, 'data');
  const socketDir = join(dir, 'socket');
  const logFile = join(dir, 'postgres.log');
  const password = randomBytes(12).toString('hex');
  let server: ServerProcess | null = null;
  let port = 0;

  try {
    mkdirSync(socketDir);
    const pwFile = join(dir, 'pwfile');
    writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
    if (user) for (const p of [dir, socketDir, pwFile]) chownSync(p, user.uid, user.gid);
    const [initdb, initdbArgs] = wrapCommand(
      join(bin, 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--username=postgres',
        `--pwfile=${pwFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ],
      { user },
    );
    try {
      execFileSync(initdb, initdbArgs, {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      const e = err as { stderr?: Buffer };
      throw new Error(`initdb failed: ${e.stderr?.toString() ?? String(err)}`);
    } finally {
      unlinkSync(pwFile);
    }

    const serverArgs = (): string[] => [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${socketDir}`,
      '-c',
      `max_connections=${options.maxConnections ?? 100}`,
      '-c',
      `shared_buffers=${options.sharedBuffers ?? '32MB'}`,
      // A throwaway cluster: durability against an OS crash buys nothing and costs disk time.
      '-c',
      'fsync=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'logging_collector=off',
    ];
    const dsn = (): string => `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
    const isUp = async (): Promise<boolean> => {
      const client = new pg.Client({ connectionString: dsn(), connectionTimeoutMillis: 2000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        return true;
      } catch {
        return false;
      } finally {
        await client.end().catch(() => undefined);
      }
    };
    const launch = async (): Promise<void> => {
      if (server?.running()) throw new Error(`the private cluster on port ${port} is already running`);
      // Immediate shutdown (SIGQUIT) if the test process dies: children exit, nothing is left behind.
      const s = spawnServer(join(bin, 'postgres'), serverArgs(), {
        user,
        deathSignal: 'SIGQUIT',
        logFile,
        cwd: dir,
      });
      server = s;
      await waitFor(
        async () => {
          if (!s.running()) throw new Error(`postgres exited while starting:\n${logTail(logFile)}`);
          return isUp();
        },
        60_000,
        `the private Postgres on port ${port}`,
      );
    };

    // The port was free a moment ago; if someone took it meanwhile, try another.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await launch();
        break;
      } catch (err) {
        await (server as ServerProcess | null)?.stop('SIGQUIT');
        if (attempt >= 3 || !/could not (bind|create listen socket)/i.test(String(err))) throw err;
      }
    }

    const stop = async (mode: PgStopMode = 'fast'): Promise<void> => {
      await server?.stop(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    };
    return {
      get dsn() {
        return dsn();
      },
      port,
      dir,
      pid: () => (server?.running() ? (server.proc.pid ?? null) : null),
      isUp,
      start: launch,
      stop,
      async restart(mode: PgStopMode = 'fast') {
        await stop(mode);
        await launch();
      },
      async destroy() {
        await stop('fast');
        rmSync(dir, { recursive: true, force: true });
      },
      log: () => logTail(logFile),
    };
  } catch (err) {
    await (server as ServerProcess | null)?.stop('SIGQUIT');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
