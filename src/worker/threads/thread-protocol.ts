/** Messages between the worker and a handler thread. */

/** Serialised error crossing the thread boundary. */
export interface ThreadErrorData {
  className: string;
  message: string;
  stack: string | null;
  code?: string;
  /** Control flow thrown by the handler. */
  control?:
    { kind: 'snooze'; delayMs: number } | { kind: 'retryAfter'; delayMs: number; consumeBudget: boolean };
}

/** Parent → thread. */
export type ToThread =
  | {
      type: 'run';
      module: string;
      exportName: string;
      payload: unknown;
      ctx: {
        jobId: string;
        actor: string;
        queue: string;
        attempt: number;
        workerId: string;
        heartbeatDetails: unknown;
      };
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
