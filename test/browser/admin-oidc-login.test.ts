/**
 * OIDC sign-in in a real browser (Debian's chromium through playwright-core): the admin UI sends
 * the visitor to a real `oidc-provider`, whose development pages sign them in, and the browser
 * comes back to the overview showing the user, holding an HttpOnly SameSite=Lax session cookie.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { serveAdmin, type AdminServer } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { browserTestsUnavailable, launchBrowser, openPage } from '../helpers/browser.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { freePort } from '../helpers/free-port.js';
import { startOidcIdp, type TestOidcIdp } from '../helpers/oidc-idp.js';

const unavailable = browserTestsUnavailable();

let db: TestSchema;
let tq: TaskQ;
let idp: TestOidcIdp;
let server: AdminServer;
let browser: Browser;

beforeAll(async () => {
  if (unavailable !== null) return;
  db = await migratedSchema('admin_browser_oidc');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  const port = await freePort();
  const adminUrl = `http://127.0.0.1:${port}`;
  idp = await startOidcIdp([`${adminUrl}/auth/callback`], { ann: ['taskq-admins'] });
  server = await serveAdmin({
    tq,
    host: '127.0.0.1',
    port,
    adminUrl,
    environment: 'production',
    secureCookies: false,
    oidc: {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecret: idp.clientSecret,
      scope: 'openid email groups',
      groupClaim: 'groups',
      allowedGroups: ['taskq-admins'],
      sessionSecrets: ['browser-session-secret-0123456789abcdef'],
    },
  });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await idp?.close();
  await tq?.close();
  await db?.drop();
});

describe.skipIf(unavailable !== null)('admin UI in chromium: OIDC sign-in', () => {
  it("signs in through the IdP's pages and lands on the overview showing the user", async () => {
    const { context, page } = await openPage(browser, { baseURL: server.url });
    try {
      await page.goto('/');
      // The IdP's development login page (any login and password).
      await page.waitForURL((u) => u.href.startsWith(idp.issuer));
      await page.locator('input[name="login"]').fill('ann');
      await page.locator('input[name="password"]').fill('whatever');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      // Its consent page, then back to the admin UI.
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.waitForURL((u) => u.href === `${server.url}/`);
      expect(await page.locator('header').textContent()).toContain('ann@example.test');
      expect(await page.getByRole('heading', { level: 1 }).first().textContent()).toBeTruthy();
      const cookie = (await context.cookies()).find((c) => c.name === 'taskq_admin_sso');
      expect(cookie?.httpOnly).toBe(true);
      expect(cookie?.sameSite).toBe('Lax');

      // Signing out ends the session: the next visit goes back to the IdP.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Signed out');
      expect((await context.cookies()).find((c) => c.name === 'taskq_admin_sso')).toBeUndefined();
    } finally {
      await context.close();
    }
  });
});
