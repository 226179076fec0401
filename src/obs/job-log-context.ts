import { AsyncLocalStorage } from 'node:async_hooks';

import { silentLogger, type Logger } from './logger.js';

/**
 * The fields that bind a log line to one attempt of one job: on every line `ctx.log` and
 * {@link jobLogger} write, and on the worker's own lines about the job. `traceId` is there only
 * when the job row has one (the producer's W3C trace id).
 */
export interface JobLogFields {
  readonly jobId: string;
  readonly actor: string;
  readonly queue: string;
  readonly attempt: number;
  readonly traceId?: string;
}

/** What the worker knows of a job when it logs about it (a claimed row; `traceId` when read). */
export interface JobLogSource {
  id: string;
  actor: string;
  queue: string;
  attempt: number;
  traceId?: string | null;
}

/** The job fields of a row, frozen (the same object is handed to user code by {@link currentJob}). */
export function jobLogFields(row: JobLogSource): JobLogFields {
  const traceId = row.traceId;
  const fields: JobLogFields =
    typeof traceId === 'string' && traceId !== ''
      ? { jobId: row.id, actor: row.actor, queue: row.queue, attempt: row.attempt, traceId }
      : { jobId: row.id, actor: row.actor, queue: row.queue, attempt: row.attempt };
  return Object.freeze(fields);
}

/** A logger bound to a job, and the fields it is bound with (what the worker keeps per attempt). */
export interface JobScopedLogger extends Logger {
  readonly fields: JobLogFields;
}

/**
 * The attempt a piece of code runs for. The worker enters it around each in-process handler call
 * and each hook, so that it follows every `await` of the handler and everything it calls, and
 * stays apart between handlers running at the same time. The store is the attempt's logger itself
 * (no allocation per job beyond the logger `ctx.log` already is).
 */
const scope = new AsyncLocalStorage<JobScopedLogger>();

/**
 * Runs `fn(...args)` inside the attempt's log scope (worker-internal). Arguments are passed
 * through rather than closed over, so that the caller's existing closure is the only one per job.
 */
export function runInJobScope<A extends unknown[], R>(
  log: JobScopedLogger,
  fn: (...args: A) => R,
  ...args: A
): R {
  return scope.run(log, fn, ...args);
}

/**
 * The job whose handler (or hook) is running the calling code, or `undefined` outside one: its
 * id, actor, queue, attempt and, when the job has one, `traceId`. Works across `await`s and in
 * plain functions called from a handler, without passing `ctx` down. The object is frozen, and
 * shaped to be a pino `mixin`, so that your own pino logger can carry the same fields:
 *
 * ```ts
 * import { pino } from 'pino';
 * import { currentJob } from 'taskq';
 * const logger = pino({ mixin: () => currentJob() ?? {} });
 * ```
 *
 * Handlers of thread-isolated actors run in another thread: there it returns `undefined`.
 */
export function currentJob(): JobLogFields | undefined {
  return scope.getStore()?.fields;
}

/**
 * The logger of the job whose handler (or hook) is running the calling code — the same logger as
 * that handler's `ctx.log`, writing to the worker's log with `jobId`, `actor`, `queue`, `attempt`
 * and `traceId` on every line — or `fallback` outside a job (default: a logger that drops
 * everything). For module-level code that a handler calls and that has no `ctx`:
 *
 * ```ts
 * import { jobLogger } from 'taskq';
 * export async function chargeCard(id: string): Promise<void> {
 *   jobLogger(appLogger).info({ cardId: id }, 'charge-started');
 * }
 * ```
 *
 * Call it where you log (it is one lookup), not once at module load.
 */
export function jobLogger(fallback: Logger = silentLogger): Logger {
  return scope.getStore() ?? fallback;
}
