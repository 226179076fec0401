/**
 * The one encoding of what a thread-isolated handler throws: the thread serialises it with
 * {@link serializeThrown}, the worker rebuilds it with {@link deserializeThrown}. `Snooze` and
 * `RetryAfter` come back as themselves (control flow, not failures); anything else as a
 * {@link ThreadError} keeping the original class name and `code`.
 */
import { RetryAfter, Snooze } from '../../retry/control-flow.js';
import type { ThreadErrorData } from './thread-protocol.js';

/** An error thrown by a thread-isolated handler, rebuilt on the worker's side (its class name kept). */
export class ThreadError extends Error {
  /** Class name of the original error in the thread (`typeof` the value when it was not an Error). */
  readonly originalClass: string;
  /** The original error's `code`, when it had a string one. */
  readonly code: string | undefined;

  constructor(data: ThreadErrorData) {
    super(data.message);
    this.name = data.className;
    this.originalClass = data.className;
    this.code = data.code;
    if (data.stack) this.stack = data.stack;
  }
}

/** The control-flow errors' fields as read off any thrown value (see {@link serializeThrown}). */
interface ControlFields {
  code?: unknown;
  delayMs?: unknown;
  consumeBudget?: unknown;
}

/**
 * Turns a value thrown in the handler thread into structured-cloneable data. Control flow is
 * recognised by its `code` rather than `instanceof`: the handler module may load another copy of
 * `Snooze` / `RetryAfter` than this module does (e.g. the package's sources next to its build).
 */
export function serializeThrown(err: unknown): ThreadErrorData {
  if (!(err instanceof Error)) return { className: typeof err, message: describe(err), stack: null };
  const ctorName = (err.constructor as { name?: unknown } | undefined)?.name;
  const className =
    typeof ctorName === 'string' && ctorName !== '' && ctorName !== 'Error' ? ctorName : err.name || 'Error';
  const data: ThreadErrorData = { className, message: err.message, stack: err.stack ?? null };
  const { code, delayMs, consumeBudget } = err as ControlFields;
  if (typeof code === 'string') data.code = code;
  if (typeof delayMs === 'number') {
    if (code === 'TASKQ_SNOOZE') data.control = { kind: 'snooze', delayMs };
    else if (code === 'TASKQ_RETRY_AFTER')
      data.control = { kind: 'retryAfter', delayMs, consumeBudget: consumeBudget !== false };
  }
  return data;
}

/** Rebuilds on the worker's side what {@link serializeThrown} made of a thrown value. */
export function deserializeThrown(data: ThreadErrorData): Error {
  const control = data.control;
  if (control?.kind === 'snooze') return new Snooze(control.delayMs);
  if (control?.kind === 'retryAfter')
    return new RetryAfter(control.delayMs, { consumeBudget: control.consumeBudget });
  return new ThreadError(data);
}

/** `String(value)`, which itself throws for a few values (an object without a prototype). */
function describe(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
