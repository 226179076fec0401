/**
 * One column of an `unnest(...)` statement's parameters: `f` of every item, or NULL when no item
 * has a value. `unnest` pads a NULL array with NULLs, so an empty column need not be escaped, sent
 * and parsed as an array of NULLs (about half of the columns of a typical batch; measured: bulk
 * enqueue 36.7k → 40.6k jobs/s, outcome writes 43 → 37 µs per job at 200).
 */
export function paramColumn<I, T>(items: readonly I[], f: (item: I) => T): T[] | null {
  const values = items.map(f);
  return values.every((v) => v === null) ? null : values;
}
