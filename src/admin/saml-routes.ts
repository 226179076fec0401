import { SAML, ValidateInResponseTo, type Profile } from '@node-saml/node-saml';
import type { FastifyInstance } from 'fastify';

import type { AdminRouteContext } from './admin-route-context.js';
import { one } from './admin-route-context.js';
import { admitUser, groupsOf, type ResolvedSaml } from './sso-options.js';
import { completeSignIn, refuseSignIn, safeNext } from './sso-routes.js';

/** How long an AuthnRequest may wait for its response (its ID is remembered that long). */
const REQUEST_MAX_AGE_MS = 10 * 60_000;

/** node-saml configured from the checked options. */
export function samlClient(sso: ResolvedSaml): SAML {
  return new SAML({
    issuer: sso.entityId,
    callbackUrl: sso.acsUrl,
    entryPoint: sso.idpSsoUrl,
    idpIssuer: sso.idpEntityId,
    idpCert: sso.idpCert,
    audience: sso.entityId,
    // The assertion itself must carry the IdP's signature: a signed envelope around an unsigned
    // assertion is the classic wrapping attack surface.
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    // Every response must answer an AuthnRequest this process sent (kept in node-saml's in-memory
    // cache): no IdP-initiated or replayed responses.
    validateInResponseTo: ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: REQUEST_MAX_AGE_MS,
    signatureAlgorithm: 'sha256',
    acceptedClockSkewMs: 5_000,
    ...(sso.spPrivateKey === null
      ? {}
      : {
          privateKey: sso.spPrivateKey,
          decryptionPvk: sso.spPrivateKey,
          publicCert: sso.spCert ?? undefined,
        }),
  });
}

/**
 * SAML sign-in, SP-initiated: `/auth/saml/login` redirects to the IdP with an AuthnRequest
 * (HTTP-Redirect binding, the page to return to in RelayState); the IdP posts its Response to
 * `POST /auth/saml/acs`; `/auth/saml/metadata` publishes this SP's metadata for the IdP's admin.
 * The request IDs live in this process's memory, so behind several replicas use sticky sessions
 * (or sign in again when a response lands on another replica).
 */
export function registerSamlRoutes(app: FastifyInstance, rc: AdminRouteContext, sso: ResolvedSaml): void {
  const saml = samlClient(sso);

  app.get('/auth/saml/login', async (request, reply) => {
    const next = safeNext(rc, one((request.query as Record<string, unknown>).next));
    const target = await saml.getAuthorizeUrlAsync(next, undefined, {});
    return reply.redirect(target, 303);
  });

  // No CSRF token here, unlike every other POST of the UI: the IdP's page posts this form, so it
  // cannot carry our token, and SameSite cookies are not sent on that cross-site POST anyway. What
  // protects it instead is the assertion: node-saml checks the IdP's signature over it, its issuer,
  // its audience (our entity ID), its validity window and that it answers an AuthnRequest we sent
  // (InResponseTo, consumed on use), so a forged or replayed post signs no one in.
  // A Response with a certificate and many group values easily passes the 16 KiB the UI's own
  // forms are limited to; this route alone takes up to 256 KiB.
  app.post('/auth/saml/acs', { bodyLimit: 262_144 }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const response = one(body.SAMLResponse);
    if (response === undefined) return refuseSignIn(rc, request, reply, 400, 'SAML: no SAMLResponse');
    let profile: Profile | null;
    try {
      ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: response }));
    } catch (err) {
      // Its message names the failed check (signature, audience, InResponseTo), never the assertion.
      return refuseSignIn(rc, request, reply, 401, `SAML: ${(err as Error).message.slice(0, 200)}`);
    }
    if (profile === null) return refuseSignIn(rc, request, reply, 401, 'SAML: no assertion');
    const user = userName(profile);
    const groups = sso.groupAttribute === null ? null : groupsOf(profile[sso.groupAttribute]);
    const admitted = admitUser(user, groups, sso);
    if (admitted === null) return refuseSignIn(rc, request, reply, 403, 'not in an allowed group', user);
    return completeSignIn(rc, request, reply, admitted, one(body.RelayState) ?? '');
  });

  app.get('/auth/saml/metadata', async (_request, reply) =>
    reply
      .type('application/samlmetadata+xml; charset=utf-8')
      .send(saml.generateServiceProviderMetadata(sso.spCert, sso.spCert)),
  );
}

/** A readable name: the e-mail attribute, else the NameID. */
function userName(profile: Profile): string {
  for (const v of [profile.email, profile.mail, profile['urn:oid:0.9.2342.19200300.100.1.3'], profile.nameID])
    if (typeof v === 'string' && v.trim() !== '') return v;
  return 'unknown';
}
