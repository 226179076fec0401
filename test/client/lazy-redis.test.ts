/**
 * ioredis is loaded only when TaskQ builds a Redis client of its own: a process that never talks to
 * Redis (the default) does not carry its memory and start-up cost.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const project = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `body` as an ES module in a fresh Node process (sources through tsx); returns its stdout. */
function runModule(body: string): string {
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', body], {
    cwd: project,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const IOREDIS_LOADED = `
  import { createRequire } from 'node:module';
  const loaded = () => Object.keys(createRequire(import.meta.url).cache)
    .some((k) => k.includes('/node_modules/ioredis/'));
`;

describe('ioredis loading', () => {
  it('importing every entry point does not load it', () => {
    const out = runModule(`${IOREDIS_LOADED}
      await import('./src/index.ts');
      await import('./src/worker/index.ts');
      await import('./src/ratelimit/index.ts');
      await import('./src/testing/index.ts');
      console.log(JSON.stringify({ loaded: loaded() }));`);
    expect(JSON.parse(out)).toEqual({ loaded: false });
  });

  it('building an owned client loads it, once', () => {
    const out = runModule(`${IOREDIS_LOADED}
      const { createOwnedRedis } = await import('./src/progress/redis-progress-publisher.ts');
      const before = loaded();
      const a = createOwnedRedis('redis://127.0.0.1:6379', 'redisUrl', { connectionName: 't', lazyConnect: true });
      const b = createOwnedRedis('redis://127.0.0.1:6379', 'redisUrl', { connectionName: 't', lazyConnect: true });
      const sameClass = Object.getPrototypeOf(a) === Object.getPrototypeOf(b);
      a.disconnect(); b.disconnect();
      console.log(JSON.stringify({ before, after: loaded(), sameClass }));`);
    expect(JSON.parse(out)).toEqual({ before: false, after: true, sameClass: true });
  });
});
