/**
 * The admin UI in a real browser (Debian's chromium through playwright-core): signing in with the
 * token, and the framing headers a browser enforces.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AdminServer } from '../../src/admin/index.js';
import { browserTestsUnavailable, openPage } from '../helpers/browser.js';
import { startAdminBrowserRig, type AdminBrowserRig } from '../helpers/admin-browser-rig.js';

const TOKEN = 'browser-test-token-7f3a';
const unavailable = browserTestsUnavailable();

let server: AdminServer;
let browser: Browser;
let rig: AdminBrowserRig | undefined;

beforeAll(async () => {
  if (unavailable !== null) return;
  rig = await startAdminBrowserRig('admin_browser_login', { token: TOKEN });
  ({ server, browser } = rig);
});

afterAll(async () => {
  await rig?.close();
});

describe.skipIf(unavailable !== null)('admin UI in chromium: token sign-in', () => {
  it('sends a visitor to the sign-in page, refuses a wrong token and signs in with the right one', async () => {
    const { context, page, consoleErrors } = await openPage(browser, { baseURL: server.url });
    try {
      await page.goto('/');
      expect(new URL(page.url()).pathname).toBe('/login');
      await page.getByLabel('Admin token').fill('not-the-token');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('not valid');
      await page.getByLabel('Admin token').fill(TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/');
      expect(await page.getByRole('heading', { level: 1 }).first().textContent()).toBeTruthy();
      const cookie = (await context.cookies()).find((c) => c.name === 'taskq_admin_session');
      expect(cookie?.httpOnly).toBe(true);
      expect(cookie?.value).not.toContain(TOKEN);
      // The refused sign-in answers 401 (the browser reports that status); nothing else failed.
      expect(consoleErrors.filter((e) => !e.includes('status of 401'))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('answers every page with frame-ancestors none and X-Frame-Options DENY', async () => {
    const { context, page } = await openPage(browser, { baseURL: server.url });
    try {
      const response = await page.goto('/login');
      const headers = response?.headers() ?? {};
      expect(headers['x-frame-options']).toBe('DENY');
      expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    } finally {
      await context.close();
    }
  });
});
