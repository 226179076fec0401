import type { StandardSchemaV1 } from '@standard-schema/spec';

import { PayloadValidationError, type ValidationIssue } from './errors/payload-validation-error.js';

/** Any Standard Schema validator (Zod, Valibot, ArkType, …) producing `T`. */
export type Schema<T = unknown> = StandardSchemaV1<unknown, T>;

/** True when `value` implements the Standard Schema interface. */
export function isStandardSchema(value: unknown): value is Schema {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    '~standard' in value &&
    typeof (value as { '~standard'?: { validate?: unknown } })['~standard']?.validate === 'function'
  );
}

function valueAt(input: unknown, path: readonly (string | number)[]): unknown {
  let cur = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}

function pathOf(issue: StandardSchemaV1.Issue): (string | number)[] {
  return (issue.path ?? []).map((seg) => {
    const key = typeof seg === 'object' && seg !== null && 'key' in seg ? seg.key : seg;
    return typeof key === 'number' ? key : String(key);
  });
}

/**
 * Turns validator issues into log-safe ones: the path and the rule message, with any echo of the
 * offending input value cut out (validators sometimes quote the input in their messages).
 */
export function sanitizeIssues(issues: readonly StandardSchemaV1.Issue[], input: unknown): ValidationIssue[] {
  return issues.map((issue) => {
    const path = pathOf(issue);
    let message = String(issue.message);
    const v = valueAt(input, path);
    if (typeof v === 'string' && v.length >= 3) {
      message = message.split(JSON.stringify(v)).join('<redacted>').split(v).join('<redacted>');
    }
    return { path, message };
  });
}

/**
 * Validates `value` against a Standard Schema and returns the schema's output.
 * @throws PayloadValidationError with sanitised issues when validation fails.
 */
export async function validateSchema<T>(
  schema: Schema<T>,
  value: unknown,
  context: { actor: string; what: string; payloadSchemaVer?: number | null },
): Promise<T> {
  let result = schema['~standard'].validate(value);
  if (result instanceof Promise) result = await result;
  if (result.issues) {
    const issues = sanitizeIssues(result.issues, value);
    const summary = issues
      .slice(0, 3)
      .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
      .join('; ');
    throw new PayloadValidationError(
      `${context.what} for actor ${JSON.stringify(context.actor)} is invalid: ${summary}`,
      {
        actor: context.actor,
        payloadSchemaVer: context.payloadSchemaVer ?? null,
        validationErrors: issues,
      },
    );
  }
  return result.value;
}

/**
 * Serialises a validated value to JSON text for a jsonb column.
 * @throws PayloadValidationError when the value cannot be represented as JSON.
 */
export function toJsonText(value: unknown, context: { actor: string; what: string }): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new PayloadValidationError(
      `${context.what} for actor ${JSON.stringify(context.actor)} is not JSON-serialisable (${(err as Error).message.split('\n')[0]})`,
      { actor: context.actor },
    );
  }
  if (text === undefined) {
    throw new PayloadValidationError(
      `${context.what} for actor ${JSON.stringify(context.actor)} is not JSON-serialisable (got ${typeof value})`,
      {
        actor: context.actor,
      },
    );
  }
  return text;
}
