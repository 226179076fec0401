import { checkKnownKeys } from '../core/closest-name.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { AdminUser } from './admin-options.js';
import { MIN_SESSION_SECRET_LENGTH } from './admin-session.js';

/** What OIDC and SAML sign-in share: the session cookie and who may use the UI. */
export interface SsoSessionOptions {
  /**
   * Keys signing the session cookie (HMAC-SHA256), each at least 32 characters of random data. The
   * FIRST signs new sessions; EVERY one verifies. To rotate: put the new secret first and keep the
   * old one second until the sessions it signed have expired (`sessionMaxAge`), then remove it.
   * Removing a secret ends every session it signed.
   */
  sessionSecrets: string[];
  /** How long a session lasts (≥ 60 s). Default `'8h'` (the reference's 28,800 s). */
  sessionMaxAge?: Duration;
  /**
   * Groups allowed to use the UI; a user in none of them gets 403 and `admin-login-refused` is
   * logged. Empty or absent: every user the IdP authenticates may (authentication-only).
   */
  allowedGroups?: string[];
  /**
   * Groups whose members may retry and cancel (when actions are enabled). Absent: every allowed user.
   */
  actionGroups?: string[];
  /** Groups whose members may read payloads and results. Absent: every allowed user. */
  payloadGroups?: string[];
}

/** The keys of {@link SsoSessionOptions}, shared by {@link OIDC_OPTION_KEYS} and {@link SAML_OPTION_KEYS}. */
export const SSO_SESSION_OPTION_KEYS: readonly string[] = [
  'sessionSecrets',
  'sessionMaxAge',
  'allowedGroups',
  'actionGroups',
  'payloadGroups',
];

/** Sign-in through an OpenID Connect provider (authorization code flow with PKCE). */
export interface OidcOptions extends SsoSessionOptions {
  /** The issuer URL, discovered at `/.well-known/openid-configuration`; https (http only on loopback). */
  issuer: string;
  /** OAuth2 client ID registered at the IdP. */
  clientId: string;
  /** OAuth2 client secret (sent with `client_secret_basic`). */
  clientSecret: string;
  /** Must match the app registration. Default: `${adminUrl}/auth/callback`. */
  redirectUri?: string;
  /** Scopes asked for. Default `'openid profile email'`. */
  scope?: string;
  /** ID-token claim holding the user's groups (e.g. `groups`, `roles`). Default: none. */
  groupClaim?: string | null;
}

/**
 * The keys of {@link OidcOptions}; any other is refused: a misspelt `allowedGroup` would otherwise
 * leave the allowed groups empty and admit every user the IdP authenticates.
 */
export const OIDC_OPTION_KEYS: readonly string[] = [
  'issuer',
  'clientId',
  'clientSecret',
  'redirectUri',
  'scope',
  'groupClaim',
  ...SSO_SESSION_OPTION_KEYS,
];

/** Sign-in through a SAML 2.0 IdP (SP-initiated, HTTP-Redirect request, HTTP-POST response). */
export interface SamlOptions extends SsoSessionOptions {
  /** This service provider's entity ID (the audience the IdP's assertions must name). */
  entityId: string;
  /** The Assertion Consumer Service URL the IdP posts to. Default: `${adminUrl}/auth/saml/acs`. */
  acsUrl?: string;
  /** The IdP's entity ID (the issuer its responses must name). */
  idpEntityId: string;
  /** The IdP's single sign-on URL (HTTP-Redirect binding). */
  idpSsoUrl: string;
  /** The IdP's signing certificate (PEM, or its base64 body). */
  idpCert: string;
  /** This SP's certificate (published in the metadata; needed with `spPrivateKey`). */
  spCert?: string | null;
  /** This SP's private key (PEM): signs the AuthnRequests and decrypts encrypted assertions. */
  spPrivateKey?: string | null;
  /** Attribute of the assertion holding the user's groups. Default: none. */
  groupAttribute?: string | null;
}

/**
 * The keys of {@link SamlOptions}; any other is refused: a misspelt `actionGroup` would otherwise
 * let every allowed user act.
 */
export const SAML_OPTION_KEYS: readonly string[] = [
  'entityId',
  'acsUrl',
  'idpEntityId',
  'idpSsoUrl',
  'idpCert',
  'spCert',
  'spPrivateKey',
  'groupAttribute',
  ...SSO_SESSION_OPTION_KEYS,
];

