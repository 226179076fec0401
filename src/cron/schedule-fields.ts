import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** Longest schedule name and identity key, in characters. */
export const SCHEDULE_NAME_MAX_CHARS = 200;
const IDENTITY_KEY_MAX_CHARS = 1024;

/** A schedule's name: a string of at most 200 characters, no NUL (`''` is the unnamed schedule). */
export function checkScheduleName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length > SCHEDULE_NAME_MAX_CHARS || value.includes('\u0000'))
    throw new InvalidArgumentError(
      field,
      value,
      `must be a string of at most ${SCHEDULE_NAME_MAX_CHARS} characters without NUL`,
    );
  return value;
}

/** A fired job's identity key: a non-empty string of at most 1,024 characters, no NUL. */
export function checkIdentityKey(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > IDENTITY_KEY_MAX_CHARS ||
    value.includes('\u0000')
  )
    throw new InvalidArgumentError(
      field,
      value,
      `must be a non-empty string of at most ${IDENTITY_KEY_MAX_CHARS} characters without NUL`,
    );
  return value;
}

/** A payload factory's registered name: a non-empty string of at most 200 characters, no NUL. */
export function checkFactoryName(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > SCHEDULE_NAME_MAX_CHARS ||
    value.includes('\u0000')
  )
    throw new InvalidArgumentError(
      field,
      value,
      `must be the name of a payload factory registered on the workers (a non-empty string of at most ${SCHEDULE_NAME_MAX_CHARS} characters)`,
    );
  return value;
}
