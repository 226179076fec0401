import type { Worker as Thread } from 'node:worker_threads';

import type { Logger } from '../../obs/logger.js';
import { TaskQError } from '../../errors/taskq-error.js';
import { deserializeThrown } from './thread-error-codec.js';
import {
  locateThreadEntry,
  startThread,
  tsxLoader,
  type ThreadEntryLocation,
} from './thread-entry-location.js';
import type { FromThread, ThreadJobFacts, ToThread } from './thread-protocol.js';

/** The handler's thread was terminated (phase 2 of a cancel, or shutdown). */
export class ThreadTerminated extends TaskQError {
  constructor(jobId: string) {
    super('TASKQ_THREAD_TERMINATED', `the thread running job ${jobId} was terminated`);
  }
}

/** One run of a thread-isolated handler. */
export interface ThreadRun {
  result: Promise<unknown>;
  /** Cooperative: aborts the thread-side signal and sets the `shouldAbort()` flag. */
  abort(reason: string): void;
  /** Forced: terminates the thread; `result` rejects with `ThreadTerminated`. */
  terminate(): void;
}

/**
 * A handler module written in TypeScript (tests, `taskq dev`) needs a loader inside the thread:
 * tsx's register API, when tsx is installed. Compiled `.js` modules need nothing.
 */
function loaderFor(module: string): string | undefined {
  return /\.(c|m)?ts$/.test(module) ? tsxLoader() : undefined;
}
const IDLE_TIMEOUT_MS = 30_000;

/**
 * Threads for thread-isolated actors: one job per thread at a time, threads reused while idle and
 * replaced when terminated. A handler thread can be stopped for real (phase 2 of a cancel), which a
 * promise on the main thread cannot.
 */
export class ThreadPool {
  private readonly idle: { thread: Thread; timer: NodeJS.Timeout }[] = [];
  private readonly busy = new Set<Thread>();
  private closed = false;
  private readonly entry: ThreadEntryLocation;

  /** @throws ThreadEntryUnavailable when the thread entry cannot be found (see `locateThreadEntry`). */
  constructor(private readonly logger: Logger) {
    this.entry = locateThreadEntry(import.meta.url);
  }

  private take(): Thread {
    const entry = this.idle.pop();
    if (entry) {
      clearTimeout(entry.timer);
      return entry.thread;
    }
    const thread = startThread(this.entry);
    thread.unref();
    return thread;
  }

  private giveBack(thread: Thread): void {
    this.busy.delete(thread);
    if (this.closed) {
      void thread.terminate();
      return;
    }
    const timer = setTimeout(() => {
      const i = this.idle.findIndex((e) => e.thread === thread);
      if (i >= 0) this.idle.splice(i, 1);
      void thread.terminate();
    }, IDLE_TIMEOUT_MS);
    timer.unref();
    this.idle.push({ thread, timer });
  }

  /** Runs `exportName` of `module` (a file URL or path) in a thread. */
  run(
    job: {
      module: string;
      exportName: string;
      payload: unknown;
      ctx: ThreadJobFacts;
      deps?: Readonly<Record<string, unknown>>;
    },
    hooks: {
      onProgress: (update: unknown) => void;
      onHeartbeat: (details: unknown, hasDetails: boolean) => void;
    },
  ): ThreadRun {
    const thread = this.take();
    this.busy.add(thread);
    const abortFlag = new SharedArrayBuffer(4);
    let finished = false;
    let terminated = false;
    let settle!: { resolve: (v: unknown) => void; reject: (e: unknown) => void };
    const result = new Promise<unknown>((resolve, reject) => {
      settle = { resolve, reject };
    });
    const cleanup = (): void => {
      finished = true;
      thread.off('message', onMessage);
      thread.off('error', onError);
      thread.off('exit', onExit);
    };
    const onMessage = (msg: FromThread): void => {
      switch (msg.type) {
        case 'progress':
          hooks.onProgress(msg.update);
          return;
        case 'heartbeat':
          hooks.onHeartbeat(msg.details, msg.hasDetails);
          return;
        case 'result':
          cleanup();
          this.giveBack(thread);
          settle.resolve(msg.value);
          return;
        case 'error': {
          cleanup();
          this.giveBack(thread);
          settle.reject(deserializeThrown(msg.error));
          return;
        }
      }
    };
    const onError = (err: Error): void => {
      if (finished) return;
      cleanup();
      this.busy.delete(thread);
      settle.reject(err);
    };
    const onExit = (): void => {
      if (finished) return;
      cleanup();
      this.busy.delete(thread);
      settle.reject(
        terminated
          ? new ThreadTerminated(job.ctx.jobId)
          : new Error(`the thread running job ${job.ctx.jobId} exited`),
      );
    };
    thread.on('message', onMessage);
    thread.on('error', onError);
    thread.on('exit', onExit);
    // A thread started from the TypeScript sources has tsx's loader already.
    const loader = this.entry.loader === undefined ? loaderFor(job.module) : undefined;
    thread.postMessage({ type: 'run', ...job, abortFlag, loader } satisfies ToThread);
    return {
      result,
      abort: (reason) => {
        if (finished) return;
        Atomics.store(new Int32Array(abortFlag), 0, 1);
        thread.postMessage({ type: 'abort', reason } satisfies ToThread);
      },
      terminate: () => {
        if (finished) return;
        terminated = true;
        this.logger.warn({ jobId: job.ctx.jobId }, 'thread-terminated');
        void thread.terminate();
      },
    };
  }

  /** Terminates every thread (worker shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    for (const e of this.idle.splice(0)) {
      clearTimeout(e.timer);
      await e.thread.terminate();
    }
    for (const t of this.busy) await t.terminate();
    this.busy.clear();
  }
}
