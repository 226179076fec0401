import { redactSecrets } from './redact-secrets.js';
import { TaskQError } from './taskq-error.js';

/** Options of {@link InvalidArgumentError}. */
export interface InvalidArgumentOptions {
  /**
   * Leave the value out of the message and of the `value` field (payloads: their contents may be
   * personal or secret, and errors end up in logs). The rule then says where the problem is.
   */
  conceal?: boolean;
}

/**
 * Bad input rejected at the boundary, before anything is written.
 *
 * The message names the field, the offending value (abbreviated; never a payload's contents) and
 * the rule it broke. This is the TypeScript counterpart of the reference's `ValueError`.
 */
export class InvalidArgumentError extends TaskQError {
  /** The option or field that was rejected, e.g. `enqueue.idempotencyKey`. */
  readonly field: string;
  /** The rejected value, as given (may be abbreviated in the message); `undefined` when concealed. */
  readonly value: unknown;
  /** The rule the value broke, in words. */
  readonly rule: string;

  constructor(field: string, value: unknown, rule: string, options: InvalidArgumentOptions = {}) {
    super(
      'TASKQ_INVALID_ARGUMENT',
      options.conceal
        ? `${field} is invalid: ${rule}`
        : `${field}: ${describeValue(value)} is invalid: ${rule}`,
    );
    this.field = field;
    this.value = options.conceal ? undefined : value;
    this.rule = rule;
  }
}

/**
 * Renders a value for an error message without dumping large or nested inputs, and without the
 * password of a connection string (URL user info or a `password=` pair). Objects are described by
 * their kind and size, never by their contents.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const safe = redactSecrets(value);
    const shown = safe.length > 60 ? `${safe.slice(0, 57)}...` : safe;
    return JSON.stringify(shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'function') return 'a function';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Array.isArray(value)) return `an array of ${value.length}`;
  const proto = Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null;
  if (proto === null || proto === Object.prototype) {
    const n = Object.keys(value).length;
    return n === 0 ? 'an empty object' : `an object with ${n} key${n === 1 ? '' : 's'}`;
  }
  const name = typeof proto.constructor?.name === 'string' ? proto.constructor.name : '';
  return name ? `a ${name}` : 'an object';
}
