/**
 * What a supervised run adds around a handler (see `JobRunner.runSupervised`): starting it in a
 * worker thread, and racing it against its `startToClose` and `heartbeatTimeout`. Kept apart from the
 * runner's plain path, which a job with neither never touches.
 */
import type { JobContext } from '../core/context.js';
import type { ClaimedJob } from '../backend/types.js';
import { HeartbeatTimeout } from '../errors/progress-errors.js';
import type { Logger } from '../obs/logger.js';
import type { ProgressUpdate } from '../progress/progress-event.js';
import { StartToCloseTimeout } from '../retry/control-flow.js';
import type { LazyAbort } from './lazy-abort.js';
import type { ProgressTracker } from './progress-tracker.js';
import type { ThreadPool } from './threads/thread-pool.js';

/** One attempt's handler in a worker thread. */
export interface ThreadRun {
  /** The handler's return value, or its error. */
  result: Promise<unknown>;
  /** Stops the thread (phase 2 of a cancel, or shutdown). */
  terminate: () => void;
}

/**
 * Starts a thread-isolated actor's handler: the thread's progress and heartbeats go to the tracker,
 * and an abort of the attempt is forwarded to the thread (where `ctx.shouldAbort()` reads it).
 */
export function startThreadHandler(
  threads: ThreadPool,
  thread: { readonly module: string; readonly exportName: string },
  attempt: {
    row: ClaimedJob;
    payload: unknown;
    ctx: JobContext;
    workerId: string;
    tracker: ProgressTracker;
    log: Logger;
    abort: LazyAbort;
    /** The actor's injected values (checked cloneable), when it injects any. */
    deps?: Readonly<Record<string, unknown>>;
  },
): ThreadRun {
  const { row, payload, ctx, workerId, tracker, log, abort, deps } = attempt;
  const run = threads.run(
    {
      module: thread.module,
      exportName: thread.exportName,
      payload,
      ...(deps === undefined ? {} : { deps }),
      ctx: {
        jobId: row.id,
        actor: row.actor,
        queue: row.queue,
        attempt: row.attempt,
        workerId,
        heartbeatDetails: ctx.heartbeatDetails,
      },
    },
    {
      onProgress: (update) => {
        try {
          tracker.report(row.id, update as ProgressUpdate);
        } catch (err) {
          log.warn({ err }, 'thread-progress-rejected');
        }
      },
      onHeartbeat: (details, hasDetails) => {
        try {
          tracker.heartbeat(row.id, hasDetails ? details : undefined);
        } catch (err) {
          log.warn({ err }, 'thread-heartbeat-rejected');
        }
      },
    },
  );
  const forward = (): void => run.abort(String((abort.reason as Error | undefined)?.message ?? 'aborted'));
  if (abort.aborted) forward();
  else abort.signal.addEventListener('abort', forward, { once: true });
  return { result: run.result, terminate: run.terminate };
}

/** A handler raced against its timeouts ({@link superviseTimeouts}). */
export interface TimedHandler {
  /**
   * The handler's value or error — or a rejection with the timeout's reason once a timeout aborts
   * the attempt. Other aborts (a cancel, shutdown) are the handler's to honour: it is awaited.
   */
  readonly value: Promise<unknown>;
  /** Settles when the handler itself settles (after a timeout it may still be running). */
  readonly done: Promise<void>;
  /** True once the handler itself has settled. */
  readonly settled: boolean;
  /** Stops the timers (once the attempt has an outcome). */
  stop(): void;
}

/**
 * Starts the attempt's timers: `startToCloseMs` after the start, or `heartbeatTimeoutMs` without a
 * heartbeat or progress report (Temporal-style), the attempt's signal aborts with
 * `StartToCloseTimeout` / `HeartbeatTimeout`, and {@link TimedHandler.value} rejects with it.
 */
export function superviseTimeouts(
  handler: Promise<unknown>,
  abort: LazyAbort,
  tracker: ProgressTracker,
  jobId: string,
  startToCloseMs: number | null,
  heartbeatTimeoutMs: number | null,
): TimedHandler {
  let settled = false;
  const done = handler.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(abort.reason);
    if (abort.aborted) onAbort();
    else abort.signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  const timer =
    startToCloseMs === null
      ? undefined
      : setTimeout(() => abort.abort(new StartToCloseTimeout(startToCloseMs)), startToCloseMs);
  const beatTimer =
    heartbeatTimeoutMs === null
      ? undefined
      : setInterval(
          () => {
            if (tracker.sinceLastBeat(jobId) > heartbeatTimeoutMs && !abort.aborted)
              abort.abort(new HeartbeatTimeout(heartbeatTimeoutMs));
          },
          Math.max(10, Math.min(heartbeatTimeoutMs / 4, 1000)),
        );
  return {
    value: Promise.race([handler, abortedOnTimeout(aborted)]),
    done,
    get settled() {
      return settled;
    },
    stop() {
      clearTimeout(timer);
      clearInterval(beatTimer);
    },
  };
}

/** Rejects when the job's signal aborts with a timeout (other aborts are the handler's to honour). */
function abortedOnTimeout(aborted: Promise<never>): Promise<never> {
  return aborted.catch((reason: unknown) => {
    if (reason instanceof StartToCloseTimeout || reason instanceof HeartbeatTimeout) throw reason;
    // Cancels and shutdown aborts: wait for the handler itself (cooperative), i.e. never settle here.
    return new Promise<never>(() => undefined);
  });
}
