import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** The rule a string with a NUL character breaks. */
export const NUL_TEXT_RULE = 'must not contain NUL (\\u0000) characters';
/** The rule a string with a lone surrogate breaks. */
export const UNICODE_TEXT_RULE =
  'must be valid Unicode: it holds a lone surrogate (half of a UTF-16 pair), which UTF-8 cannot encode';

/** `String.prototype.isWellFormed` (Node 20+; not in the ES2023 typings). */
export function isWellFormed(value: string): boolean {
  return (value as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/**
 * `text` with every NUL and every lone surrogate replaced by U+FFFD, for text TaskQ must store
 * whatever it holds (a handler's error message, class and stack): refusing it is not an option, and
 * Postgres text accepts neither (a NUL fails the write with SQLSTATE 22021).
 */
export function storableText(text: string): string {
  const noNul = text.includes('\u0000') ? text.replaceAll('\u0000', '\ufffd') : text;
  return isWellFormed(noNul) ? noNul : (noNul as unknown as { toWellFormed(): string }).toWellFormed();
}

/**
 * Checks that Postgres can store `value` as text unchanged: no NUL character (Postgres raises
 * SQLSTATE 22021 deep inside the driver) and no lone surrogate (UTF-8 cannot encode one: the driver
 * would silently store U+FFFD instead, and jsonb refuses the escape). Rejected at the boundary so
 * both backends fail identically and with a clear message.
 */
export function checkStorableText(value: string, field: string): string {
  if (value.includes('\u0000')) throw new InvalidArgumentError(field, value, NUL_TEXT_RULE);
  if (!isWellFormed(value)) throw new InvalidArgumentError(field, value, UNICODE_TEXT_RULE);
  return value;
}

/** The former name of {@link checkStorableText}, which also rejects lone surrogates now. */
export const checkNoNul = checkStorableText;

/**
 * Validates a non-empty string that Postgres stores unchanged (see {@link checkStorableText}),
 * optionally not blank and bounded in UTF-8 bytes.
 */
export function checkText(
  value: unknown,
  field: string,
  opts: { allowEmpty?: boolean; maxBytes?: number; notBlank?: boolean } = {},
): string {
  if (typeof value !== 'string') throw new InvalidArgumentError(field, value, 'must be a string');
  if (!opts.allowEmpty && value.length === 0)
    throw new InvalidArgumentError(field, value, 'must not be empty');
  if (opts.notBlank && value.trim().length === 0) {
    throw new InvalidArgumentError(field, value, 'must not be empty or whitespace only');
  }
  checkStorableText(value, field);
  if (opts.maxBytes !== undefined) {
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > opts.maxBytes) {
      throw new InvalidArgumentError(
        field,
        value,
        `must be at most ${opts.maxBytes} UTF-8 bytes (got ${bytes})`,
      );
    }
  }
  return value;
}

/** Queue names: 1–128 characters of letters, digits and `_ - . :`, starting with a letter or digit. */
export const QUEUE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** Validates a queue name (decided here, as the reference leaves the rule open; see docs/configuration.md). */
export function checkQueueName(value: unknown, field = 'queue'): string {
  if (typeof value !== 'string' || !QUEUE_NAME_RE.test(value)) {
    throw new InvalidArgumentError(
      field,
      value,
      'must be 1-128 characters of letters, digits, "_", "-", "." or ":", starting with a letter or digit',
    );
  }
  return value;
}

/** Actor names follow the queue-name rule. */
export function checkActorName(value: unknown, field = 'actor.name'): string {
  if (typeof value !== 'string' || !QUEUE_NAME_RE.test(value)) {
    throw new InvalidArgumentError(
      field,
      value,
      'must be 1-128 characters of letters, digits, "_", "-", "." or ":", starting with a letter or digit',
    );
  }
  return value;
}

/** Integer check within an inclusive range. */
export function checkInt(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
    throw new InvalidArgumentError(field, value, `must be an integer ${range}`);
  }
  return value;
}

/** True for `{}`-style objects (not arrays, class instances, Maps, …). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
