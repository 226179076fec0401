/**
 * The one check every Postgres connection string goes through, wherever it comes from
 * (`TaskQ.open({ dsn })`, `--dsn`, `TASKQ_PG_DSN`, worker settings, the drivers): a
 * `postgres://` / `postgresql://` URL or a libpq `key=value` string, nothing else.
 */
import { parse as parsePgUrl } from 'pg-connection-string';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { redactSecrets } from '../errors/redact-secrets.js';

/** The rule a connection string breaks when it is neither form (error messages and docs). */
export const CONNECTION_STRING_RULE =
  'must be a postgres:// or postgresql:// URL, or libpq key=value pairs such as "host=localhost dbname=app"';

/**
 * The keywords of a libpq connection string (PostgreSQL's "Parameter Key Words"). libpq rejects any
 * other keyword, and so does TaskQ, so that a misspelt one is reported instead of ignored.
 */
const LIBPQ_KEYWORDS: ReadonlySet<string> = new Set([
  'host',
  'hostaddr',
  'port',
  'dbname',
  'user',
  'password',
  'passfile',
  'require_auth',
  'channel_binding',
  'connect_timeout',
  'client_encoding',
  'options',
  'application_name',
  'fallback_application_name',
  'keepalives',
  'keepalives_idle',
  'keepalives_interval',
  'keepalives_count',
  'tcp_user_timeout',
  'replication',
  'gssencmode',
  'sslmode',
  'sslnegotiation',
  'sslcompression',
  'sslcert',
  'sslkey',
  'sslkeylogfile',
  'sslpassword',
  'sslcertmode',
  'sslrootcert',
  'sslcrl',
  'sslcrldir',
  'sslsni',
  'requirepeer',
  'ssl_min_protocol_version',
  'ssl_max_protocol_version',
  'min_protocol_version',
  'max_protocol_version',
  'krbsrvname',
  'gsslib',
  'gssdelegation',
  'service',
  'target_session_attrs',
  'load_balance_hosts',
]);

const URL_SCHEME = /^postgres(ql)?:\/\//i;
const OTHER_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const KEY_VALUE_START = /^[A-Za-z_][A-Za-z0-9_]*\s*=/;

/** Connection settings in node-postgres's names (what `pg.Pool` / `pg.Client` take). */
export type PgConnectionSettings = Record<string, unknown>;

/**
 * Checks a Postgres connection string and returns it trimmed.
 *
 * Accepts a `postgres://` or `postgresql://` URL that node-postgres can parse, or libpq key=value
 * pairs (`host=db.internal port=5432 dbname=app user=taskq`, values with spaces in single quotes).
 * @param field what the value is, for the message (`TaskQ.open.dsn`, `--dsn`, `TASKQ_PG_DSN`)
 * @throws InvalidArgumentError naming `field`, the value with its password masked, and the rule
 *   (`mysql://…`, an empty string, a malformed URL, an unknown or unterminated key=value pair)
 */
export function validateConnectionString(value: unknown, field: string): string {
  return parse(value, field).text;
}

/**
 * The settings node-postgres needs for a connection string accepted by
 * {@link validateConnectionString}: `{ connectionString }` for a URL (node-postgres parses it), the
 * parsed pairs for a key=value string (node-postgres reads only URLs).
 * @throws InvalidArgumentError as {@link validateConnectionString} does
 */
export function pgConnectionSettings(value: string, field: string): PgConnectionSettings {
  const parsed = parse(value, field);
  return parsed.form === 'url' ? { connectionString: parsed.text } : parsed.settings;
}

/**
 * Every setting a connection string holds, in node-postgres's names, for both forms: what a
 * `pg.Pool` needs when TaskQ sets the user or password itself (node-postgres lets a
 * `connectionString` override the explicit fields, so the string must not be passed along).
 * Empty values (a URL without port or password) are left out.
 * @throws InvalidArgumentError as {@link validateConnectionString} does
 */
export function pgConnectionFields(value: string, field: string): PgConnectionSettings {
  const parsed = parse(value, field);
  if (parsed.form === 'key-value') return { ...parsed.settings };
  const settings: Record<string, unknown> = { ...parsePgUrl(parsed.text) };
  for (const [key, val] of Object.entries(settings)) {
    if (val === '' || val === null || val === undefined) delete settings[key];
  }
  return settings;
}

/**
 * The pairs of a libpq key=value connection string, in order, values unquoted; `null` for a URL.
 * @throws InvalidArgumentError as {@link validateConnectionString} does
 */
export function connectionStringPairs(value: string, field: string): Map<string, string> | null {
  const text = parse(value, field).text;
  if (URL_SCHEME.test(text)) return null;
  return parseKeyValuePairs(text, (rule) => {
    throw new InvalidArgumentError(field, maskConnectionString(value), rule);
  });
}

/** `text` with the password (URL user info or `password=` pair) replaced by `***`, for messages and logs. */
export function maskConnectionString(text: string): string {
  return redactSecrets(text);
}

type Parsed =
  { form: 'url'; text: string } | { form: 'key-value'; text: string; settings: PgConnectionSettings };

