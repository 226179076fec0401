/** SQLSTATEs after which a loop should log and try again next tick. */
const TRANSIENT_SQLSTATES = new Set([
  '57014', // query_canceled (statement timeout)
  '57P01', // admin_shutdown (server restarting)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (recovery)
  '53300', // too_many_connections
  '53400', // configuration_limit_exceeded
  '40P01', // deadlock_detected
  '40001', // serialization_failure
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
  '08001', // sqlclient_unable_to_establish_sqlconnection
  '08004', // sqlserver_rejected_establishment_of_sqlconnection
  '08007', // transaction_resolution_unknown (the connection died during COMMIT; loops are idempotent)
  '25P03', // idle_in_transaction_session_timeout
  '57P05', // idle_session_timeout
]);

/** Node socket-level error codes that mean "the connection went away". */
const TRANSIENT_NODE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

const TRANSIENT_MESSAGES = [
  /Connection terminated/i,
  /Client has encountered a connection error/i,
  /timeout exceeded when trying to connect/i,
  /Query read timeout/i,
  /connection is closed/i,
  /Cannot use a pool after calling end/i,
];

/**
 * True for errors that mean "Postgres (or the network) is having a moment": worth logging and
 * retrying on the next tick. Authentication failures (28P01, 28000) are deliberately not transient:
 * retrying them silently would hide a misconfiguration.
 */
export function isTransientError(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (TRANSIENT_SQLSTATES.has(code) || TRANSIENT_NODE_CODES.has(code)))
    return true;
  if (err instanceof Error && err.name === 'TimeoutError') return true;
  const message = err instanceof Error ? err.message : '';
  if (TRANSIENT_MESSAGES.some((re) => re.test(message))) return true;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err && isTransientError(cause);
}
