import { createHmac, timingSafeEqual } from 'node:crypto';

import type { AdminUser } from './admin-options.js';

/** The cookie holding a signed-in SSO user's session. */
export const SSO_SESSION_COOKIE = 'taskq_admin_sso';

/** The cookie holding one sign-in in progress (OIDC state, nonce and PKCE verifier). */
export const SSO_FLOW_COOKIE = 'taskq_admin_sso_flow';

/** Shortest session secret accepted, in characters (the reference asks for >= 32 bytes). */
export const MIN_SESSION_SECRET_LENGTH = 32;

/**
 * What a signed value is for. Each purpose is part of the signed text, so a sign-in-flow cookie
 * can never be replayed as a session cookie even though both are signed with the same secrets.
 */
export type SignedPurpose = 'session' | 'flow';

function mac(secret: string, purpose: SignedPurpose, body: string): Buffer {
  return createHmac('sha256', secret).update(`taskq-admin-${purpose}-v1.${body}`).digest();
}

/**
 * Signs `value` as `<base64url JSON>.<base64url HMAC-SHA256>` with the FIRST secret. The JSON is
 * readable by whoever holds the cookie (it carries no secret), but cannot be changed without the key.
 */
export function signValue(value: object, purpose: SignedPurpose, secrets: readonly string[]): string {
  const secret = secrets[0];
  if (secret === undefined) throw new Error('signValue needs at least one secret');
  const body = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${body}.${mac(secret, purpose, body).toString('base64url')}`;
}

/**
 * The JSON object of a value signed by {@link signValue} with ANY of `secrets` (so sessions signed
 * before a rotation stay valid while the old secret is still listed), or null when the format or
 * every signature is wrong.
 */
export function verifyValue(
  text: string | undefined,
  purpose: SignedPurpose,
  secrets: readonly string[],
): Record<string, unknown> | null {
  if (typeof text !== 'string' || text.length > 4096) return null;
  const dot = text.indexOf('.');
  if (dot <= 0 || dot !== text.lastIndexOf('.')) return null;
  const body = text.slice(0, dot);
  const given = Buffer.from(text.slice(dot + 1), 'base64url');
  // Every secret is tried (no early exit on the first mismatch) so timing tells nothing about which.
  let ok = false;
  for (const secret of secrets) {
    const expected = mac(secret, purpose, body);
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  if (!ok) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** A signed-in SSO session: who, what they may do, and when it was issued and ends (epoch seconds). */
export interface AdminSession {
  /** The user's name (for logs and the header). */
  user: string;
  /** May read payloads and results (derived from the user's groups at sign-in). */
  readPayloads: boolean;
  /** May retry and cancel (derived from the user's groups at sign-in). */
  actions: boolean;
  /** Issued at, epoch seconds. */
  iat: number;
  /** Expires at, epoch seconds. */
  exp: number;
}

/** The cookie value of a new session for `user`, valid for `maxAgeMs` from `nowMs`. */
export function issueSession(
  user: Required<AdminUser>,
  secrets: readonly string[],
  maxAgeMs: number,
  nowMs: number = Date.now(),
): string {
  const iat = Math.floor(nowMs / 1000);
  const session: AdminSession = {
    user: user.user,
    readPayloads: user.readPayloads,
    actions: user.actions,
    iat,
    exp: iat + Math.floor(maxAgeMs / 1000),
  };
  return signValue(session, 'session', secrets);
}

/** The user of a session cookie that is correctly signed and not expired, else null. */
export function readSession(
  text: string | undefined,
  secrets: readonly string[],
  nowMs: number = Date.now(),
): Required<AdminUser> | null {
  const v = verifyValue(text, 'session', secrets);
  if (v === null) return null;
  if (typeof v.user !== 'string' || typeof v.exp !== 'number' || typeof v.iat !== 'number') return null;
  if (v.exp * 1000 <= nowMs) return null;
  return { user: v.user, readPayloads: v.readPayloads === true, actions: v.actions === true };
}
