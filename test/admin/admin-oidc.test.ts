/**
 * OIDC sign-in over real HTTP: a real `oidc-provider` on a free port, the admin UI (`serveAdmin`)
 * on another, and a fetch-based browser stand-in walking the authorization code flow. Also the
 * signed session cookie: tampering, secret rotation, sign-out, and option validation.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { issueSession, SSO_SESSION_COOKIE } from '../../src/admin/admin-session.js';
import { adminPlugin, resolveAdminOptions, serveAdmin, type AdminServer } from '../../src/admin/index.js';
import type { OidcOptions } from '../../src/admin/sso-options.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { CookieFetch, formOf } from '../helpers/cookie-fetch.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { freePort } from '../helpers/free-port.js';
import { startOidcIdp, type TestOidcIdp } from '../helpers/oidc-idp.js';
import { recordingLogger } from '../helpers/log-records.js';

const OLD_SECRET = 'old-session-secret-0123456789abcdef-aaaa';
const NEW_SECRET = 'new-session-secret-0123456789abcdef-bbbb';

let db: TestSchema;
let tq: TaskQ;
let idp: TestOidcIdp;
let server: AdminServer;
let adminUrl: string;
const { logger, records } = recordingLogger();

function oidcOptions(overrides: Partial<OidcOptions> = {}): OidcOptions {
  return {
    issuer: idp.issuer,
    clientId: idp.clientId,
    clientSecret: idp.clientSecret,
    scope: 'openid email groups',
    groupClaim: 'groups',
    allowedGroups: ['taskq-admins', 'taskq-support'],
    actionGroups: ['taskq-admins'],
    sessionSecrets: [NEW_SECRET],
    ...overrides,
  };
}

/** Signs in as `login` through the IdP's pages, starting from the overview; the last response. */
async function signIn(browser: CookieFetch, login: string, from = '/') {
  const start = await browser.follow(`${adminUrl}${from}`);
  expect(start.url.startsWith(idp.issuer)).toBe(true);
  const loginForm = formOf(await start.response.text(), start.url);
  const afterLogin = await browser.follow(loginForm.action, {
    method: 'POST',
    form: { ...loginForm.fields, login, password: 'any' },
  });
  if (!afterLogin.url.startsWith(idp.issuer)) return afterLogin; // no consent page
  const consent = formOf(await afterLogin.response.text(), afterLogin.url);
  return browser.follow(consent.action, { method: 'POST', form: consent.fields });
}

beforeAll(async () => {
  db = await migratedSchema('admin_oidc');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  const port = await freePort();
  adminUrl = `http://127.0.0.1:${port}`;
  idp = await startOidcIdp([`${adminUrl}/auth/callback`], {
    ann: ['taskq-admins'],
    sue: ['taskq-support'],
    bob: ['staff'],
  });
  server = await serveAdmin({
    tq,
    host: '127.0.0.1',
    port,
    adminUrl,
    environment: 'production',
    secureCookies: false,
    actionsEnabled: true,
    logger,
    oidc: oidcOptions(),
  });
});

afterAll(async () => {
  await server?.close();
  await idp?.close();
  await tq?.close();
  await db?.drop();
});

async function mounted(oidc: OidcOptions): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(adminPlugin, { tq, oidc, adminUrl, environment: 'production' });
  await app.ready();
  return app;
}

