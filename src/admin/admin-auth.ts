import { createHmac, timingSafeEqual } from 'node:crypto';

import type { FastifyRequest } from 'fastify';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ADMIN_USER_KEYS, type AdminUser, type ResolvedAdminOptions } from './admin-options.js';
import { readSession, SSO_SESSION_COOKIE } from './admin-session.js';
import { checkKnownKeys } from '../core/closest-name.js';

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
    const found: unknown = await o.auth(request);
    // null (or nothing) is the hook's refusal: 401.
    if (found !== null && found !== undefined && found !== false) {
      const user = hookUser(found, o);
      return {
        kind: 'user',
        user: { user: user.user, readPayloads: user.readPayloads !== false, actions: user.actions !== false },
      };
    }
  }
  if (o.token === null && o.auth === null && o.sso === null) return { kind: 'anonymous' };
  return { kind: 'refused' };
}

/**
 * The auth hook's user, checked. A result TaskQ would misread (`readPayload: false`, `actions:
 * 'no'`, no `user`) is a bug in the hook, not a user: serving it with defaults would show payloads or
 * actions the hook meant to withhold, and a 401 would send the user to sign in again for nothing.
 * So it fails closed as a server error: `admin-auth-hook-invalid` is logged (error) with the field
 * and the rule (never the value: the hook's object may hold anything), and the request answers 500.
 */
function hookUser(found: unknown, o: ResolvedAdminOptions): AdminUser {
  try {
    if (typeof found !== 'object' || found === null || Array.isArray(found))
      throw new InvalidArgumentError(
        'auth()',
        undefined,
        'must resolve to { user, readPayloads?, actions? } or null',
        { conceal: true },
      );
    checkKnownKeys(found, ADMIN_USER_KEYS, 'auth()', 'a field of AdminUser');
    const u = found as Partial<Record<keyof AdminUser, unknown>>;
    if (typeof u.user !== 'string')
      throw new InvalidArgumentError('auth().user', undefined, 'must be a string', { conceal: true });
    for (const key of ['readPayloads', 'actions'] as const)
      if (u[key] !== undefined && typeof u[key] !== 'boolean')
        throw new InvalidArgumentError(`auth().${key}`, undefined, 'must be true, false or absent', {
          conceal: true,
        });
    return found as AdminUser;
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    o.logger.error({ field: err.field, rule: err.rule }, 'admin-auth-hook-invalid');
    throw new AdminAuthHookError(err.field);
  }
}

/**
 * The auth hook returned something that is not an `AdminUser`. Not an `InvalidArgumentError`, which
 * the UI answers with 400 and its message: the fault is the server's (500), and the details go to
 * the log only.
 */
class AdminAuthHookError extends Error {
  constructor(field: string) {
    super(`the admin auth hook returned an invalid user (${field}); see admin-auth-hook-invalid`);
    this.name = 'AdminAuthHookError';
  }
}

/** True when `candidate` is the configured token (the login form). */
export function isToken(candidate: unknown, token: string): boolean {
  return typeof candidate === 'string' && sameText(candidate, token);
}
