/**
 * The program of a handler thread (started by thread-pool.ts from this file's URL). It imports the
 * actor's module and runs its handler for one job at a time, with a context whose `signal` and
 * `shouldAbort()` follow the worker's cancel requests; messages: thread-protocol.ts. It imports
 * only what a thread needs (no logger, no database drivers).
 */
import { parentPort } from 'node:worker_threads';

import { SubJobsUnavailableError } from '../../errors/sub-job-errors.js';
import { serializeThrown } from './thread-error-codec.js';
import type { FromThread, ThreadJobContext, ToThread } from './thread-protocol.js';

type Handler = (payload: unknown, ctx: ThreadJobContext, deps?: Readonly<Record<string, unknown>>) => unknown;

const port = parentPort;
if (!port) throw new Error('thread-entry runs only as a worker thread started by the ThreadPool');

/** Handler modules by URL: each is imported once per thread. */
const modules = new Map<string, Promise<Record<string, unknown>>>();
let controller: AbortController | null = null;
let loaderReady: Promise<unknown> | null = null;
const send = (msg: FromThread): void => port.postMessage(msg);

port.on('message', (msg: ToThread) => {
  if (msg.type === 'abort') {
    controller?.abort(new Error(msg.reason));
    return;
  }
  const flag = new Int32Array(msg.abortFlag);
  controller = new AbortController();
  const signal = controller.signal;
  const ctx: ThreadJobContext = {
    ...msg.ctx,
    payload: msg.payload,
    signal,
    shouldAbort: () => Atomics.load(flag, 0) === 1 || signal.aborted,
    heartbeat: (details) => send({ type: 'heartbeat', details, hasDetails: details !== undefined }),
    progress: async (update) => send({ type: 'progress', update }),
    log: console,
    get jobs(): never {
      throw new SubJobsUnavailableError(
        `ctx.jobs is not available in thread-isolated actors (job ${msg.ctx.jobId}, actor ${msg.ctx.actor}): ` +
          'enqueue sub-jobs from an in-process actor, or from a TaskQ client of your own (those enqueues are autonomous)',
      );
    },
  };
  const loader = msg.loader;
  if (loader && !loaderReady)
    loaderReady = (import(loader) as Promise<{ register(): unknown }>).then((api) => api.register());
  let mod = modules.get(msg.module);
  if (!mod) {
    mod = Promise.resolve(loaderReady).then(() => import(msg.module) as Promise<Record<string, unknown>>);
    modules.set(msg.module, mod);
  }
  void mod
    .then(async (m) => {
      const handler = m[msg.exportName];
      if (typeof handler !== 'function')
        throw new TypeError(`${msg.module} has no function export named ${msg.exportName}`);
      return (handler as Handler)(msg.payload, ctx, msg.deps);
    })
    .then(
      (value) => send({ type: 'result', value }),
      (err: unknown) => send({ type: 'error', error: serializeThrown(err) }),
    );
});
