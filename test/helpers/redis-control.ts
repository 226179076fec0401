/**
 * Stops and starts the shared test Redis for fault tests (which run one file at a time, after
 * every other test file; see the `test` script).
 */
import { execFileSync } from 'node:child_process';

export const REDIS_URL = process.env.TASKQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REDIS_PORT = new URL(REDIS_URL).port || '6379';

/** True when Redis answers PING. */
export async function redisUp(): Promise<boolean> {
  try {
    return execFileSync('redis-cli', ['-p', REDIS_PORT, 'ping'], {
      encoding: 'utf8',
      timeout: 5000,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).includes('PONG');
  } catch {
    return false;
  }
}

/** Shuts Redis down (no save). */
export function stopRedis(): void {
  try {
    execFileSync('redis-cli', ['-p', REDIS_PORT, 'shutdown', 'nosave'], { stdio: 'ignore', timeout: 10_000 });
  } catch {
    // redis-cli reports the dropped connection as an error; the server is gone either way.
  }
}

/** Starts Redis the way `.ci/run` does. */
export function startRedis(): void {
  execFileSync(
    'redis-server',
    [
      '--daemonize',
      'yes',
      '--bind',
      '127.0.0.1',
      '-::1',
      '--port',
      REDIS_PORT,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      '/var/lib/redis',
      '--logfile',
      '/var/log/redis/ci.log',
    ],
    { stdio: 'inherit', timeout: 10_000 },
  );
}
