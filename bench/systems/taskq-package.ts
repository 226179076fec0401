/**
 * TaskQ as its users run it: the compiled package in `dist/`, loaded through its public entry points
 * (`taskq`, `taskq/worker`, `taskq/ratelimit`), as the peers run from the JavaScript they publish.
 *
 * Why not the TypeScript sources through tsx: tsx compiles each module with esbuild's `keepNames`,
 * which wraps every function a module creates at run time in a call that redefines its `name`
 * property. The worker creates several closures per job, so run from `src/` it spends CPU per job on
 * code that no build of the package contains. `BENCH_TASKQ_FROM=src` runs the sources anyway
 * (profiles then point at `.ts` lines).
 *
 * `ensureTaskqBuild` (the harness calls it once, before any worker process starts) builds `dist/`
 * with `npm run build` when it is missing or older than a file under `src/`, so a run never measures
 * stale code. Types come from the sources either way: `dist/` is their compilation.
 */
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import type * as MainEntry from '../../src/index.js';
import type * as RateLimitEntry from '../../src/ratelimit/index.js';
import type * as WorkerEntry from '../../src/worker/index.js';
import type * as ProducerModule from '../../src/worker/producer.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The package's three entry points, and the worker's producer module for its documented constants. */
export interface TaskqPackage {
  main: typeof MainEntry;
  worker: typeof WorkerEntry;
  ratelimit: typeof RateLimitEntry;
  producer: typeof ProducerModule;
}

/** Where the benchmark loads TaskQ from: `dist` (default) or `src` (`BENCH_TASKQ_FROM=src`). */
export function taskqSource(): 'dist' | 'src' {
  const from = process.env.BENCH_TASKQ_FROM ?? 'dist';
  if (from !== 'dist' && from !== 'src') {
    throw new Error(`BENCH_TASKQ_FROM must be "dist" or "src", got ${JSON.stringify(from)}`);
  }
  return from;
}

let loaded: Promise<TaskqPackage> | null = null;

/** Imports the entry points once per process. */
export function loadTaskq(): Promise<TaskqPackage> {
  loaded ??= (async () => {
    const from = taskqSource();
    const ext = from === 'dist' ? 'js' : 'ts';
    const entry = (path: string) => pathToFileURL(join(ROOT, from, `${path}.${ext}`)).href;
    const [main, worker, ratelimit, producer] = await Promise.all([
      import(entry('index')) as Promise<typeof MainEntry>,
      import(entry('worker/index')) as Promise<typeof WorkerEntry>,
      import(entry('ratelimit/index')) as Promise<typeof RateLimitEntry>,
      import(entry('worker/producer')) as Promise<typeof ProducerModule>,
    ]);
    return { main, worker, ratelimit, producer };
  })();
  return loaded;
}

/** The newest modification time of any file under `dir` (ms since the epoch; 0 when empty). */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Builds `dist/` when the benchmark will load it and it is missing or older than `src/`. Returns what
 * it did, for the harness's log.
 */
export function ensureTaskqBuild(): string {
  if (taskqSource() === 'src') return 'TaskQ from src/ through tsx (BENCH_TASKQ_FROM=src)';
  const built = join(ROOT, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newestMtime(join(ROOT, 'src'))) {
    return 'TaskQ from dist/ (up to date)';
  }
  execSync('npm run build', { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  return 'TaskQ from dist/ (built now: it was missing or older than src/)';
}
