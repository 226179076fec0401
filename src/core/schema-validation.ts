import type { StandardSchemaV1 } from '@standard-schema/spec';

import { PayloadValidationError, type ValidationIssue } from '../errors/payload-validation-error.js';

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
  return checkSchema(schema, value, context);
}

/**
 * {@link validateSchema} without a promise when the validator answers synchronously (most do): the
 * output, or a promise of it only from an asynchronous validator. Throws (synchronously) what
 * `validateSchema` rejects with — for the worker's per-job path, where a promise and a suspended
 * frame per job are a measurable share of its CPU.
 * @throws PayloadValidationError with sanitised issues when validation fails.
 */
export function checkSchema<T>(
  schema: Schema<T>,
  value: unknown,
  context: { actor: string; what: string; payloadSchemaVer?: number | null },
): T | Promise<T> {
  const result = schema['~standard'].validate(value);
  if (result instanceof Promise) return result.then((r) => schemaOutput(r, value, context));
  return schemaOutput(result, value, context);
}

function schemaOutput<T>(
  result: StandardSchemaV1.Result<T>,
  value: unknown,
  context: { actor: string; what: string; payloadSchemaVer?: number | null },
): T {
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

function isIssueShaped(issue: unknown): boolean {
  if (issue === null || typeof issue !== 'object') return false;
  const { message, path } = issue as { message?: unknown; path?: unknown };
  return typeof message === 'string' && (path === undefined || Array.isArray(path));
}

/** Class names of the errors schema libraries throw from their throwing parse APIs (`parse`, `assert`). */
const SCHEMA_LIBRARY_ERROR_CLASSES = new Set(['ZodError', 'ValiError']);

/**
 * True for an error a schema library threw by itself, e.g. a `ZodError` from `schema.parse()` called
 * inside a handler: an `Error` carrying a non-empty Standard Schema `issues` list (each issue a
 * `message` and an optional `path` array, the shape `validateSchema` reads from validators). An
 * error rebuilt from a handler thread keeps only its class name, so there the name decides.
 */
export function isSchemaLibraryError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const threadClass = (error as { originalClass?: unknown }).originalClass;
  if (typeof threadClass === 'string') return SCHEMA_LIBRARY_ERROR_CLASSES.has(threadClass);
  const issues = (error as { issues?: unknown }).issues;
  return Array.isArray(issues) && issues.length > 0 && issues.every(isIssueShaped);
}

export { toJsonText } from './json-text.js';
