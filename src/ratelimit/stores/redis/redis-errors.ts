const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
]);
const CONNECTION_MESSAGES = [
  "Stream isn't writeable",
  'Connection is closed',
  'Command timed out',
  'Reached the max retries per request limit',
  'Connection timeout',
];
// Server replies that mean "not serving right now" rather than "bad data".
const UNAVAILABLE_REPLIES = ['LOADING', 'BUSY', 'MASTERDOWN', 'CLUSTERDOWN', 'TRYAGAIN'];

/**
 * True for errors meaning Redis could not be reached or did not answer in time (the ioredis
 * connection, offline-queue, retry-limit and command-timeout errors, socket errors, and the
 * LOADING / BUSY / MASTERDOWN family of replies). The Redis store raises these, and only these, as
 * `RateLimitStoreUnavailable` — what the Postgres fallback reacts to; a script or data error is not
 * an outage.
 */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (err.name === 'MaxRetriesPerRequestError' || err.name === 'AbortError' || err.name === 'InterruptError')
    return true;
  if (err.name === 'ReplyError') return UNAVAILABLE_REPLIES.some((p) => err.message.startsWith(p));
  return CONNECTION_MESSAGES.some((m) => err.message.includes(m));
}

/** True for a WRONGTYPE reply: the key holds another data type. */
export function isWrongTypeError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError' && err.message.startsWith('WRONGTYPE');
}
