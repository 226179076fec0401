/**
 * The queues page in a real browser (Debian's chromium through playwright-core): a user signed in
 * with the token changes a queue's fleet-wide cap through the page's form and sees it on the page
 * (and in the database).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AdminServer } from '../../src/admin/index.js';
import { actor } from '../../src/core/actor.js';
import { browserTestsUnavailable, openPage, signInWithToken } from '../helpers/browser.js';
import type { TestSchema } from '../helpers/db.js';
import { startAdminBrowserRig, type AdminBrowserRig } from '../helpers/admin-browser-rig.js';

const TOKEN = 'browser-queues-token-41c9';
const unavailable = browserTestsUnavailable();

const mail = actor({ name: 'bq_send', queue: 'bq_mail' }, async () => undefined);

let db: TestSchema;
let server: AdminServer;
let browser: Browser;
let rig: AdminBrowserRig | undefined;

beforeAll(async () => {
  if (unavailable !== null) return;
  rig = await startAdminBrowserRig(
    'admin_browser_queues',
    { token: TOKEN, actionsEnabled: true },
    async (t) => {
      await t.enqueue(mail, {});
    },
  );
  ({ db, server, browser } = rig);
});

afterAll(async () => {
  await rig?.close();
});

describe.skipIf(unavailable !== null)('admin UI in chromium: queues page', () => {
  it("a signed-in user sets a queue's cap through the form and sees it on the page", async () => {
    const { context, page, consoleErrors } = await openPage(browser, { baseURL: server.url });
    try {
      await page.goto('/queues');
      expect(new URL(page.url()).pathname).toBe('/login');
      await signInWithToken(page, TOKEN);

      await page.goto('/queues');
      const row = page.locator('tr[data-queue="bq_mail"]');
      expect((await row.locator('td.cap').textContent())?.trim()).toBe('none');
      await page.getByLabel('Max concurrent of bq_mail').fill('7');
      await row.getByRole('button', { name: 'Set cap' }).click();
      await page.waitForURL((u) => u.pathname === '/queues' && u.search === '?done=cap');

      await expect.poll(() => page.getByRole('status').textContent()).toContain('Queue cap changed');
      expect((await row.locator('td.cap').textContent())?.trim()).toBe('7');
      expect(await page.getByLabel('Max concurrent of bq_mail').inputValue()).toBe('7');
      const { rows } = await db.pool.query(
        `SELECT max_concurrent FROM "${db.schema}".queues WHERE name = $1`,
        ['bq_mail'],
      );
      expect(rows).toEqual([{ max_concurrent: 7 }]);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