describe('OIDC sign-in through a real provider', () => {
  it('sends a visitor to the IdP and back, signed in, to the page they asked for', async () => {
    const browser = new CookieFetch();
    const { response, url, visited } = await signIn(browser, 'ann');
    expect(response.status).toBe(200);
    expect(url).toBe(`${adminUrl}/`);
    expect(visited.some((u) => u.startsWith(`${adminUrl}/auth/callback?`))).toBe(true);
    expect(await response.text()).toContain('ann@example.test');
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(true);
    expect(
      records.some(
        (r) => r.msg === 'admin-login' && (r.obj as { user?: string }).user === 'ann@example.test',
      ),
    ).toBe(true);

    // The session cookie is HttpOnly and SameSite=Lax (the IdP's redirect back is cross-site).
    const again = await fetch(`${adminUrl}/jobs`, {
      headers: {
        cookie: `${SSO_SESSION_COOKIE}=${browser.cookies.get(SSO_SESSION_COOKIE)}`,
        accept: 'text/html',
      },
      redirect: 'manual',
    });
    expect(again.status).toBe(200);

    // Signing in from a deep page comes back to that page.
    const deep = await signIn(new CookieFetch(), 'ann', '/jobs?status=failed');
    expect(deep.response.status).toBe(200);
    expect(deep.url).toBe(`${adminUrl}/jobs?status=failed`);
  });

  it('sets the session cookie HttpOnly and SameSite=Lax, and the flow cookie too', async () => {
    const browser = new CookieFetch();
    const login = await browser.request(`${adminUrl}/auth/login`);
    expect(login.status).toBe(303);
    const flow = login.headers.getSetCookie().find((c) => c.startsWith('taskq_admin_sso_flow='));
    expect(flow).toMatch(/HttpOnly/i);
    expect(flow).toMatch(/SameSite=Lax/i);
    const target = new URL(login.headers.get('location') ?? '');
    expect(target.searchParams.get('code_challenge_method')).toBe('S256');
    expect(target.searchParams.get('state')).toBeTruthy();
    expect(target.searchParams.get('nonce')).toBeTruthy();
  });

  it('derives the actions permission from the groups: a support user may look but not act', async () => {
    const browser = new CookieFetch();
    const { response } = await signIn(browser, 'sue');
    expect(response.status).toBe(200);
    const cookie = browser.cookies.get(SSO_SESSION_COOKIE) ?? '';
    const session = JSON.parse(Buffer.from(cookie.split('.')[0] ?? '', 'base64url').toString()) as object;
    expect(session).toMatchObject({ user: 'sue@example.test', actions: false, readPayloads: true });
  });

  it('refuses a user outside the allowed groups with 403 and logs admin-login-refused, no tokens', async () => {
    const browser = new CookieFetch();
    const { response } = await signIn(browser, 'bob');
    expect(response.status).toBe(403);
    expect(await response.text()).toContain('not in a group allowed');
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(false);
    const refused = records.filter((r) => r.msg === 'admin-login-refused');
    expect(refused.at(-1)?.obj).toMatchObject({ user: 'bob@example.test', backend: 'oidc' });
    const logged = JSON.stringify(records);
    expect(logged).not.toContain(idp.clientSecret);
    expect(logged).not.toMatch(/eyJ[\w-]+\.eyJ/); // no JWT (ID or access token)
    expect(logged).not.toContain('code=');
  });

  it('refuses a callback without the flow cookie (a forged or replayed redirect)', async () => {
    const browser = new CookieFetch();
    const r = await browser.request(`${adminUrl}/auth/callback?code=abc&state=xyz`);
    expect(r.status).toBe(400);
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(false);
  });

  it('never redirects off the UI after sign-in (next=//elsewhere lands on the overview)', async () => {
    const browser = new CookieFetch();
    await browser.follow(`${adminUrl}/auth/login?next=${encodeURIComponent('//evil.example/x')}`);
    const flow = browser.cookies.get('taskq_admin_sso_flow') ?? '';
    const body = JSON.parse(Buffer.from(flow.split('.')[0] ?? '', 'base64url').toString()) as {
      next: string;
    };
    expect(body.next).toBe('/');
  });

  it('signs out: POST /auth/logout (with CSRF) clears the session cookie', async () => {
    const browser = new CookieFetch();
    const { response } = await signIn(browser, 'ann');
    const page = await response.text();
    const form = formOf(page.slice(page.indexOf('/auth/logout') - 200), `${adminUrl}/`);
    expect(form.action).toBe(`${adminUrl}/auth/logout`);
    const out = await browser.request(form.action, { method: 'POST', form: form.fields });
    expect(out.status).toBe(200);
    expect(browser.cookies.has(SSO_SESSION_COOKIE)).toBe(false);
    const after = await browser.request(`${adminUrl}/`);
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toContain('/auth/login');
  });
});

describe('the signed session cookie', () => {
  const ann = { user: 'ann@example.test', readPayloads: true, actions: true };
  const get = (app: FastifyInstance, cookie: string, accept = 'text/html') =>
    app.inject({ method: 'GET', url: '/', headers: { accept, cookie: `${SSO_SESSION_COOKIE}=${cookie}` } });

  it('is refused when tampered with: 303 to sign-in for a page, 401 otherwise', async () => {
    const app = await mounted(oidcOptions());
    try {
      const good = issueSession(ann, [NEW_SECRET], 3_600_000);
      expect((await get(app, good)).statusCode).toBe(200);
      const [body, sig] = good.split('.') as [string, string];
      const forged = Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), user: 'root' }),
      ).toString('base64url');
      const tampered = `${forged}.${sig}`;
      const page = await get(app, tampered);
      expect(page.statusCode).toBe(303);
      expect(page.headers.location).toBe('/auth/login?next=%2F');
      expect((await get(app, tampered, 'application/json')).statusCode).toBe(401);
      expect((await get(app, `${body}.${sig.slice(0, -2)}xx`, 'application/json')).statusCode).toBe(401);
      const expired = issueSession(ann, [NEW_SECRET], 60_000, Date.now() - 120_000);
      expect((await get(app, expired, 'application/json')).statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });

  it('rotates: an old-secret cookie works while the old secret is listed second, not once removed', async () => {
    const oldCookie = issueSession(ann, [OLD_SECRET], 3_600_000);
    const before = await mounted(oidcOptions({ sessionSecrets: [OLD_SECRET] }));
    const during = await mounted(oidcOptions({ sessionSecrets: [NEW_SECRET, OLD_SECRET] }));
    const after = await mounted(oidcOptions({ sessionSecrets: [NEW_SECRET] }));
    try {
      expect((await get(before, oldCookie)).statusCode).toBe(200);
      expect((await get(during, oldCookie)).statusCode).toBe(200);
      expect((await get(after, oldCookie, 'application/json')).statusCode).toBe(401);
      // During the rotation, new sessions are signed with the new (first) secret only.
      const fresh = issueSession(ann, [NEW_SECRET, OLD_SECRET], 3_600_000);
      expect((await get(after, fresh)).statusCode).toBe(200);
      expect((await get(before, fresh, 'application/json')).statusCode).toBe(401);
    } finally {
      await Promise.all([before.close(), during.close(), after.close()]);
    }
  });
});

