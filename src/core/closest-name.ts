import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * The candidate nearest to `word` by edit distance (case-insensitive), if within `maxDistance`:
 * the "did you mean" of errors about unknown option and setting names.
 */
export function closestName(
  word: string,
  candidates: Iterable<string>,
  maxDistance: number,
): string | undefined {
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * The rule of an unknown key: `is not <what>`, with ` (did you mean <closest>?)` when a known key is
 * near enough (a typo, a missing or extra letter, `tag` for `tags`).
 */
export function unknownKeyRule(key: string, known: Iterable<string>, what: string): string {
  const guess = closestName(key, known, Math.max(2, Math.floor(key.length / 5)));
  return guess === undefined ? `is not ${what}` : `is not ${what} (did you mean ${guess}?)`;
}

/**
 * Refuses the first key of `options` that is not in `known`, naming it as `<field>.<key>` with
 * {@link unknownKeyRule}: a misspelt option is an error, not a silently ignored default. The
 * error does not carry the key's value: a misspelt secret (`pasword`, `clientSecrte`) would
 * otherwise end up in the message and in logs, and the name is what the reader needs.
 */
export function checkKnownKeys(options: object, known: readonly string[], field: string, what: string): void {
  // `for…in` with an own-key test, not Object.keys: some callers check on every job (a rate-limit
  // context, an acquire request), and this allocates nothing.
  for (const key in options) {
    if (!known.includes(key) && Object.hasOwn(options, key))
      throw new InvalidArgumentError(`${field}.${key}`, undefined, unknownKeyRule(key, known, what), {
        conceal: true,
      });
  }
}

/** Levenshtein distance (insert, delete, substitute). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * Refuses `options` unless it is an object whose keys are all in `known`: `undefined` and `null`
 * are refused too, so callers default a missing argument before checking it.
 */
export function checkOptionsObject(
  options: unknown,
  known: readonly string[],
  field: string,
  what: string,
): asserts options is object {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(field, options, 'must be an object');
  checkKnownKeys(options, known, field, what);
}
