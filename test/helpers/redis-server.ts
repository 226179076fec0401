/**
 * A Redis server of a test's own, for fault tests that stop Redis: `redis-server` on a free port of
 * 127.0.0.1, without persistence, in a temporary directory. Only this server is ever stopped; the
 * machine's own Redis is never touched.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import { Redis } from 'ioredis';

import { freePort } from './free-port.js';
import { makeScratchDir } from './scratch-dir.js';
import { logTail, spawnServer, type ServerProcess } from './server-process.js';
import { waitFor } from './wait.js';

/** A private Redis server. `destroy()` it in `afterAll`. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** True when the server answers PING. */
  isUp(): Promise<boolean>;
  /** Starts the server again on the same port and waits until it answers. */
  start(): Promise<void>;
  /** Shuts the server down (SIGTERM: no save, it has no persistence) and waits for the exit. */
  stop(): Promise<void>;
  /** Stops the server (if running) and deletes its directory. */
  destroy(): Promise<void>;
  /** The end of the server log, for failure messages. */
  log(): string;
}

/** Starts a private Redis on a free port; resolves once it answers PING. */
export async function startRedisServer(): Promise<RedisServer> {
  const dir = makeScratchDir('taskq-redis-');
  const logFile = join(dir, 'redis.log');
  let server: ServerProcess | null = null;
  let port = 0;
  const url = (): string => `redis://127.0.0.1:${port}`;

  const isUp = async (): Promise<boolean> => {
    const client = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 2000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  };
  const launch = async (): Promise<void> => {
    if (server?.running()) throw new Error(`the private Redis on port ${port} is already running`);
    const s = spawnServer(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--daemonize',
        'no',
      ],
      { deathSignal: 'SIGTERM', logFile, cwd: dir },
    );
    server = s;
    await waitFor(
      async () => {
        if (!s.running()) throw new Error(`redis-server exited while starting:\n${logTail(logFile)}`);
        return isUp();
      },
      30_000,
      `the private Redis on port ${port}`,
    );
  };
  const stop = async (): Promise<void> => {
    await server?.stop('SIGTERM');
  };

  try {
    // The port was free a moment ago; if someone took it meanwhile, try another.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await launch();
        break;
      } catch (err) {
        await stop();
        if (attempt >= 3 || !/address already in use|could not create server/i.test(String(err))) throw err;
      }
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    get url() {
      return url();
    },
    port,
    isUp,
    start: launch,
    stop,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => logTail(logFile),
  };
}

/** True when a fresh connection to `url` authenticates as ACL user `user` with `password` (false on WRONGPASS). */
export async function aclPasswordWorks(url: string, user: string, password: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.auth(user, password);
    return true;
  } catch (err) {
    if (!/WRONGPASS/.test(String(err))) throw err;
    return false;
  } finally {
    probe.disconnect();
  }
}
