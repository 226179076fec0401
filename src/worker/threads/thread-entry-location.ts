import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';

import { TaskQError } from '../../errors/taskq-error.js';

/** Where the handler thread's program is, and how to start it. */
export interface ThreadEntryLocation {
  /** `thread-entry.js` beside the compiled pool, or `thread-entry.ts` beside its source. */
  readonly url: URL;
  /**
   * Set when the entry is TypeScript (the package runs from its sources, e.g. under vitest or
   * tsx): the module whose `register()` installs tsx's loader in the thread before the entry loads.
   */
  readonly loader: string | undefined;
}

/** The handler thread's program cannot be started from where this package is installed. */
export class ThreadEntryUnavailable extends TaskQError {
  constructor(detail: string) {
    super('TASKQ_THREAD_ENTRY_UNAVAILABLE', `thread-isolated actors cannot run: ${detail}`);
  }
}

/** The URL of tsx's register API, or undefined when tsx is not installed. */
export function tsxLoader(): string | undefined {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return undefined;
  }
}

const TS_MODULE = /\.(c|m)?ts$/;

/**
 * Finds the thread entry beside the pool module at `poolUrl` (pass the pool's `import.meta.url`):
 * the compiled package starts `thread-entry.js` as is; a run from the TypeScript sources starts
 * `thread-entry.ts` through tsx's loader (a devDependency, so present wherever the sources run).
 *
 * @throws ThreadEntryUnavailable when the entry file is missing (e.g. the package was bundled) or
 *   the sources run without tsx installed.
 */
export function locateThreadEntry(
  poolUrl: string | URL,
  resolveLoader: () => string | undefined = tsxLoader,
): ThreadEntryLocation {
  const fromSource = TS_MODULE.test(new URL(poolUrl).pathname);
  const url = new URL(fromSource ? './thread-entry.ts' : './thread-entry.js', poolUrl);
  if (url.protocol !== 'file:' || !existsSync(fileURLToPath(url)))
    throw new ThreadEntryUnavailable(
      `their thread entry ${url.href} does not exist (run taskq from its installed files; a bundle leaves the entry out)`,
    );
  if (!fromSource) return { url, loader: undefined };
  const loader = resolveLoader();
  if (loader === undefined)
    throw new ThreadEntryUnavailable(
      `taskq runs from its TypeScript sources, and its thread entry ${url.href} needs tsx to load: install tsx`,
    );
  return { url, loader };
}

/**
 * Starts a thread running the entry. A TypeScript entry goes through a two-line bootstrap that
 * installs the loader first: on Node 20 a thread's main module does not go through loaders given
 * in its `execArgv`.
 */
export function startThread(entry: ThreadEntryLocation): Thread {
  if (entry.loader === undefined) return new Thread(entry.url);
  const bootstrap =
    `import { register } from ${JSON.stringify(entry.loader)};\n` +
    `register();\nawait import(${JSON.stringify(entry.url.href)});\n`;
  return new Thread(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`));
}
