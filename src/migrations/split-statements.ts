/**
 * Splits SQL text into its top-level statements, for migrations marked
 * `-- taskq:no-transaction`: Postgres runs a multi-statement query string as one implicit
 * transaction, where `CREATE INDEX CONCURRENTLY` (the reason for the directive) is refused, so such
 * files are sent one statement at a time.
 *
 * Semicolons inside quoted strings (`'…'`, `E'…'` with backslash escapes), quoted identifiers
 * (`"…"`), dollar-quoted bodies (`$$…$$`, `$tag$…$tag$`) and comments (`--`, nested `/* … *\/`) do
 * not split. Statements are returned trimmed; pieces holding only comments and whitespace are
 * dropped.
 */
export function splitSqlStatements(sql: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let hasCode = false;
  let i = 0;
  const n = sql.length;
  const push = (end: number): void => {
    if (hasCode) statements.push(sql.slice(start, end).trim());
    start = end + 1;
    hasCode = false;
  };
  while (i < n) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? n : eol + 1;
      continue;
    }
    if (c === '/' && next === '*') {
      i = skipBlockComment(sql, i);
      continue;
    }
    if (c === ';') {
      push(i);
      i++;
      continue;
    }
    if (!/\s/.test(c)) hasCode = true;
    if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(sql[i - 1] as string) && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? ' ');
      i = skipQuoted(sql, i, "'", escapes);
      continue;
    }
    if (c === '"') {
      i = skipQuoted(sql, i, '"', false);
      continue;
    }
    if (c === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      // `$1` (a parameter) is not a dollar quote; neither is `$` inside an identifier.
      if (tag && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? ' ')) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? n : close + tag[0].length;
        continue;
      }
    }
    i++;
  }
  if (hasCode) statements.push(sql.slice(start).trim());
  return statements;
}

/** Index just past a quoted run starting at `i` (a doubled quote is an escaped quote). */
function skipQuoted(sql: string, i: number, quote: string, backslashEscapes: boolean): number {
  let j = i + 1;
  while (j < sql.length) {
    const c = sql[j];
    if (backslashEscapes && c === '\\') {
      j += 2;
      continue;
    }
    if (c === quote) {
      if (sql[j + 1] === quote) {
        j += 2;
        continue;
      }
      return j + 1;
    }
    j++;
  }
  return sql.length;
}

/** Index just past a block comment starting at `i`; Postgres block comments nest. */
function skipBlockComment(sql: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < sql.length) {
    if (sql[j] === '/' && sql[j + 1] === '*') {
      depth++;
      j += 2;
    } else if (sql[j] === '*' && sql[j + 1] === '/') {
      depth--;
      j += 2;
      if (depth === 0) return j;
    } else j++;
  }
  return sql.length;
}