function parse(value: unknown, field: string): Parsed {
  if (typeof value !== 'string') throw new InvalidArgumentError(field, value, CONNECTION_STRING_RULE);
  const text = value.trim();
  const reject = (rule: string): never => {
    throw new InvalidArgumentError(field, maskConnectionString(value), rule);
  };
  if (text === '') reject(CONNECTION_STRING_RULE);
  if (URL_SCHEME.test(text)) {
    checkUrl(text, reject);
    return { form: 'url', text };
  }
  if (OTHER_SCHEME.test(text) && !KEY_VALUE_START.test(text)) {
    const scheme = text.slice(0, text.indexOf(':') + 1);
    reject(`${CONNECTION_STRING_RULE}; ${scheme}// is not a Postgres URL`);
  }
  if (!KEY_VALUE_START.test(text)) reject(CONNECTION_STRING_RULE);
  return { form: 'key-value', text, settings: keyValueSettings(parseKeyValuePairs(text, reject), reject) };
}

/** Parses the URL as node-postgres will, so a string that passes here connects the same way. */
function checkUrl(text: string, reject: (rule: string) => never): void {
  let settings: { port?: string | null };
  try {
    settings = parsePgUrl(text) as { port?: string | null };
  } catch (err) {
    // The parser's message may quote the input; only its kind is kept.
    const kind = err instanceof URIError ? 'a malformed %-escape' : 'not a parsable URL';
    return reject(`must be a valid postgres:// URL (${kind}; escape special characters with %XX)`);
  }
  const port = settings.port;
  if (port !== undefined && port !== null && port !== '' && !isPort(port)) {
    reject(`the port must be an integer from 1 to 65535`);
  }
}

function isPort(text: string): boolean {
  if (!/^\d{1,5}$/.test(text)) return false;
  const n = Number(text);
  return n >= 1 && n <= 65535;
}

/**
 * Splits libpq key=value text: `key = value` pairs separated by whitespace; a value in single quotes
 * may hold spaces; a backslash escapes the next character (`\'`, `\\`) in either form.
 */
function parseKeyValuePairs(text: string, reject: (rule: string) => never): Map<string, string> {
  const pairs = new Map<string, string>();
  let i = 0;
  const isSpace = (c: string | undefined): boolean => c !== undefined && /\s/.test(c);
  while (true) {
    while (isSpace(text[i])) i++;
    if (i >= text.length) break;
    const keyStart = i;
    while (i < text.length && /[A-Za-z0-9_]/.test(text[i] as string)) i++;
    const key = text.slice(keyStart, i);
    if (key === '') reject(`${CONNECTION_STRING_RULE}; expected a keyword at character ${keyStart + 1}`);
    while (isSpace(text[i])) i++;
    if (text[i] !== '=') reject(`missing "=" after keyword "${key}"`);
    i++;
    while (isSpace(text[i])) i++;
    let val = '';
    if (text[i] === "'") {
      i++;
      let closed = false;
      while (i < text.length) {
        const c = text[i] as string;
        if (c === '\\' && i + 1 < text.length) {
          val += text[i + 1];
          i += 2;
        } else if (c === "'") {
          closed = true;
          i++;
          break;
        } else {
          val += c;
          i++;
        }
      }
      if (!closed) reject(`the quoted value of "${key}" has no closing quote`);
    } else {
      while (i < text.length && !isSpace(text[i])) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        val += text[i];
        i++;
      }
    }
    if (!LIBPQ_KEYWORDS.has(key)) {
      reject(`unknown keyword "${key}" (libpq keywords include host, port, dbname, user, password, sslmode)`);
    }
    pairs.set(key, val);
  }
  return pairs;
}

/**
 * Turns libpq pairs into node-postgres settings. They go through node-postgres's own URL parser as
 * query parameters, so `sslmode`, `application_name`, `options` and the rest mean exactly what
 * they mean in a URL; `dbname` is set afterwards, unescaped.
 */
function keyValueSettings(pairs: Map<string, string>, reject: (rule: string) => never): PgConnectionSettings {
  const port = pairs.get('port');
  if (port !== undefined && !isPort(port)) reject('the port must be an integer from 1 to 65535');
  const query = new URLSearchParams();
  for (const [key, val] of pairs) {
    if (key === 'dbname' || key === 'hostaddr') continue;
    query.set(key, val);
  }
  // node-postgres has no hostaddr: it is the host to dial when no host name is given.
  const hostaddr = pairs.get('hostaddr');
  if (hostaddr !== undefined && !pairs.has('host')) query.set('host', hostaddr);
  let settings: Record<string, unknown>;
  try {
    settings = { ...parsePgUrl(`postgres://?${query.toString()}`) };
  } catch {
    return reject(CONNECTION_STRING_RULE);
  }
  const dbname = pairs.get('dbname');
  settings.database = dbname === undefined || dbname === '' ? undefined : dbname;
  for (const [key, val] of Object.entries(settings)) {
    if (val === '' || val === null || val === undefined) delete settings[key];
  }
  return settings;
}
