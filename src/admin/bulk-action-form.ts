import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { one } from './admin-route-context.js';
import { FILTER_KEYS, type JobsQuery } from './jobs-page.js';

/** The selecting filter fields of a query string or a bulk action's form body. */
export function filterQueryOf(values: Record<string, unknown>): JobsQuery {
  const query: JobsQuery = {};
  for (const key of FILTER_KEYS) {
    const value = one(values[key]);
    if (value !== undefined) query[key] = value;
  }
  return query;
}

/**
 * The count the operator confirmed on a bulk action's preview (the form's `expected` field): the
 * action goes ahead only while no more jobs match than that.
 * @throws InvalidArgumentError when it is not a whole number
 */
export function expectedCount(body: Record<string, unknown>): number {
  const text = one(body.expected);
  if (text === undefined || !/^\d{1,9}$/.test(text))
    throw new InvalidArgumentError(
      'expected',
      body.expected ?? null,
      'must be the previewed count (a whole number)',
    );
  return Number(text);
}
