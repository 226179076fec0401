import type { OidcOptions, SamlOptions } from '../admin/sso-options.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** The SSO part of the admin options, as read from the environment. */
export interface SsoEnvOptions {
  /** Present when `TASKQ_SSO_BACKEND=oidc`. */
  oidc?: OidcOptions;
  /** Present when `TASKQ_SSO_BACKEND=saml`. */
  saml?: SamlOptions;
}

type Env = Record<string, string | undefined>;

/** Each option of `oidc` / `saml` and the variable it comes from (error messages name the variable). */
const OIDC_VARS: Record<string, string> = {
  issuer: 'TASKQ_OIDC_ISSUER',
  clientId: 'TASKQ_OIDC_CLIENT_ID',
  clientSecret: 'TASKQ_OIDC_CLIENT_SECRET',
  redirectUri: 'TASKQ_OIDC_REDIRECT_URI',
  sessionSecrets: 'TASKQ_OIDC_SESSION_SECRET',
  sessionMaxAge: 'TASKQ_OIDC_SESSION_MAX_AGE_SECONDS',
  scope: 'TASKQ_OIDC_SCOPE',
  groupClaim: 'TASKQ_OIDC_GROUP_CLAIM',
  allowedGroups: 'TASKQ_OIDC_ALLOWED_GROUPS',
};
const SAML_VARS: Record<string, string> = {
  entityId: 'TASKQ_SAML_ENTITY_ID',
  acsUrl: 'TASKQ_SAML_ACS_URL',
  idpEntityId: 'TASKQ_SAML_IDP_ENTITY_ID',
  idpSsoUrl: 'TASKQ_SAML_IDP_SSO_URL',
  idpCert: 'TASKQ_SAML_IDP_X509_CERT',
  spCert: 'TASKQ_SAML_SP_X509_CERT',
  spPrivateKey: 'TASKQ_SAML_SP_PRIVATE_KEY',
  sessionSecrets: 'TASKQ_SAML_SESSION_SECRET',
  sessionMaxAge: 'TASKQ_SAML_SESSION_MAX_AGE_SECONDS',
  groupAttribute: 'TASKQ_SAML_GROUP_ATTRIBUTE',
  allowedGroups: 'TASKQ_SAML_ALLOWED_GROUPS',
};

/**
 * The variable an admin option's error is about, e.g. `TASKQ_OIDC_SESSION_SECRET` for
 * `options.oidc.sessionSecrets[0]`, or undefined for other fields.
 */
export function ssoEnvVarOf(field: string): string | undefined {
  const m = /^options\.(oidc|saml)\.([A-Za-z]+)/.exec(field);
  if (m === null) return undefined;
  return (m[1] === 'oidc' ? OIDC_VARS : SAML_VARS)[m[2] as string];
}

