/** What a hidden password is shown as. */
export const REDACTED = '***';

/**
 * Hides the passwords in `text`: the password of every `scheme://user:password@host` URL and every
 * `password=...` pair (libpq key=value strings, URL query parameters). Error messages and logs show
 * connection strings so the reader can see which server was meant; the password never belongs there.
 */
export function redactSecrets(text: string): string {
  return redactKeyValuePasswords(redactUrlPasswords(text));
}

// The user info of a URL ends at its last '@' and the password starts after its first ':'. The '@'
// is looked for up to the next whitespace or quote, not only in the authority, so that a password
// with an unescaped '/' or '#' (an invalid URL, shown in the error that rejects it) is hidden too;
// an '@' later in the query string makes this hide more than the password, which is harmless.
function redactUrlPasswords(text: string): string {
  const scheme = /[A-Za-z][A-Za-z0-9+.-]*:\/\//g;
  let out = '';
  let from = 0;
  for (let m = scheme.exec(text); m !== null; m = scheme.exec(text)) {
    const start = m.index + m[0].length;
    const end = findTokenEnd(text, start);
    const at = text.lastIndexOf('@', end - 1);
    if (at >= start) {
      const colon = text.indexOf(':', start);
      if (colon !== -1 && colon < at) {
        out += text.slice(from, colon + 1) + REDACTED;
        from = at;
      }
    }
    scheme.lastIndex = Math.max(end, start);
  }
  return out + text.slice(from);
}

function findTokenEnd(text: string, start: number): number {
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '"' || c === "'") return i;
  }
  return text.length;
}

// `password = 'it''s \' quoted'`, `password=plain`, `?password=x&...`: the value ends at the closing
// quote, or at whitespace or '&' when unquoted.
const KEY_VALUE_PASSWORD = /\b(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&'"]+)/gi;

function redactKeyValuePasswords(text: string): string {
  return text.replace(KEY_VALUE_PASSWORD, (_m, key: string) => `${key}${REDACTED}`);
}
