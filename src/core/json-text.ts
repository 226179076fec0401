import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { PayloadValidationError } from '../errors/payload-validation-error.js';
import { isWellFormed } from './text-checks.js';

// Values bound for a jsonb column (payloads, results, metadata) are serialised once here, and what
// JSON.stringify would silently change or Postgres would refuse is rejected with the path of the
// problem: a NUL character (jsonb cannot store \u0000), a lone surrogate (not valid Unicode: the
// escape fails jsonb's input), NaN or ±Infinity (JSON.stringify writes null). Both backends call
// this, so they fail identically and nothing is written.

/** The rule a NUL character in a JSON value breaks. */
export const JSON_NUL_RULE = 'must not contain NUL (\\u0000) characters: Postgres jsonb cannot store them';
/** The rule a lone surrogate in a JSON value breaks. */
export const JSON_UNICODE_RULE =
  'must be valid Unicode: a lone surrogate (half of a UTF-16 pair) cannot be stored in jsonb';
/** The rule a non-finite number in a JSON value breaks. */
export const JSON_NUMBER_RULE =
  'must not hold NaN or Infinity: JSON has no such numbers (they would be stored as null)';

/**
 * What the serialised text shows of a problem: JSON.stringify escapes every NUL as \u0000 and every
 * lone surrogate as \ud800-\udfff (lowercase), and writes non-finite numbers as null. Text without
 * these has no problem of that kind; a match may be a false alarm (an escaped backslash followed by
 * "u0000", a real null), which the walk below tells apart.
 */
const SUSPECT_TEXT = /\\u0000|\\ud[89a-f]/;

/** A problem found in a JSON value: where, in what, and the rule. */
interface JsonProblem {
  path: (string | number)[];
  where: 'key' | 'string' | 'number';
  rule: string;
}

/**
 * The value JSON.stringify serialises in place of `value`: the result of its `toJSON(key)`, boxed
 * primitives unboxed. Plain values, arrays and plain objects are returned as they are, cheaply.
 */
function jsonView(key: string | number, value: unknown): unknown {
  if ((typeof value !== 'object' || value === null) && typeof value !== 'bigint') return value;
  let v: unknown = value;
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function')
    v = (v as { toJSON(key: string): unknown }).toJSON(String(key));
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto === Object.prototype || proto === null) return v;
  if (v instanceof Number) return Number(v);
  if (v instanceof String) return String(v);
  if (v instanceof Boolean) return v.valueOf();
  return v;
}

/** Which problems the serialised text may hold: only those are looked for. */
interface Suspects {
  text: boolean;
  numbers: boolean;
}

function textProblem(s: string, where: 'key' | 'string'): JsonProblem | null {
  if (s.includes('\u0000')) return { path: [], where, rule: JSON_NUL_RULE };
  if (!isWellFormed(s)) return { path: [], where, rule: JSON_UNICODE_RULE };
  return null;
}

/**
 * The first problem in a value already passed through {@link jsonView}, walking as JSON.stringify
 * does. The path is built on the way back from a hit, so a value without problems allocates none.
 */
function findProblem(v: unknown, look: Suspects): JsonProblem | null {
  if (typeof v === 'number')
    return look.numbers && !Number.isFinite(v) ? { path: [], where: 'number', rule: JSON_NUMBER_RULE } : null;
  if (typeof v === 'string') return look.text ? textProblem(v, 'string') : null;
  if (typeof v !== 'object' || v === null) return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const hit = findProblem(jsonView(i, v[i]), look);
      if (hit) {
        hit.path.unshift(i);
        return hit;
      }
    }
    return null;
  }
  for (const key of Object.keys(v)) {
    const child = jsonView(key, (v as Record<string, unknown>)[key]);
    // JSON.stringify leaves these properties out, key and all.
    if (child === undefined || typeof child === 'function' || typeof child === 'symbol') continue;
    const hit = (look.text ? textProblem(key, 'key') : null) ?? findProblem(child, look);
    if (hit) {
      hit.path.unshift(key);
      return hit;
    }
  }
  return null;
}

/** `payload.rows[1]["odd key"]`: where a problem sits, from the field's name. */
export function describeJsonPath(root: string, path: readonly (string | number)[]): string {
  let out = root;
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(seg)) out += `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

function ruleWithPlace(field: string, p: JsonProblem): string {
  const where = describeJsonPath(field, p.path);
  return p.where === 'number'
    ? `${p.rule} (found at ${where})`
    : `${p.rule} (found in the ${p.where} at ${where})`;
}

/** The problem of `value`, serialised as `text`, or null (almost always at the cost of two scans). */
function problemOf(value: unknown, text: string): JsonProblem | null {
  const look: Suspects = {
    text: text.includes('\\u') && SUSPECT_TEXT.test(text),
    numbers: text.includes('null'),
  };
  if (!look.text && !look.numbers) return null;
  return findProblem(jsonView('', value), look);
}

/**
 * Serialises a validated payload or result to JSON text for a jsonb column.
 * @throws for a payload (`what` names it: `payload`, `items[3].payload`): InvalidArgumentError naming
 *   the field, the rule and the path of a NUL, a lone surrogate or a non-finite number — never the
 *   value; PayloadValidationError when it cannot be represented as JSON at all (a BigInt, a cycle).
 *   For a result (`what` is `result`): PayloadValidationError in every case, so that the job fails
 *   without retry (a rerun would return the same value and repeat the side effects).
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
      { actor: context.actor },
    );
  }
  const problem = problemOf(value, text);
  if (!problem) return text;
  if (context.what === 'result') {
    throw new PayloadValidationError(
      `result for actor ${JSON.stringify(context.actor)} cannot be stored: ${ruleWithPlace('result', problem)}`,
      { actor: context.actor, validationErrors: [{ path: problem.path, message: problem.rule }] },
    );
  }
  throw new InvalidArgumentError(context.what, undefined, ruleWithPlace(context.what, problem), {
    conceal: true,
  });
}

/**
 * The JSON text of `value` (an option such as `metadata`, progress data, heartbeat details),
 * refusing what {@link toJsonText} refuses in payloads and anything JSON.stringify cannot serialise.
 * @throws InvalidArgumentError naming `field`, the rule and the path of the problem
 */
export function checkedJsonText(value: unknown, field: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new InvalidArgumentError(
      field,
      value,
      `must be JSON-serialisable (${(err as Error).message.split('\n')[0]})`,
    );
  }
  if (text === undefined) throw new InvalidArgumentError(field, value, 'must be JSON-serialisable');
  const problem = problemOf(value, text);
  if (problem) throw new InvalidArgumentError(field, value, ruleWithPlace(field, problem));
  return text;
}

/** A JSON copy of an option object such as `metadata` ({@link checkedJsonText}). */
export function jsonCopy(value: unknown, field: string): Record<string, unknown> {
  return JSON.parse(checkedJsonText(value, field)) as Record<string, unknown>;
}
