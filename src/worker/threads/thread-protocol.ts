/** Messages between the worker and a handler thread, and the context a thread hands its handler. */

/** Serialised error crossing the thread boundary (see thread-error-codec.ts). */
export interface ThreadErrorData {
  className: string;
  message: string;
  stack: string | null;
  code?: string;
  /** Control flow thrown by the handler. */
  control?:
    { kind: 'snooze'; delayMs: number } | { kind: 'retryAfter'; delayMs: number; consumeBudget: boolean };
}

/** The attempt's plain facts, sent with each job. */
export interface ThreadJobFacts {
  jobId: string;
  actor: string;
  queue: string;
  attempt: number;
  workerId: string;
  heartbeatDetails: unknown;
}

/**
 * What a thread-isolated handler receives as `ctx`: the worker's `JobContext` minus what cannot
 * cross a thread (the pino logger becomes `console`). `signal` and `shouldAbort()` follow the
 * worker's cancel requests; `shouldAbort()` also reads the shared flag, so a busy loop can poll it.
 */
export interface ThreadJobContext extends Readonly<ThreadJobFacts> {
  /** The validated payload (same value as the handler's first argument). */
  readonly payload: unknown;
  /** Aborted when the worker asks the job to stop (its reason's message is the worker's). */
  readonly signal: AbortSignal;
  /** True once the job should stop. */
  shouldAbort(): boolean;
  /** Proves the handler is alive; `details` go to the next attempt as `heartbeatDetails`. */
  heartbeat(details?: unknown): void;
  /** Reports progress (forwarded to the worker's progress tracker). */
  progress(update: unknown): Promise<void>;
  /** The thread's console. */
  readonly log: Console;
  /**
   * Not available in a thread: reading it throws `SubJobsUnavailableError`. Actors and connections
   * cannot cross the thread boundary; enqueue sub-jobs from an in-process actor.
   */
  readonly jobs: never;
}

/** Parent → thread. */
export type ToThread =
  | {
      type: 'run';
      module: string;
      exportName: string;
      payload: unknown;
      ctx: ThreadJobFacts;
      /** The actor's injected values (structured-cloned), when it injects any: the handler's third argument. */
      deps?: Readonly<Record<string, unknown>>;
      /** Int32 flag: 1 once the job should stop (readable by a blocked handler via `ctx.shouldAbort()`). */
      abortFlag: SharedArrayBuffer;
      /** Module whose `register()` installs a TypeScript loader in the thread (TS handler modules only). */
      loader?: string;
    }
  | { type: 'abort'; reason: string };

/** Thread → parent. */
export type FromThread =
  | { type: 'result'; value: unknown }
  | { type: 'error'; error: ThreadErrorData }
  | { type: 'progress'; update: unknown }
  | { type: 'heartbeat'; details?: unknown; hasDetails: boolean };
