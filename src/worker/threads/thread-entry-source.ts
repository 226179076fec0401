/**
 * The program of a handler thread, as JavaScript source. It is started from a `data:` URL so it
 * never depends on how this package itself is loaded (compiled, or TypeScript through a loader).
 * It imports the actor's module and runs its handler for one job at a time, with a context whose
 * `signal` and `shouldAbort()` follow the worker's cancel requests; messages: thread-protocol.ts.
 */
export const THREAD_ENTRY_SOURCE = String.raw`
import { parentPort } from 'node:worker_threads';

const modules = new Map();
let controller = null;
let loaderReady = null;
const send = (msg) => parentPort.postMessage(msg);

function serialise(err) {
  if (err instanceof Error) {
    const className = err.constructor && err.constructor.name && err.constructor.name !== 'Error' ? err.constructor.name : err.name || 'Error';
    const data = { className, message: err.message, stack: err.stack ?? null };
    if (typeof err.code === 'string') data.code = err.code;
    if (err.code === 'TASKQ_SNOOZE' && typeof err.delayMs === 'number') data.control = { kind: 'snooze', delayMs: err.delayMs };
    if (err.code === 'TASKQ_RETRY_AFTER' && typeof err.delayMs === 'number') {
      data.control = { kind: 'retryAfter', delayMs: err.delayMs, consumeBudget: err.consumeBudget !== false };
    }
    return data;
  }
  return { className: typeof err, message: String(err), stack: null };
}

parentPort.on('message', (msg) => {
  if (msg.type === 'abort') {
    if (controller) controller.abort(new Error(msg.reason));
    return;
  }
  const flag = new Int32Array(msg.abortFlag);
  controller = new AbortController();
  const signal = controller.signal;
  const ctx = {
    ...msg.ctx,
    payload: msg.payload,
    signal,
    shouldAbort: () => Atomics.load(flag, 0) === 1 || signal.aborted,
    heartbeat: (details) => send({ type: 'heartbeat', details, hasDetails: details !== undefined }),
    progress: async (update) => send({ type: 'progress', update }),
    log: console,
  };
  if (msg.loader && !loaderReady) loaderReady = import(msg.loader).then((api) => api.register());
  let mod = modules.get(msg.module);
  if (!mod) {
    mod = Promise.resolve(loaderReady).then(() => import(msg.module));
    modules.set(msg.module, mod);
  }
  mod
    .then(async (m) => {
      const handler = m[msg.exportName];
      if (typeof handler !== 'function') throw new TypeError(msg.module + ' has no function export named ' + msg.exportName);
      return handler(msg.payload, ctx);
    })
    .then(
      (value) => send({ type: 'result', value }),
      (err) => send({ type: 'error', error: serialise(err) }),
    );
});
`;
