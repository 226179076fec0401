import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { AdminUser } from './admin-options.js';
import type { AdminRouteContext } from './admin-route-context.js';
import { errorPage, sendPage } from './admin-route-context.js';
import { issueSession, SSO_SESSION_COOKIE } from './admin-session.js';
import { html } from './html.js';
import { layout } from './layout.js';

/** Where an unauthenticated browser is sent to sign in, or null without SSO. */
export function ssoLoginPath(rc: Pick<AdminRouteContext, 'o' | 'base'>, next: string): string | null {
  if (rc.o.sso === null) return null;
  const login = rc.o.sso.kind === 'oidc' ? '/auth/login' : '/auth/saml/login';
  return `${rc.base}${login}?next=${encodeURIComponent(next)}`;
}

/**
 * Options of the SSO cookies. SameSite=Lax, not Strict as elsewhere in the UI: the sign-in ends
 * with the IdP sending the browser back to us (a redirect to /auth/callback, or a form POST to the
 * SAML ACS followed by our redirect), which is a cross-site navigation; Strict cookies are withheld
 * on it, so the flow cookie would be missing at the callback and the fresh session cookie missing
 * on the first page, looping back to sign-in. Lax still withholds them from cross-site POSTs and
 * sub-requests, and every state-changing route also demands a CSRF token.
 */
export function ssoCookieOptions(rc: AdminRouteContext, path: string, maxAgeMs: number) {
  return {
    path,
    httpOnly: true,
    secure: rc.o.secureCookies,
    sameSite: 'lax' as const,
    maxAge: Math.floor(maxAgeMs / 1000),
  };
}

/** `next` if it is a page of this UI (a path under the prefix), else the overview: no open redirect. */
export function safeNext(rc: AdminRouteContext, next: unknown): string {
  const home = `${rc.base}/`;
  if (typeof next !== 'string' || next.length > 2048) return home;
  // A path of ours only: not `//host`, not `/\host` (browsers treat both as another origin).
  if (!next.startsWith(home)) return home;
  if (/^\/[/\\]/.test(next) || /[\r\n]/.test(next) || next.startsWith(`${rc.base}/auth/`)) return home;
  return next;
}

/**
 * Ends a successful IdP sign-in: admits `user` (groups already applied by the caller) with a new
 * signed session cookie, logs `admin-login`, and sends the browser on to `next`.
 */
export function completeSignIn(
  rc: AdminRouteContext,
  request: FastifyRequest,
  reply: FastifyReply,
  user: Required<AdminUser>,
  next: string,
): FastifyReply {
  const sso = rc.o.sso;
  if (sso === null) throw new Error('completeSignIn without SSO');
  reply.setCookie(
    SSO_SESSION_COOKIE,
    issueSession(user, sso.sessionSecrets, sso.sessionMaxAgeMs),
    ssoCookieOptions(rc, rc.base === '' ? '/' : rc.base, sso.sessionMaxAgeMs),
  );
  rc.o.logger.info({ user: user.user, backend: sso.kind, ip: request.ip }, 'admin-login');
  return reply.redirect(safeNext(rc, next), 303);
}

/**
 * Refuses a sign-in: logs `admin-login-refused` (who, if known, and why; never a token or an
 * assertion) and answers `status` with a page that lets the user start again.
 */
export function refuseSignIn(
  rc: AdminRouteContext,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  reason: string,
  user: string | null = null,
): FastifyReply {
  rc.o.logger.warn(
    { ...(user === null ? {} : { user }), backend: rc.o.sso?.kind, reason, ip: request.ip },
    'admin-login-refused',
  );
  const message =
    status === 403
      ? `${user ?? 'This account'} is not in a group allowed to use the TaskQ admin UI.`
      : 'Sign-in failed. Start again from the admin UI.';
  return sendPage(reply, status, errorPage(rc.base, message));
}

/**
 * The sign-in and sign-out routes of the configured SSO backend (none without `oidc` / `saml`):
 * OIDC `/auth/login` and `/auth/callback`; SAML `/auth/saml/login`, `/auth/saml/acs` and
 * `/auth/saml/metadata`; and `POST /auth/logout` for both. The plugin's auth hook lets `/auth/*`
 * through unauthenticated, since these are how one authenticates.
 */
export async function registerSsoRoutes(app: FastifyInstance, rc: AdminRouteContext): Promise<void> {
  const sso = rc.o.sso;
  if (sso === null) return;
  // The identity provider's library is loaded only for the backend in use: a UI without SSO, or
  // with the other one, does not pay for loading it (SAML's is most of the admin UI's import time).
  if (sso.kind === 'oidc') (await import('./oidc-routes.js')).registerOidcRoutes(app, rc, sso);
  else (await import('./saml-routes.js')).registerSamlRoutes(app, rc, sso);

  app.post('/auth/logout', { preHandler: app.csrfProtection }, async (request, reply) => {
    reply.clearCookie(SSO_SESSION_COOKIE, { path: rc.base === '' ? '/' : rc.base });
    rc.o.logger.info({ backend: sso.kind, ip: request.ip }, 'admin-logout');
    const login = ssoLoginPath(rc, `${rc.base}/`) as string;
    return sendPage(
      reply,
      200,
      layout(
        { base: rc.base, user: null, csrfToken: '' },
        'Signed out',
        html`<h1>Signed out</h1>
          <p>You are signed out of the TaskQ admin UI (the identity provider may still know you).</p>
          <p><a href="${login}">Sign in again</a></p>`,
      ),
    );
  });
}
