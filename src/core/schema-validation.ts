import type { StandardSchemaV1 } from '@standard-schema/spec';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
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

/** JSON.stringify writes every NUL character, in a string or a key, as this escape. */
const ESCAPED_NUL = '\\u0000';

function describePath(root: string, path: readonly (string | number)[]): string {
  let out = root;
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(seg)) out += `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

/** Where the first NUL sits in a parsed JSON value: the path, and whether it is in a key or a string. */
function findNul(
  value: unknown,
  path: (string | number)[] = [],
): { path: (string | number)[]; inKey: boolean } | null {
  if (typeof value === 'string') return value.includes('\u0000') ? { path, inKey: false } : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findNul(value[i], [...path, i]);
      if (hit) return hit;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key.includes('\u0000')) return { path: [...path, key], inKey: true };
      const hit = findNul(child, [...path, key]);
      if (hit) return hit;
    }
  }
  return null;
}

const NUL_RULE = 'must not contain NUL (\\u0000) characters: Postgres jsonb cannot store them';

/**
 * Rejects a JSON value (as parsed, or as it round-trips through JSON) holding a NUL character in a
 * string or a key. Postgres refuses `\u0000` in jsonb (SQLSTATE 22P05) while the in-memory backend
 * would store it; checking before the write makes both backends fail the same way, with nothing
 * written. For option objects such as `metadata`; payloads are checked by {@link toJsonText}.
 * @throws InvalidArgumentError naming `field`, the rule and the path of the NUL (no input values)
 */
export function checkJsonNoNul(jsonValue: unknown, field: string, given: unknown = jsonValue): void {
  const hit = findNul(jsonValue);
  if (hit) throw new InvalidArgumentError(field, given, nulRule(field, hit));
}

function nulRule(field: string, hit: { path: (string | number)[]; inKey: boolean }): string {
  const where = describePath(field, hit.path);
  return `${NUL_RULE} (found in the ${hit.inKey ? 'key' : 'string'} at ${where})`;
}

/**
 * Serialises a validated value to JSON text for a jsonb column.
 * @throws PayloadValidationError when the value cannot be represented as JSON (for a result, also
 *   when it holds a NUL character); InvalidArgumentError when a payload holds a NUL character.
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
  // Fast path: JSON.stringify escapes every NUL, so text without the escape holds none. A match
  // may also be an escaped backslash followed by "u0000"; walking the parsed value tells them apart.
  if (!text.includes(ESCAPED_NUL)) return text;
  const hit = findNul(JSON.parse(text) as unknown);
  if (!hit) return text;
  if (context.what === 'result') {
    // At run time the handler's result is rejected like one that breaks its schema: the job fails
    // without retry (a rerun would return the same value and repeat the side effects).
    throw new PayloadValidationError(
      `result for actor ${JSON.stringify(context.actor)} cannot be stored: ${nulRule('result', hit)}`,
      { actor: context.actor, validationErrors: [{ path: hit.path, message: NUL_RULE }] },
    );
  }
  throw new InvalidArgumentError(context.what, value, nulRule(context.what, hit));
}
