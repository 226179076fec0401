/**
 * What a refused call threw, for the tests of bad input: the error itself, or checks of the
 * `InvalidArgumentError`'s field and its "did you mean" guess.
 */
import { expect } from 'vitest';

import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';

/** The error `fn` throws, or its promise rejects with; fails the test when there is none. */
export async function errorOf(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** The InvalidArgumentError `fn` throws synchronously; fails the test on anything else, or nothing. */
export function rejection(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return err as InvalidArgumentError;
  }
  throw new Error('expected an InvalidArgumentError, nothing was thrown');
}

/** Expects `fn` to be refused with an InvalidArgumentError naming `field` (and guessing `guess`). */
export async function expectRejected(fn: () => unknown, field: string, guess?: string): Promise<void> {
  const err = await errorOf(fn);
  expect(err).toBeInstanceOf(InvalidArgumentError);
  expect((err as InvalidArgumentError).field).toBe(field);
  if (guess !== undefined) expect((err as InvalidArgumentError).rule).toContain(`did you mean ${guess}?`);
}
