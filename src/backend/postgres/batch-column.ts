/**
 * One column of a batch `INSERT … SELECT FROM unnest(…)` statement, sent as two parameters: an
 * array with every item's value, or — when every item carries the same value — that value alone
 * (the array is then NULL, which `unnest` pads with NULLs, and the statement reads
 * `coalesce(column, value)`; a column whose items are all NULL is NULL twice).
 *
 * Most columns of a batch agree across its items (actor, queue, priority, the batch's metadata, …):
 * sending each as one value spares the client escaping 1,000 copies of it and the server parsing
 * them. The arrays that remain are written here as Postgres array literals; `pg` would build the
 * same text element by element with two regular-expression passes per string.
 */
export type BatchColumn = [array: string | null, value: unknown];

/** A text (or JSON-text, UUID) column; `null` items are SQL NULL. */
export function textColumn<I>(items: readonly I[], f: (item: I) => string | null): BatchColumn {
  return column(items, f, textArrayLiteral);
}

/**
 * A column of JSON text made from a plain object or array per item (metadata, tags). Items of a
 * batch mostly carry equal values in distinct objects (each job's own `{ batch_id }`, an empty tag
 * list): an item whose value holds the same keys and primitive values as the one before reuses
 * that one's text instead of serialising it again.
 */
export function jsonColumn<I>(items: readonly I[], f: (item: I) => object): BatchColumn {
  let last: object | null = null;
  let lastJson = '';
  return column(
    items,
    (item) => {
      const value = f(item);
      if (last === null || !shallowEqualPrimitives(value, last)) lastJson = JSON.stringify(value);
      last = value;
      return lastJson;
    },
    textArrayLiteral,
  );
}

/** Same own enumerable keys with the same primitive values (`false` when any value is an object). */
function shallowEqualPrimitives(a: object, b: object): boolean {
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const k in x) {
    const v = x[k];
    if ((typeof v === 'object' && v !== null) || !Object.hasOwn(y, k) || y[k] !== v) return false;
    keys++;
  }
  for (const k in y) if (Object.hasOwn(y, k)) keys--;
  return keys === 0;
}

/** A numeric column (integers or floats); `null` items are SQL NULL. */
export function numberColumn<I>(items: readonly I[], f: (item: I) => number | null): BatchColumn {
  return column(items, f, (values) => plainArrayLiteral(values, String));
}

/** A boolean column; `null` items are SQL NULL. */
export function boolColumn<I>(items: readonly I[], f: (item: I) => boolean | null): BatchColumn {
  return column(items, f, (values) => plainArrayLiteral(values, (v) => (v ? 't' : 'f')));
}

/**
 * A timestamp column sent as epoch milliseconds (`float8`; the statement turns it back with
 * `to_timestamp(v / 1000)`): cheaper to make and to parse than {@link dateColumn}'s text, for
 * columns written once per job. `null` items are SQL NULL.
 */
export function epochMsColumn<I>(items: readonly I[], f: (item: I) => Date | null): BatchColumn {
  return numberColumn(items, (item) => f(item)?.getTime() ?? null);
}

/** A timestamp column; `null` items are SQL NULL. Instants are sent as ISO-8601 UTC text. */
export function dateColumn<I>(items: readonly I[], f: (item: I) => Date | null): BatchColumn {
  return column(items, (item) => f(item)?.toISOString() ?? null, textArrayLiteral);
}

/** The ids of a batch as a `uuid[]` literal (UUIDs need no quoting). */
export function uuidArrayLiteral(ids: readonly string[]): string {
  return `{${ids.join(',')}}`;
}

/**
 * The value every item shares, or else the array literal of all of them. `f` runs once per item;
 * the array of values is only made once two items differ (most columns of a batch never do).
 */
function column<I, T>(items: readonly I[], f: (item: I) => T, literal: (values: T[]) => string): BatchColumn {
  const first = f(items[0]!);
  for (let i = 1; i < items.length; i++) {
    const v = f(items[i]!);
    if (v === first) continue;
    const values = new Array<T>(items.length);
    values.fill(first, 0, i);
    values[i] = v;
    for (let k = i + 1; k < items.length; k++) values[k] = f(items[k]!);
    return [literal(values), null];
  }
  return [null, first];
}

/** An array literal of values that need no quoting (numbers, booleans). */
function plainArrayLiteral<T>(values: readonly (T | null)[], text: (v: T) => string): string {
  return `{${values.map((v) => (v === null ? 'NULL' : text(v))).join(',')}}`;
}

/** A Postgres array literal of text values: each quoted, with `\` and `"` escaped. */
export function textArrayLiteral(values: readonly (string | null)[]): string {
  // Without NULLs, the whole literal is escaped in one pass over the values joined by NUL, then
  // NUL becomes the separator: a regular-expression pass per value cost more than the rest of
  // building the statement's parameters (JSON payloads all need escaping). Postgres text cannot
  // hold NUL and the client refuses it before this point; a value holding one anyway takes the
  // per-value path, where the server refuses it, instead of splitting into two elements.
  if (values.every((v) => typeof v === 'string' && !v.includes('\u0000'))) {
    const joined = values.join('\u0000');
    const escaped = ESCAPE.test(joined) ? joined.replace(ESCAPE_ALL, '\\$&') : joined;
    return `{"${escaped.replaceAll('\u0000', '","')}"}`;
  }
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    out += v === null || v === undefined ? 'NULL' : `"${ESCAPE.test(v) ? v.replace(ESCAPE_ALL, '\\$&') : v}"`;
  }
  return `${out}}`;
}

const ESCAPE = /["\\]/;
const ESCAPE_ALL = /["\\]/g;
