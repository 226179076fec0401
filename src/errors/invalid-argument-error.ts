import { redactSecrets } from './redact-secrets.js';
import { TaskQError } from './taskq-error.js';

/**
 * Bad input rejected at the boundary, before anything is written.
 *
 * The message names the field, the offending value (abbreviated) and the rule it broke. This is
 * the TypeScript counterpart of the reference's `ValueError`.
 */
export class InvalidArgumentError extends TaskQError {
  /** The option or field that was rejected, e.g. `enqueue.idempotencyKey`. */
  readonly field: string;
  /** The rejected value, as given (may be abbreviated in the message). */
  readonly value: unknown;
  /** The rule the value broke, in words. */
  readonly rule: string;

  constructor(field: string, value: unknown, rule: string) {
    super('TASKQ_INVALID_ARGUMENT', `${field}: ${describeValue(value)} is invalid: ${rule}`);
    this.field = field;
    this.value = value;
    this.rule = rule;
  }
}

/**
 * Renders a value for an error message without dumping large or nested inputs, and without the
 * password of a connection string (URL user info or a `password=` pair).
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const safe = redactSecrets(value);
    const shown = safe.length > 60 ? `${safe.slice(0, 57)}...` : safe;
    return JSON.stringify(shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Array.isArray(value)) return `array(${value.length})`;
  if (typeof value === 'function') return 'function';
  return Object.prototype.toString.call(value);
}
