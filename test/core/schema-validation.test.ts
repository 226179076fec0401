/**
 * `checkSchema`, the worker's payload check: a synchronous validator's answer comes back without a
 * promise (its issues thrown at once), an asynchronous one's as a promise; `validateSchema` is the
 * same check, always as a promise.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { describe, expect, it } from 'vitest';

import { PayloadValidationError } from '../../src/errors/index.js';
import { checkSchema, validateSchema } from '../../src/core/schema-validation.js';

const ctx = { actor: 'a', what: 'payload', payloadSchemaVer: 3 };

function schema(
  validate: (v: unknown) => StandardSchemaV1.Result<number> | Promise<StandardSchemaV1.Result<number>>,
): StandardSchemaV1<unknown, number> {
  return { '~standard': { version: 1, vendor: 'test', validate } };
}

const positive = (v: unknown): StandardSchemaV1.Result<number> =>
  typeof v === 'number' && v > 0
    ? { value: v * 10 }
    : { issues: [{ message: 'must be positive', path: ['x'] }] };

describe('checkSchema', () => {
  it("returns a synchronous validator's output as a value", () => {
    expect(checkSchema(schema(positive), 4, ctx)).toBe(40);
  });

  it("throws a synchronous validator's issues at once, as PayloadValidationError", () => {
    let thrown: unknown;
    try {
      checkSchema(schema(positive), -1, ctx);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PayloadValidationError);
    expect((thrown as PayloadValidationError).message).toBe(
      'payload for actor "a" is invalid: x: must be positive',
    );
  });

  it("returns an asynchronous validator's output as a promise, and rejects with its issues", async () => {
    const later = schema(async (v) => positive(v));
    const ok = checkSchema(later, 2, ctx);
    expect(ok).toBeInstanceOf(Promise);
    await expect(ok).resolves.toBe(20);
    await expect(checkSchema(later, 0, ctx)).rejects.toBeInstanceOf(PayloadValidationError);
  });

  it('lets an error the validator itself throws through', () => {
    const broken = schema(() => {
      throw new TypeError('validator bug');
    });
    expect(() => checkSchema(broken, 1, ctx)).toThrow('validator bug');
  });
});

describe('validateSchema', () => {
  it('always answers with a promise, rejecting where checkSchema throws', async () => {
    await expect(validateSchema(schema(positive), 5, ctx)).resolves.toBe(50);
    await expect(validateSchema(schema(positive), -5, ctx)).rejects.toBeInstanceOf(PayloadValidationError);
    const broken = schema(() => {
      throw new TypeError('validator bug');
    });
    await expect(validateSchema(broken, 1, ctx)).rejects.toThrow('validator bug');
  });
});
