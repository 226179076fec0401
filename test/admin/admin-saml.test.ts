/**
 * SAML sign-in over real HTTP: the admin UI (`serveAdmin`) as the SP, and a test IdP made here (a
 * fresh openssl key and certificate, xml-crypto signing the assertion) answering the AuthnRequest
 * the UI sends. Checks the signature, the allowed groups, InResponseTo (no replay, no unsolicited
 * response), the audience, the CSRF exemption of the ACS, and the SP metadata.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SSO_SESSION_COOKIE } from '../../src/admin/admin-session.js';
import { adminPlugin, serveAdmin, type AdminServer } from '../../src/admin/index.js';
import type { SamlOptions } from '../../src/admin/sso-options.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { CookieFetch } from '../helpers/cookie-fetch.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { onFreePort } from '../helpers/free-port.js';
import {
  authnRequestId,
  selfSignedCert,
  signedResponse,
  type AssertionFields,
  type KeyPair,
} from '../helpers/saml-idp.js';
import { recordingLogger } from '../helpers/log-records.js';

const IDP_ENTITY = 'https://idp.example.test/saml';
const IDP_SSO = 'https://idp.example.test/saml/sso';
const SP_ENTITY = 'taskq-admin-test';
const SECRET = 'saml-session-secret-0123456789abcdef-cccc';

let db: TestSchema;
let tq: TaskQ;
let server: AdminServer;
let base: string;
let acsUrl: string;
let idpKeys: KeyPair;
let otherKeys: KeyPair;
const { logger, records } = recordingLogger();

beforeAll(async () => {
  idpKeys = selfSignedCert('test-idp');
  otherKeys = selfSignedCert('someone-else');
  db = await migratedSchema('admin_saml');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  server = await onFreePort((port) => {
    base = `http://127.0.0.1:${port}`;
    acsUrl = `${base}/auth/saml/acs`;
    return serveAdmin({
      tq,
      host: '127.0.0.1',
      port,
      environment: 'production',
      secureCookies: false,
      logger,
      adminUrl: base,
      saml: {
        entityId: SP_ENTITY,
        idpEntityId: IDP_ENTITY,
        idpSsoUrl: IDP_SSO,
        idpCert: idpKeys.cert,
        groupAttribute: 'groups',
        allowedGroups: ['taskq-admins'],
        sessionSecrets: [SECRET],
      },
    });
  });
});

afterAll(async () => {
  await server?.close();
  await tq?.close();
  await db?.drop();
});

/** Starts a sign-in from `from`: the browser and the AuthnRequest's ID and RelayState. */
async function startSignIn(from = '/') {
  const browser = new CookieFetch();
  const page = await browser.request(`${base}${from}`);
  expect(page.status).toBe(303);
  const login = await browser.request(new URL(page.headers.get('location') ?? '', base).href);
  expect(login.status).toBe(303);
  const target = login.headers.get('location') ?? '';
  expect(target.startsWith(`${IDP_SSO}?`)).toBe(true);
  return {
    browser,
    requestId: authnRequestId(target),
    relayState: new URL(target).searchParams.get('RelayState') ?? '',
  };
}

function fields(requestId: string, overrides: Partial<AssertionFields> = {}): AssertionFields {
  return {
    issuer: IDP_ENTITY,
    audience: SP_ENTITY,
    acsUrl,
    inResponseTo: requestId,
    nameId: 'ann@example.test',
    groups: ['taskq-admins'],
    ...overrides,
  };
}

/** Why the last refused sign-in was refused (the log's reason). */
function lastReason(): string {
  const last = records.filter((r) => r.msg === 'admin-login-refused').at(-1);
  return (last?.obj as { reason?: string } | undefined)?.reason ?? '';
}

/** Posts a response to the ACS as the IdP's auto-submitting form would: no CSRF token. */
function post(browser: CookieFetch, samlResponse: string, relayState = '/') {
  return browser.request(acsUrl, {
    method: 'POST',
    form: { SAMLResponse: samlResponse, RelayState: relayState },
  });
}