describe('OIDC options are checked at registration', () => {
  const bad: [string, Partial<OidcOptions>, string][] = [
    ['a short secret', { sessionSecrets: ['short'] }, 'options.oidc.sessionSecrets[0]'],
    ['no secret', { sessionSecrets: [] }, 'options.oidc.sessionSecrets'],
    ['a plain-http remote issuer', { issuer: 'http://idp.example.com' }, 'options.oidc.issuer'],
    ['an issuer that is no URL', { issuer: 'idp' }, 'options.oidc.issuer'],
    ['no client secret', { clientSecret: '' }, 'options.oidc.clientSecret'],
    ['groups without a group claim', { groupClaim: null }, 'options.oidc.allowedGroups'],
    ['a scope without openid', { scope: 'email' }, 'options.oidc.scope'],
    ['a session shorter than a minute', { sessionMaxAge: '30s' }, 'options.oidc.sessionMaxAge'],
    ['a group list that is no list', { allowedGroups: 'admins' as never }, 'options.oidc.allowedGroups'],
    ['a blank group in payloadGroups', { payloadGroups: [' '] }, 'options.oidc.payloadGroups'],
    ['a redirect URI that is no URL', { redirectUri: 'callback' }, 'options.oidc.redirectUri'],
    ['a blank group claim', { groupClaim: ' ' }, 'options.oidc.groupClaim'],
    ['a max age that is no duration', { sessionMaxAge: 'forever' }, 'options.oidc.sessionMaxAge'],
  ];
  it.each(bad)('refuses %s, naming the field and never showing a secret', async (_, overrides, field) => {
    const app = Fastify();
    const err = await app
      .register(adminPlugin, { tq, oidc: oidcOptions(overrides), adminUrl, environment: 'production' })
      .ready()
      .then(
        () => null,
        (e: unknown) => e,
      );
    await app.close();
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe(field);
    expect((err as Error).message).not.toContain(idp.clientSecret);
    expect((err as Error).message).not.toContain('short');
  });

  it('needs a redirect URI when adminUrl is not set, and defaults it from adminUrl otherwise', async () => {
    const app = Fastify();
    const err = await app
      .register(adminPlugin, { tq, oidc: oidcOptions(), environment: 'production' })
      .ready()
      .then(
        () => null,
        (e: unknown) => e,
      );
    await app.close();
    expect((err as InvalidArgumentError).field).toBe('options.oidc.redirectUri');
    const ok = await mounted(oidcOptions());
    const login = await ok.inject({ method: 'GET', url: '/auth/login' });
    await ok.close();
    const target = new URL(login.headers.location as string);
    expect(target.searchParams.get('redirect_uri')).toBe(`${adminUrl}/auth/callback`);
  });

  it('refuses a bad adminUrl and an oidc option that is no object', async () => {
    for (const [options, field] of [
      [{ adminUrl: 'ops.example.com', oidc: oidcOptions() }, 'options.adminUrl'],
      [{ adminUrl, oidc: 'yes' as never }, 'options.oidc'],
    ] as const) {
      const app = Fastify();
      const err = await app
        .register(adminPlugin, { tq, environment: 'production', ...options })
        .ready()
        .then(
          () => null,
          (e: unknown) => e,
        );
      await app.close();
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe(field);
    }
  });

  it('keeps the issuer and redirect URI exactly as given, and joins adminUrl without a double slash', () => {
    const withSlash = resolveAdminOptions({
      tq,
      adminUrl: `${adminUrl}/`,
      oidc: oidcOptions({ issuer: 'https://tenant.example.com/' }),
    });
    expect(withSlash.sso).toMatchObject({
      issuer: 'https://tenant.example.com/',
      redirectUri: `${adminUrl}/auth/callback`,
    });
    const given = resolveAdminOptions({
      tq,
      oidc: oidcOptions({ redirectUri: 'https://ops.example.com/cb/' }),
    });
    expect(given.sso).toMatchObject({ redirectUri: 'https://ops.example.com/cb/' });
  });

  it('refuses oidc and saml together', async () => {
    const app = Fastify();
    const saml = {
      entityId: 'x',
      idpEntityId: 'y',
      idpSsoUrl: 'https://idp',
      idpCert: 'c',
      sessionSecrets: [NEW_SECRET],
    };
    const err = await app
      .register(adminPlugin, { tq, oidc: oidcOptions(), saml, adminUrl, environment: 'production' })
      .ready()
      .then(
        () => null,
        (e: unknown) => e,
      );
    await app.close();
    expect((err as InvalidArgumentError).field).toBe('options.saml');
  });
});
