/**
 * The SSO variables `taskq ui serve` reads (TASKQ_OIDC_* / TASKQ_SAML_*): what each becomes in the
 * admin options, what is required for which backend, and that the worker loader accepts them.
 */
import { describe, expect, it } from 'vitest';

import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { SSO_ENV_VARS } from '../../src/settings/setting-fields.js';
import { ignoredSsoVars, ssoEnvVarOf, ssoOptionsFromEnv } from '../../src/settings/sso-settings.js';
import { rejection } from '../helpers/rejections.js';

const S1 = 'a'.repeat(32);
const S2 = 'b'.repeat(40);

describe('ssoOptionsFromEnv', () => {
  it('none reads nothing, even when variables are set', () => {
    expect(ssoOptionsFromEnv({ TASKQ_OIDC_ISSUER: 'https://x' }, 'none', null)).toEqual({});
  });

  it('oidc: every variable, the secret list for rotation, groups and the max age', () => {
    const { oidc } = ssoOptionsFromEnv(
      {
        TASKQ_OIDC_ISSUER: 'https://login.example.com/t/v2.0',
        TASKQ_OIDC_CLIENT_ID: 'cid',
        TASKQ_OIDC_CLIENT_SECRET: 'csecret',
        TASKQ_OIDC_REDIRECT_URI: 'https://ops.example.com/auth/callback',
        TASKQ_OIDC_SESSION_SECRET: ` ${S1} , ${S2} `,
        TASKQ_OIDC_SESSION_MAX_AGE_SECONDS: '3600',
        TASKQ_OIDC_SCOPE: 'openid email',
        TASKQ_OIDC_GROUP_CLAIM: 'roles',
        TASKQ_OIDC_ALLOWED_GROUPS: 'ops, sre,',
      },
      'oidc',
      null,
    );
    expect(oidc).toEqual({
      issuer: 'https://login.example.com/t/v2.0',
      clientId: 'cid',
      clientSecret: 'csecret',
      redirectUri: 'https://ops.example.com/auth/callback',
      sessionSecrets: [S1, S2],
      sessionMaxAge: 3_600_000,
      scope: 'openid email',
      groupClaim: 'roles',
      allowedGroups: ['ops', 'sre'],
    });
  });

  it('oidc: the redirect URI is required only without TASKQ_ADMIN_URL; all missing ones are listed', () => {
    const base = {
      TASKQ_OIDC_ISSUER: 'https://i',
      TASKQ_OIDC_CLIENT_ID: 'c',
      TASKQ_OIDC_CLIENT_SECRET: 's',
      TASKQ_OIDC_SESSION_SECRET: S1,
    };
    expect(ssoOptionsFromEnv(base, 'oidc', 'https://ops.example.com').oidc?.redirectUri).toBeUndefined();
    const err = rejection(() => ssoOptionsFromEnv(base, 'oidc', null));
    expect(err.field).toBe('TASKQ_OIDC_REDIRECT_URI');
    const all = rejection(() => ssoOptionsFromEnv({}, 'oidc', null));
    expect(all.field).toBe('TASKQ_OIDC_ISSUER');
    expect(all.message).toContain(
      'missing: TASKQ_OIDC_ISSUER, TASKQ_OIDC_CLIENT_ID, TASKQ_OIDC_CLIENT_SECRET, TASKQ_OIDC_SESSION_SECRET, TASKQ_OIDC_REDIRECT_URI',
    );
  });

  it('refuses a max age under a minute or not a whole number of seconds', () => {
    for (const bad of ['59', '1.5', '10m']) {
      const err = rejection(() =>
        ssoOptionsFromEnv(
          {
            TASKQ_SAML_ENTITY_ID: 'sp',
            TASKQ_SAML_IDP_ENTITY_ID: 'idp',
            TASKQ_SAML_IDP_SSO_URL: 'https://idp/sso',
            TASKQ_SAML_IDP_X509_CERT: 'c',
            TASKQ_SAML_SESSION_SECRET: S1,
            TASKQ_SAML_SESSION_MAX_AGE_SECONDS: bad,
          },
          'saml',
          'https://ops.example.com',
        ),
      );
      expect(err.field).toBe('TASKQ_SAML_SESSION_MAX_AGE_SECONDS');
    }
  });

  it('saml: PEMs given with \\n escapes become multi-line; SP key and cert optional', () => {
    const { saml } = ssoOptionsFromEnv(
      {
        TASKQ_SAML_ENTITY_ID: 'taskq-admin',
        TASKQ_SAML_IDP_ENTITY_ID: 'https://idp.example.com',
        TASKQ_SAML_IDP_SSO_URL: 'https://idp.example.com/sso',
        TASKQ_SAML_IDP_X509_CERT: '-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----',
        TASKQ_SAML_SESSION_SECRET: S1,
        TASKQ_SAML_GROUP_ATTRIBUTE: 'memberOf',
        TASKQ_SAML_ALLOWED_GROUPS: 'ops',
      },
      'saml',
      'https://ops.example.com',
    );
    expect(saml).toMatchObject({
      idpCert: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
      spCert: null,
      spPrivateKey: null,
      groupAttribute: 'memberOf',
      allowedGroups: ['ops'],
    });
    expect(saml?.acsUrl).toBeUndefined();
  });

  it('lists the SSO variables the chosen backend does not read', () => {
    const env = { TASKQ_OIDC_ISSUER: 'https://i', TASKQ_SAML_ENTITY_ID: 'sp', TASKQ_OIDC_SCOPE: ' ' };
    expect(ignoredSsoVars(env, 'none')).toEqual(['TASKQ_OIDC_ISSUER', 'TASKQ_SAML_ENTITY_ID']);
    expect(ignoredSsoVars(env, 'oidc')).toEqual(['TASKQ_SAML_ENTITY_ID']);
    expect(ignoredSsoVars(env, 'saml')).toEqual(['TASKQ_OIDC_ISSUER']);
  });

  it('names the variable behind an admin option', () => {
    expect(ssoEnvVarOf('options.oidc.sessionSecrets[1]')).toBe('TASKQ_OIDC_SESSION_SECRET');
    expect(ssoEnvVarOf('options.saml.idpCert')).toBe('TASKQ_SAML_IDP_X509_CERT');
    expect(ssoEnvVarOf('options.token')).toBeUndefined();
  });

  it('the worker loader accepts every SSO variable without a warning', () => {
    const env = Object.fromEntries(SSO_ENV_VARS.map((v) => [v, 'x']));
    const { warnings } = loadWorkerSettings({
      env: { ...env, TASKQ_SSO_BACKEND: 'saml', TASKQ_ADMIN_URL: 'https://ops.example.com' },
    });
    expect(warnings).toEqual([]);
  });

  it('TASKQ_ADMIN_URL must be an absolute http(s) URL', () => {
    expect(() => loadWorkerSettings({ env: { TASKQ_ADMIN_URL: 'ops.example.com' } })).toThrow(
      /TASKQ_ADMIN_URL/,
    );
    expect(() => loadWorkerSettings({ env: { TASKQ_SSO_BACKEND: 'ldap' } })).toThrow(/TASKQ_SSO_BACKEND/);
  });
});
