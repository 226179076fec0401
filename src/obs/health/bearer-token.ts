import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when an `Authorization` header carries `Bearer <token>` with exactly `token`. The comparison
 * takes the same time whatever the header holds: both sides are hashed to 32 bytes first, so neither
 * a differing prefix nor a differing length shows in the timing.
 */
export function bearerTokenMatches(authorization: string | undefined, token: string): boolean {
  if (authorization === undefined) return false;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  const given = match?.[1] ?? '';
  const equal = timingSafeEqual(digest(given), digest(token));
  return match !== null && equal;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
