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
  const values = items.map(f);
  if (isUniform(values)) return [null, values[0]];
  return [textArrayLiteral(values), null];
}

/** A numeric column (integers or floats); `null` items are SQL NULL. */
export function numberColumn<I>(items: readonly I[], f: (item: I) => number | null): BatchColumn {
  const values = items.map(f);
  if (isUniform(values)) return [null, values[0]];
  return [`{${values.map((v) => (v === null ? 'NULL' : String(v))).join(',')}}`, null];
}

/** A boolean column; `null` items are SQL NULL. */
export function boolColumn<I>(items: readonly I[], f: (item: I) => boolean | null): BatchColumn {
  const values = items.map(f);
  if (isUniform(values)) return [null, values[0]];
  return [`{${values.map((v) => (v === null ? 'NULL' : v ? 't' : 'f')).join(',')}}`, null];
}

/** A timestamp column; `null` items are SQL NULL. Instants are sent as ISO-8601 UTC text. */
export function dateColumn<I>(items: readonly I[], f: (item: I) => Date | null): BatchColumn {
  const values = items.map((item) => f(item)?.toISOString() ?? null);
  if (isUniform(values)) return [null, values[0]];
  return [textArrayLiteral(values), null];
}

/** A Postgres array literal of text values: each quoted, with `\` and `"` escaped. */
export function textArrayLiteral(values: readonly (string | null)[]): string {
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

function isUniform(values: readonly unknown[]): boolean {
  const first = values[0];
  for (let i = 1; i < values.length; i++) if (values[i] !== first) return false;
  return true;
}