/** Session options checked. */
export interface ResolvedSsoSession {
  /** Signing secrets, first signs. */
  sessionSecrets: string[];
  /** Session lifetime, ms. */
  sessionMaxAgeMs: number;
  /** Allowed groups; empty = everyone the IdP authenticates. */
  allowedGroups: string[];
  /** Groups that may act, or null = every allowed user. */
  actionGroups: string[] | null;
  /** Groups that may read payloads, or null = every allowed user. */
  payloadGroups: string[] | null;
}

/** {@link OidcOptions} checked, with defaults. */
export interface ResolvedOidc extends ResolvedSsoSession {
  /** Which backend. */
  kind: 'oidc';
  /** Issuer URL. */
  issuer: string;
  /** Client ID. */
  clientId: string;
  /** Client secret. */
  clientSecret: string;
  /** Redirect URI. */
  redirectUri: string;
  /** Scopes. */
  scope: string;
  /** Group claim, or null. */
  groupClaim: string | null;
}

/** {@link SamlOptions} checked, with defaults. */
export interface ResolvedSaml extends ResolvedSsoSession {
  /** Which backend. */
  kind: 'saml';
  /** SP entity ID. */
  entityId: string;
  /** ACS URL. */
  acsUrl: string;
  /** IdP entity ID. */
  idpEntityId: string;
  /** IdP SSO URL. */
  idpSsoUrl: string;
  /** IdP certificate. */
  idpCert: string;
  /** SP certificate, or null. */
  spCert: string | null;
  /** SP private key, or null. */
  spPrivateKey: string | null;
  /** Group attribute, or null. */
  groupAttribute: string | null;
}

/** The configured SSO backend. */
export type ResolvedSso = ResolvedOidc | ResolvedSaml;

const REDACTED = '<redacted>';

function text(value: unknown, field: string, secret = false): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new InvalidArgumentError(field, secret ? REDACTED : value, 'must be a non-empty string');
  return value.trim();
}

function optionalText(value: unknown, field: string, secret = false): string | null {
  return value === undefined || value === null ? null : text(value, field, secret);
}

/**
 * An absolute http(s) URL, as given (an issuer or a redirect URI must match the IdP's exactly,
 * trailing slash included: Auth0's issuer ends in one); plain http only for a loopback host when
 * asked.
 */
export function checkUrl(value: unknown, field: string, httpOnlyOnLoopback = false): string {
  const s = text(value, field);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new InvalidArgumentError(field, value, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new InvalidArgumentError(field, value, 'must be an absolute http(s) URL');
  if (httpOnlyOnLoopback && url.protocol === 'http:' && !isLoopback(url.hostname))
    throw new InvalidArgumentError(field, value, 'must use https (plain http only for localhost)');
  return s;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function groups(value: unknown, field: string): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.some((g) => typeof g !== 'string' || g.trim() === ''))
    throw new InvalidArgumentError(field, value, 'must be an array of non-empty group names');
  return value.map((g: string) => g.trim());
}

function session(o: SsoSessionOptions, field: string, groupSource: string | null): ResolvedSsoSession {
  const secrets: unknown = o.sessionSecrets;
  if (!Array.isArray(secrets) || secrets.length === 0)
    throw new InvalidArgumentError(
      `${field}.sessionSecrets`,
      Array.isArray(secrets) ? secrets : REDACTED,
      'must be a non-empty array of secrets (the first signs, every one verifies)',
    );
  secrets.forEach((s: unknown, i) => {
    if (typeof s !== 'string' || s.length < MIN_SESSION_SECRET_LENGTH)
      throw new InvalidArgumentError(
        `${field}.sessionSecrets[${i}]`,
        REDACTED,
        `must be a string of at least ${MIN_SESSION_SECRET_LENGTH} characters of random data`,
      );
  });
  const maxAge =
    o.sessionMaxAge === undefined ? 8 * 3_600_000 : toMs(o.sessionMaxAge, `${field}.sessionMaxAge`);
  if (maxAge < 60_000)
    throw new InvalidArgumentError(`${field}.sessionMaxAge`, o.sessionMaxAge, 'must be at least 60 s');
  const resolved = {
    sessionSecrets: [...(secrets as string[])],
    sessionMaxAgeMs: maxAge,
    allowedGroups: groups(o.allowedGroups, `${field}.allowedGroups`) ?? [],
    actionGroups: groups(o.actionGroups, `${field}.actionGroups`),
    payloadGroups: groups(o.payloadGroups, `${field}.payloadGroups`),
  };
  // Group rules without a source of groups would silently refuse (or admit) everyone.
  const usesGroups =
    resolved.allowedGroups.length > 0 || resolved.actionGroups !== null || resolved.payloadGroups !== null;
  if (usesGroups && groupSource === null)
    throw new InvalidArgumentError(
      `${field}.allowedGroups`,
      resolved.allowedGroups,
      `group rules need ${field}.${field === 'options.oidc' ? 'groupClaim' : 'groupAttribute'} to say where the groups are`,
    );
  return resolved;
}

