import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** The largest integer a form may set: the capacity columns are Postgres `integer`s. */
export const MAX_FORM_INTEGER = 2_147_483_647;

/**
 * A form's integer field: blank (or absent) is null — clear the value — and decimal digits are the
 * number, which must lie in `[min, MAX_FORM_INTEGER]`. `blankMeans` completes the rule's text
 * ("or blank to …").
 * @throws InvalidArgumentError naming the field, the value and the rule
 */
export function formInteger(value: unknown, field: string, min: number, blankMeans: string): number | null {
  const text = typeof value === 'string' ? value.trim() : value;
  if (text === undefined || text === '') return null;
  const n = typeof text === 'string' && /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= min && n <= MAX_FORM_INTEGER))
    throw new InvalidArgumentError(
      field,
      value,
      `must be an integer from ${min} to ${MAX_FORM_INTEGER}, or blank ${blankMeans}`,
    );
  return n;
}
