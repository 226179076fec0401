import { createHmac, timingSafeEqual } from 'node:crypto';

import type { FastifyRequest } from 'fastify';

import type { AdminUser, ResolvedAdminOptions } from './admin-options.js';
import { readSession, SSO_SESSION_COOKIE } from './admin-session.js';

/** The cookie the login form sets when the UI is protected by a token. */
export const SESSION_COOKIE = 'taskq_admin_session';

/** The user a valid token authenticates as. */
export const TOKEN_USER = 'token';

/**
 * The session cookie's value for `token`: a keyed hash, so the cookie (which browsers store and
 * may leak to disk) never holds the token itself, and changing the token ends every session.
 */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('taskq-admin-session-v1').digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The outcome of authenticating one request. */
export type AuthOutcome =
  { kind: 'user'; user: Required<AdminUser> } | { kind: 'anonymous' } | { kind: 'refused' };

/**
 * Who sent `request`: the token (bearer header or session cookie), else a signed SSO session
 * cookie, else the auth hook's user. Without a token, SSO and a hook (dev, or `requireAuth: false`) everyone is `anonymous`.
 */
export async function authenticate(request: FastifyRequest, o: ResolvedAdminOptions): Promise<AuthOutcome> {
  if (o.token !== null) {
    const header = request.headers.authorization;
    if (typeof header === 'string' && /^bearer\s/i.test(header) && sameText(header.slice(7).trim(), o.token))
      return { kind: 'user', user: { user: TOKEN_USER, readPayloads: true, actions: true } };
    const cookie = request.cookies[SESSION_COOKIE];
    if (cookie !== undefined && sameText(cookie, sessionValue(o.token)))
      return { kind: 'user', user: { user: TOKEN_USER, readPayloads: true, actions: true } };
  }
  if (o.sso !== null) {
    // A tampered, expired or no-longer-verifiable (secret removed) cookie is simply not a session.
    const user = readSession(request.cookies[SSO_SESSION_COOKIE], o.sso.sessionSecrets);
    if (user !== null) return { kind: 'user', user };
  }
  if (o.auth !== null) {
    const found = await o.auth(request);
    if (found && typeof found.user === 'string')
      return {
        kind: 'user',
        user: {
          user: found.user,
          readPayloads: found.readPayloads !== false,
          actions: found.actions !== false,
        },
      };
  }
  if (o.token === null && o.auth === null && o.sso === null) return { kind: 'anonymous' };
  return { kind: 'refused' };
}

/** True when `candidate` is the configured token (the login form). */
export function isToken(candidate: unknown, token: string): boolean {
  return typeof candidate === 'string' && sameText(candidate, token);
}
