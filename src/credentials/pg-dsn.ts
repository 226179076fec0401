/**
 * Connection strings with credentials in them, for the paths the credential factories do not cover
 * (a DSN handed to another library, a raw `pg.Client`). Both forms are handled: `postgres://` URLs
 * and libpq key=value strings.
 */
import { connectionStringPairs, validateConnectionString } from '../db/connection-string.js';
import type { PgCredential } from './credential-types.js';

/** A URL cut into the parts the credential rules touch; the rest is kept byte for byte. */
interface UrlParts {
  scheme: string;
  userinfo: string | null;
  hostAndPath: string;
  query: string[];
  fragment: string;
}

function splitUrl(text: string): UrlParts {
  const schemeEnd = text.indexOf('://') + 3;
  const scheme = text.slice(0, schemeEnd);
  let rest = text.slice(schemeEnd);
  let fragment = '';
  const hash = rest.indexOf('#');
  if (hash >= 0) {
    fragment = rest.slice(hash);
    rest = rest.slice(0, hash);
  }
  let query: string[] = [];
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest
      .slice(q + 1)
      .split('&')
      .filter((p) => p !== '');
    rest = rest.slice(0, q);
  }
  const authorityEnd = rest.search(/[/]/);
  const authority = authorityEnd >= 0 ? rest.slice(0, authorityEnd) : rest;
  const at = authority.lastIndexOf('@');
  return {
    scheme,
    userinfo: at >= 0 ? authority.slice(0, at) : null,
    hostAndPath: at >= 0 ? rest.slice(at + 1) : rest,
    query,
    fragment,
  };
}

function joinUrl(p: UrlParts): string {
  const userinfo = p.userinfo === null ? '' : `${p.userinfo}@`;
  const query = p.query.length > 0 ? `?${p.query.join('&')}` : '';
  return `${p.scheme}${userinfo}${p.hostAndPath}${query}${p.fragment}`;
}

function paramName(part: string): string {
  const name = part.split('=', 1)[0] ?? '';
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}

/** A libpq value, quoted when it must be (empty, spaces, quotes, backslashes). */
function libpqValue(value: string): string {
  return /^[^\s'\\]+$/.test(value) ? value : `'${value.replace(/[\\']/g, '\\$&')}'`;
}

function joinPairs(pairs: Map<string, string>): string {
  return [...pairs].map(([k, v]) => `${k}=${libpqValue(v)}`).join(' ');
}

/**
 * `dsn` with `sslmode=require` added when it sets no `sslmode`. An explicit mode is never changed:
 * `verify-ca` / `verify-full` are not downgraded (`require` skips certificate checks, which would
 * expose the credential to whoever intercepts the connection), and `disable` stays `disable` (a test
 * server or a Unix socket without TLS). The credential factories apply it for you.
 * @throws InvalidArgumentError (field `dsn`) when `dsn` is not a connection string
 */
export function ensureSslmodeRequire(dsn: string): string {
  const text = validateConnectionString(dsn, 'dsn');
  const pairs = connectionStringPairs(text, 'dsn');
  if (pairs !== null) return pairs.has('sslmode') ? text : `${text} sslmode=require`;
  const url = splitUrl(text);
  if (url.query.some((p) => paramName(p) === 'sslmode')) return text;
  url.query.push('sslmode=require');
  return joinUrl(url);
}

/**
 * `dsn` with `credential` written into it, for a library that only takes a connection string:
 * - URL: the password (percent-encoded) goes into the user info, replacing any there, and the user
 *   too when `credential.username` is set; a `password=` query parameter is dropped (the user info
 *   shadows it), and so is `user=` when the user info names a user;
 * - key=value: `password=` (and `user=` with a username) set, quoted as libpq needs.
 *
 * `sslmode=require` is added when no `sslmode` is set ({@link ensureSslmodeRequire}). Prefer the
 * factories (`makePgPoolFactory`, `makeDedicatedConnFactory`): they keep the credential out of any
 * string.
 * @throws InvalidArgumentError (field `dsn`) when `dsn` is not a connection string
 */
export function enrichPgDsn(dsn: string, credential: PgCredential): string {
  const text = validateConnectionString(dsn, 'dsn');
  const username = credential.username ?? null;
  const pairs = connectionStringPairs(text, 'dsn');
  if (pairs !== null) {
    if (username !== null) pairs.set('user', username);
    pairs.set('password', credential.password);
    if (!pairs.has('sslmode')) pairs.set('sslmode', 'require');
    return joinPairs(pairs);
  }
  const url = splitUrl(text);
  let user = url.userinfo === null ? '' : (url.userinfo.split(':', 1)[0] ?? '');
  if (username !== null) user = encodeURIComponent(username);
  url.userinfo = `${user}:${encodeURIComponent(credential.password)}`;
  url.query = url.query.filter((p) => {
    const name = paramName(p);
    // A query user with no user info user is the one that connects: it stays.
    return name !== 'password' && !(name === 'user' && user !== '');
  });
  if (!url.query.some((p) => paramName(p) === 'sslmode')) url.query.push('sslmode=require');
  return joinUrl(url);
}
