import type { FastifyInstance } from 'fastify';
import * as oidc from 'openid-client';

import type { AdminRouteContext } from './admin-route-context.js';
import { errorPage, one, sendPage } from './admin-route-context.js';
import { signValue, SSO_FLOW_COOKIE, verifyValue } from './admin-session.js';
import { admitUser, groupsOf, type ResolvedOidc } from './sso-options.js';
import { completeSignIn, refuseSignIn, safeNext, ssoCookieOptions } from './sso-routes.js';

/** How long a sign-in may take between leaving for the IdP and coming back. */
const FLOW_MAX_AGE_MS = 10 * 60_000;

/**
 * OIDC sign-in, authorization code flow: `/auth/login` sends the browser to the IdP with a fresh
 * state, nonce and PKCE challenge, which it also keeps in a short-lived signed cookie;
 * `/auth/callback` checks them (openid-client validates the code exchange, the ID token's
 * signature, issuer, audience, expiry and nonce), applies the allowed groups to the ID token's
 * group claim, and starts a signed session.
 */
export function registerOidcRoutes(app: FastifyInstance, rc: AdminRouteContext, sso: ResolvedOidc): void {
  const flowPath = `${rc.base}/auth`;
  // Discovery happens at the first sign-in rather than at start, so the UI starts (and serves its
  // bearer-token users) while the IdP is down; a failed discovery is retried at the next sign-in.
  let config: Promise<oidc.Configuration> | null = null;
  const discover = (): Promise<oidc.Configuration> => {
    if (config === null) {
      const issuer = new URL(sso.issuer);
      const found = oidc.discovery(
        issuer,
        sso.clientId,
        undefined,
        oidc.ClientSecretBasic(sso.clientSecret),
        // resolveOidc admits plain http only for a loopback issuer (a local IdP, as in the tests).
        issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : undefined,
      );
      config = found;
      found.catch(() => {
        if (config === found) config = null;
      });
    }
    return config;
  };

  app.get('/auth/login', async (request, reply) => {
    let cfg: oidc.Configuration;
    try {
      cfg = await discover();
    } catch (err) {
      rc.o.logger.error({ backend: 'oidc', err: { name: (err as Error).name } }, 'admin-sso-unavailable');
      return sendPage(
        reply,
        502,
        errorPage(rc.base, 'The identity provider could not be reached; try again.'),
      );
    }
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const next = safeNext(rc, one((request.query as Record<string, unknown>).next));
    const flow = { v: verifier, s: state, n: nonce, next, exp: Date.now() + FLOW_MAX_AGE_MS };
    reply.setCookie(
      SSO_FLOW_COOKIE,
      signValue(flow, 'flow', sso.sessionSecrets),
      ssoCookieOptions(rc, flowPath, FLOW_MAX_AGE_MS),
    );
    const target = oidc.buildAuthorizationUrl(cfg, {
      redirect_uri: sso.redirectUri,
      scope: sso.scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return reply.redirect(target.href, 303);
  });

  app.get('/auth/callback', async (request, reply) => {
    const flow = verifyValue(request.cookies[SSO_FLOW_COOKIE], 'flow', sso.sessionSecrets);
    reply.clearCookie(SSO_FLOW_COOKIE, { path: flowPath });
    if (
      flow === null ||
      typeof flow.exp !== 'number' ||
      flow.exp <= Date.now() ||
      typeof flow.v !== 'string' ||
      typeof flow.s !== 'string' ||
      typeof flow.n !== 'string'
    )
      return refuseSignIn(
        rc,
        request,
        reply,
        400,
        'no sign-in in progress (flow cookie missing, expired or invalid)',
      );
    // The URL the IdP redirected to, rebuilt from the configured redirect URI rather than from the
    // Host header, which a proxy may rewrite (and the client could forge).
    const current = new URL(sso.redirectUri);
    const q = request.url.indexOf('?');
    current.search = q === -1 ? '' : request.url.slice(q);
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(await discover(), current, {
        pkceCodeVerifier: flow.v,
        expectedState: flow.s,
        expectedNonce: flow.n,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (err) {
      // The error's name and OAuth code only: its message may quote the IdP's response.
      const e = err as Error & { code?: string; error?: string };
      return refuseSignIn(rc, request, reply, 401, `OIDC: ${e.error ?? e.code ?? e.name}`);
    }
    if (claims === undefined) return refuseSignIn(rc, request, reply, 401, 'OIDC: no ID token');
    const user = userName(claims);
    const groups = sso.groupClaim === null ? null : groupsOf(claims[sso.groupClaim]);
    const admitted = admitUser(user, groups, sso);
    if (admitted === null) return refuseSignIn(rc, request, reply, 403, 'not in an allowed group', user);
    return completeSignIn(rc, request, reply, admitted, typeof flow.next === 'string' ? flow.next : '');
  });
}

/** A readable name for logs and the header: e-mail, else preferred username, else the subject. */
function userName(claims: oidc.IDToken): string {
  for (const key of ['email', 'preferred_username', 'name'] as const) {
    const v = claims[key];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return claims.sub;
}