describe('SAML sign-in', () => {
  it('signs in with a signed response to its request, with the groups, landing where it started', async () => {
    const { browser, requestId, relayState } = await startSignIn('/jobs?status=failed');
    expect(relayState).toBe('/jobs?status=failed');
    const acs = await post(browser, signedResponse(fields(requestId), idpKeys), relayState);
    expect(acs.status).toBe(303);
    expect(acs.headers.get('location')).toBe('/jobs?status=failed');
    const cookie = acs.headers.getSetCookie().find((c) => c.startsWith(`${SSO_SESSION_COOKIE}=`));
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    const page = await browser.request(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('ann@example.test');
    expect(
      records.some((r) => r.msg === 'admin-login' && (r.obj as { backend?: string }).backend === 'saml'),
    ).toBe(true);
  });

  it('refuses a response signed by another key', async () => {
    const { browser, requestId } = await startSignIn();
    const acs = await post(browser, signedResponse(fields(requestId), otherKeys));
    expect(acs.status).toBe(401);
    expect(lastReason()).toMatch(/signature/i);
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(false);
    expect(records.at(-1)).toMatchObject({ msg: 'admin-login-refused', obj: { backend: 'saml' } });
  });

  it('refuses a correctly signed assertion altered afterwards', async () => {
    const { browser, requestId } = await startSignIn();
    const xml = Buffer.from(
      signedResponse(fields(requestId, { nameId: 'sue@example.test' }), idpKeys),
      'base64',
    )
      .toString()
      .replace('sue@example.test', 'root@example.test');
    const acs = await post(browser, Buffer.from(xml).toString('base64'));
    expect(acs.status).toBe(401);
    expect(lastReason()).toMatch(/signature/i);
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(false);
  });

  it('answers 403 to a user outside the allowed groups and logs admin-login-refused', async () => {
    const { browser, requestId } = await startSignIn();
    const acs = await post(
      browser,
      signedResponse(fields(requestId, { nameId: 'bob@example.test', groups: ['staff'] }), idpKeys),
    );
    expect(acs.status).toBe(403);
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(false);
    expect(records.at(-1)).toMatchObject({
      msg: 'admin-login-refused',
      obj: { user: 'bob@example.test', backend: 'saml', reason: 'not in an allowed group' },
    });
    // The log never holds the assertion.
    expect(JSON.stringify(records)).not.toContain('SignatureValue');
  });

  it('refuses a replayed response, one answering no request of ours, and the wrong audience', async () => {
    const first = await startSignIn();
    const response = signedResponse(fields(first.requestId), idpKeys);
    expect((await post(first.browser, response)).status).toBe(303);
    expect((await post(new CookieFetch(), response)).status).toBe(401);
    expect(lastReason()).toMatch(/InResponseTo/);

    const unsolicited = signedResponse(fields('_never-sent'), idpKeys);
    expect((await post(new CookieFetch(), unsolicited)).status).toBe(401);
    expect(lastReason()).toMatch(/InResponseTo/);

    const other = await startSignIn();
    const wrongAudience = signedResponse(fields(other.requestId, { audience: 'another-sp' }), idpKeys);
    expect((await post(other.browser, wrongAudience)).status).toBe(401);
    expect(lastReason()).toMatch(/audience/i);
  });

  it("accepts a response larger than the UI's 16 KiB form limit (hundreds of groups)", async () => {
    const { browser, requestId } = await startSignIn();
    const groups = [...Array.from({ length: 600 }, (_, i) => `group-with-a-long-name-${i}`), 'taskq-admins'];
    const response = signedResponse(fields(requestId, { groups }), idpKeys);
    expect(response.length).toBeGreaterThan(16_384);
    expect((await post(browser, response)).status).toBe(303);
  });

  it('never redirects off the UI through RelayState', async () => {
    const { browser, requestId } = await startSignIn();
    const acs = await post(browser, signedResponse(fields(requestId), idpKeys), 'https://evil.example/');
    expect(acs.status).toBe(303);
    expect(acs.headers.get('location')).toBe('/');
  });

  it('answers 400 to a post without a SAMLResponse', async () => {
    const r = await new CookieFetch().request(acsUrl, { method: 'POST', form: { RelayState: '/' } });
    expect(r.status).toBe(400);
  });

  it('publishes SP metadata naming the entity ID and the ACS URL, without signing in', async () => {
    const r = await fetch(`${base}/auth/saml/metadata`);
    expect(r.status).toBe(200);
    const xml = await r.text();
    expect(xml).toContain(`entityID="${SP_ENTITY}"`);
    expect(xml).toContain(`Location="${acsUrl}"`);
  });
});

describe('SAML options are checked at registration', () => {
  const good = (): SamlOptions => ({
    entityId: SP_ENTITY,
    idpEntityId: IDP_ENTITY,
    idpSsoUrl: IDP_SSO,
    idpCert: idpKeys.cert,
    sessionSecrets: [SECRET],
  });
  const register = async (saml: SamlOptions, adminUrl: string | null = base): Promise<unknown> => {
    const app = Fastify();
    try {
      await app.register(adminPlugin, { tq, saml, adminUrl, environment: 'production' }).ready();
      return null;
    } catch (err) {
      return err;
    } finally {
      await app.close();
    }
  };

  it('accepts good options in production: SSO counts as authentication', async () => {
    expect(await register(good())).toBeNull();
  });

  const bad: [string, Partial<SamlOptions>, string][] = [
    ['an SP key without its certificate', { spPrivateKey: otherKeysPlaceholder() }, 'options.saml.spCert'],
    ['an IdP SSO URL that is no URL', { idpSsoUrl: 'idp/sso' }, 'options.saml.idpSsoUrl'],
    ['no IdP certificate', { idpCert: ' ' }, 'options.saml.idpCert'],
    ['no entity ID', { entityId: '' }, 'options.saml.entityId'],
    ['groups without a group attribute', { allowedGroups: ['ops'] }, 'options.saml.allowedGroups'],
    ['a short session secret', { sessionSecrets: [SECRET, 'short'] }, 'options.saml.sessionSecrets[1]'],
  ];
  it.each(bad)('refuses %s, naming the field and never showing a key', async (_, overrides, field) => {
    const err = await register({ ...good(), ...overrides });
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe(field);
    expect((err as Error).message).not.toContain('PRIVATE KEY');
    expect((err as Error).message).not.toContain('short');
  });

  it('needs an ACS URL when adminUrl is not set', async () => {
    const err = await register(good(), null);
    expect((err as InvalidArgumentError).field).toBe('options.saml.acsUrl');
  });
});

/** A private-key-shaped string (the check must refuse it without echoing it). */
function otherKeysPlaceholder(): string {
  return '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----';
}