/** Checks `options.oidc`; `adminUrl` supplies the default redirect URI. */
export function resolveOidc(o: OidcOptions, adminUrl: string | null): ResolvedOidc {
  const f = 'options.oidc';
  if (o === null || typeof o !== 'object') throw new InvalidArgumentError(f, o, 'must be an object');
  checkKnownKeys(o, OIDC_OPTION_KEYS, f, 'an option of oidc');
  const groupClaim = optionalText(o.groupClaim, `${f}.groupClaim`);
  if (o.redirectUri === undefined && adminUrl === null)
    throw new InvalidArgumentError(
      `${f}.redirectUri`,
      undefined,
      'is required when adminUrl (TASKQ_ADMIN_URL) is not set',
    );
  return {
    kind: 'oidc',
    issuer: checkUrl(o.issuer, `${f}.issuer`, true),
    clientId: text(o.clientId, `${f}.clientId`),
    clientSecret: text(o.clientSecret, `${f}.clientSecret`, true),
    redirectUri:
      o.redirectUri === undefined ? `${adminUrl}/auth/callback` : checkUrl(o.redirectUri, `${f}.redirectUri`),
    scope: o.scope === undefined ? 'openid profile email' : scopeOf(o.scope, `${f}.scope`),
    groupClaim,
    ...session(o, f, groupClaim),
  };
}

function scopeOf(value: unknown, field: string): string {
  const s = text(value, field);
  if (!s.split(/\s+/).includes('openid'))
    throw new InvalidArgumentError(field, value, 'must include "openid" (space-separated scopes)');
  return s;
}

/** Checks `options.saml`; `adminUrl` supplies the default ACS URL. */
export function resolveSaml(o: SamlOptions, adminUrl: string | null): ResolvedSaml {
  const f = 'options.saml';
  if (o === null || typeof o !== 'object') throw new InvalidArgumentError(f, o, 'must be an object');
  checkKnownKeys(o, SAML_OPTION_KEYS, f, 'an option of saml');
  const groupAttribute = optionalText(o.groupAttribute, `${f}.groupAttribute`);
  if (o.acsUrl === undefined && adminUrl === null)
    throw new InvalidArgumentError(
      `${f}.acsUrl`,
      undefined,
      'is required when adminUrl (TASKQ_ADMIN_URL) is not set',
    );
  const spCert = optionalText(o.spCert, `${f}.spCert`);
  const spPrivateKey = optionalText(o.spPrivateKey, `${f}.spPrivateKey`, true);
  if ((spCert === null) !== (spPrivateKey === null))
    throw new InvalidArgumentError(
      `${f}.spCert`,
      spCert === null ? null : '<certificate>',
      'spCert and spPrivateKey go together: give both or neither',
    );
  return {
    kind: 'saml',
    entityId: text(o.entityId, `${f}.entityId`),
    acsUrl: o.acsUrl === undefined ? `${adminUrl}/auth/saml/acs` : checkUrl(o.acsUrl, `${f}.acsUrl`),
    idpEntityId: text(o.idpEntityId, `${f}.idpEntityId`),
    idpSsoUrl: checkUrl(o.idpSsoUrl, `${f}.idpSsoUrl`),
    idpCert: text(o.idpCert, `${f}.idpCert`),
    spCert,
    spPrivateKey,
    groupAttribute,
    ...session(o, f, groupAttribute),
  };
}

/**
 * The user a sign-in admits, or null when the allowed groups exclude them. `groups` is what the
 * IdP said (null when no group claim / attribute is configured).
 */
export function admitUser(
  user: string,
  userGroups: readonly string[] | null,
  sso: ResolvedSsoSession,
): Required<AdminUser> | null {
  const member = (list: readonly string[]) => (userGroups ?? []).some((g) => list.includes(g));
  if (sso.allowedGroups.length > 0 && !member(sso.allowedGroups)) return null;
  return {
    user,
    readPayloads: sso.payloadGroups === null || member(sso.payloadGroups),
    actions: sso.actionGroups === null || member(sso.actionGroups),
  };
}

/** The group names of a claim or attribute value: a list, or one name (some IdPs send a string). */
export function groupsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((g): g is string => typeof g === 'string');
  return [];
}
