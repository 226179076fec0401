import { ConnectionError, type ConnectionFailureReason } from '../errors/connection-error.js';
import { redactSecrets } from '../errors/redact-secrets.js';

/** Socket error codes raised while opening a connection, by reason. */
const SOCKET_CODES: Readonly<Record<string, ConnectionFailureReason>> = {
  ECONNREFUSED: 'refused',
  ENOTFOUND: 'host-not-found',
  EAI_AGAIN: 'host-not-found',
  EAI_NONAME: 'host-not-found',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
};

/** SQLSTATEs the server only sends while a session is being established, by reason. */
const STARTUP_SQLSTATES: Readonly<Record<string, ConnectionFailureReason>> = {
  '28P01': 'auth-failed', // invalid_password
  '28000': 'auth-failed', // invalid_authorization_specification: unknown role, pg_hba.conf reject
  '3D000': 'database-not-found', // invalid_catalog_name
  '57P03': 'server-unavailable', // cannot_connect_now
  '53300': 'server-unavailable', // too_many_connections
};

/** TLS failures while negotiating the connection (Node's certificate error codes). */
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

const TIMEOUT_MESSAGES = [
  /timeout exceeded when trying to connect/i, // pg.Pool's connectionTimeoutMillis
  /Connection terminated due to connection timeout/i, // pg.Client's connectionTimeoutMillis
];
const SSL_MESSAGES = [/server does not support SSL/i];

/**
 * The {@link ConnectionError} for `err` when it is a failure to open a connection (refused, DNS,
 * timeout, authentication, unknown database, TLS), else null: errors of a query on an open
 * connection pass through untouched. Classified by the error's shape, so it can wrap calls that
 * both connect and query (`pool.query`).
 * @param target the server tried, already free of secrets
 */
export function connectionErrorOf(err: unknown, target: string): ConnectionError | null {
  if (err instanceof ConnectionError) return null;
  const found = classify(err);
  if (found === null) return null;
  return new ConnectionError(found.reason, target, found.detail, err, {
    sqlState: found.sqlState ?? null,
    socketCode: found.socketCode ?? null,
  });
}

interface Classified {
  reason: ConnectionFailureReason;
  detail: string;
  sqlState?: string;
  socketCode?: string;
}

function classify(err: unknown): Classified | null {
  if (err === null || typeof err !== 'object') return null;
  const e = err as { code?: unknown; syscall?: unknown; message?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? redactSecrets(e.message) : '';
  const detail = (text: string): string => (code && !text.includes(code) ? `${text} (${code})` : text);

  const socket = SOCKET_CODES[code];
  if (socket) return { reason: socket, detail: detail(message || code), socketCode: code };
  if (code === 'ETIMEDOUT' && (e.syscall === 'connect' || /connect/i.test(message)))
    return { reason: 'timeout', detail: detail(message || code), socketCode: code };
  const startup = STARTUP_SQLSTATES[code];
  if (startup) return { reason: startup, detail: `${message} (SQLSTATE ${code})`, sqlState: code };
  if (TLS_CODES.has(code)) return { reason: 'ssl', detail: detail(message || code), socketCode: code };
  if (TIMEOUT_MESSAGES.some((re) => re.test(message))) return { reason: 'timeout', detail: message };
  if (SSL_MESSAGES.some((re) => re.test(message))) return { reason: 'ssl', detail: message };
  // Node reports a host name with several addresses (localhost: ::1 and 127.0.0.1) that all failed
  // as one AggregateError; its parts say why.
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const found = classify(inner);
      if (found) return found;
    }
  }
  return null;
}