function get(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** A comma-separated list, entries trimmed, empty ones dropped. */
function list(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A PEM given in one line with `\n` escapes (common in env files) becomes a real PEM. */
function pem(text: string | undefined): string | undefined {
  return text?.replace(/\\n/g, '\n');
}

function maxAge(env: Env, name: string): number | undefined {
  const text = get(env, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 60)
    throw new InvalidArgumentError(name, text, 'must be a whole number of seconds >= 60');
  return n * 1000;
}

function requireAll(env: Env, backend: string, names: string[]): void {
  const missing = names.filter((n) => get(env, n) === undefined);
  if (missing.length > 0)
    throw new InvalidArgumentError(
      missing[0] as string,
      undefined,
      `must be set when TASKQ_SSO_BACKEND=${backend} (missing: ${missing.join(', ')})`,
      { conceal: true },
    );
}

/**
 * The `oidc` or `saml` admin option from `TASKQ_OIDC_*` / `TASKQ_SAML_*`, as `backend`
 * (`TASKQ_SSO_BACKEND`) selects; `{}` for `none`. A session secret variable may hold several
 * secrets separated by commas (the first signs, all verify: rotation). The redirect / ACS URL may
 * be left unset when `adminUrl` (`TASKQ_ADMIN_URL`) is set. The values themselves are checked by
 * the admin options (`resolveAdminOptions`); use {@link ssoEnvVarOf} to name the variable then.
 * @throws InvalidArgumentError naming the first missing required variable (and listing all)
 */
export function ssoOptionsFromEnv(
  env: Env,
  backend: 'none' | 'oidc' | 'saml',
  adminUrl: string | null,
): SsoEnvOptions {
  if (backend === 'oidc') {
    requireAll(env, 'oidc', [
      'TASKQ_OIDC_ISSUER',
      'TASKQ_OIDC_CLIENT_ID',
      'TASKQ_OIDC_CLIENT_SECRET',
      'TASKQ_OIDC_SESSION_SECRET',
      ...(adminUrl === null ? ['TASKQ_OIDC_REDIRECT_URI'] : []),
    ]);
    const oidc: OidcOptions = {
      issuer: get(env, 'TASKQ_OIDC_ISSUER') as string,
      clientId: get(env, 'TASKQ_OIDC_CLIENT_ID') as string,
      clientSecret: get(env, 'TASKQ_OIDC_CLIENT_SECRET') as string,
      sessionSecrets: list(get(env, 'TASKQ_OIDC_SESSION_SECRET')) ?? [],
      groupClaim: get(env, 'TASKQ_OIDC_GROUP_CLAIM') ?? null,
      allowedGroups: list(get(env, 'TASKQ_OIDC_ALLOWED_GROUPS')) ?? [],
    };
    const redirectUri = get(env, 'TASKQ_OIDC_REDIRECT_URI');
    if (redirectUri !== undefined) oidc.redirectUri = redirectUri;
    const scope = get(env, 'TASKQ_OIDC_SCOPE');
    if (scope !== undefined) oidc.scope = scope;
    const age = maxAge(env, 'TASKQ_OIDC_SESSION_MAX_AGE_SECONDS');
    if (age !== undefined) oidc.sessionMaxAge = age;
    return { oidc };
  }
  if (backend === 'saml') {
    requireAll(env, 'saml', [
      'TASKQ_SAML_ENTITY_ID',
      'TASKQ_SAML_IDP_ENTITY_ID',
      'TASKQ_SAML_IDP_SSO_URL',
      'TASKQ_SAML_IDP_X509_CERT',
      'TASKQ_SAML_SESSION_SECRET',
      ...(adminUrl === null ? ['TASKQ_SAML_ACS_URL'] : []),
    ]);
    const saml: SamlOptions = {
      entityId: get(env, 'TASKQ_SAML_ENTITY_ID') as string,
      idpEntityId: get(env, 'TASKQ_SAML_IDP_ENTITY_ID') as string,
      idpSsoUrl: get(env, 'TASKQ_SAML_IDP_SSO_URL') as string,
      idpCert: pem(get(env, 'TASKQ_SAML_IDP_X509_CERT')) as string,
      spCert: pem(get(env, 'TASKQ_SAML_SP_X509_CERT')) ?? null,
      spPrivateKey: pem(get(env, 'TASKQ_SAML_SP_PRIVATE_KEY')) ?? null,
      sessionSecrets: list(get(env, 'TASKQ_SAML_SESSION_SECRET')) ?? [],
      groupAttribute: get(env, 'TASKQ_SAML_GROUP_ATTRIBUTE') ?? null,
      allowedGroups: list(get(env, 'TASKQ_SAML_ALLOWED_GROUPS')) ?? [],
    };
    const acsUrl = get(env, 'TASKQ_SAML_ACS_URL');
    if (acsUrl !== undefined) saml.acsUrl = acsUrl;
    const age = maxAge(env, 'TASKQ_SAML_SESSION_MAX_AGE_SECONDS');
    if (age !== undefined) saml.sessionMaxAge = age;
    return { saml };
  }
  return {};
}

/**
 * The SSO variables set (non-blank) that `backend` does not read: `TASKQ_OIDC_*` unless `oidc`,
 * `TASKQ_SAML_*` unless `saml`. An operator who forgot `TASKQ_SSO_BACKEND` should hear about it.
 */
export function ignoredSsoVars(env: Env, backend: 'none' | 'oidc' | 'saml'): string[] {
  const unread = [
    ...(backend === 'oidc' ? [] : Object.values(OIDC_VARS)),
    ...(backend === 'saml' ? [] : Object.values(SAML_VARS)),
  ];
  return unread.filter((name) => get(env, name) !== undefined).sort();
}
