/**
 * Base class of every error TaskQ throws on purpose.
 *
 * Each subclass carries a stable `code` (safe to match on across versions), the fields the
 * reference documents give it, and a message that says what to do next. The original error,
 * when there is one, is kept as `cause`.
 */
export class TaskQError extends Error {
  /** Stable, machine-readable identifier of the error kind. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = new.target.name;
  }
}
