/**
 * Cancel-by-filter in a real browser (Debian's chromium through playwright-core): a user signed in
 * with the token filters the jobs list, previews the count, confirms and sees the count cancelled;
 * and a `<time>` shows the browser's local time with the UTC value in its title.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AdminServer } from '../../src/admin/index.js';
import type { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { browserTestsUnavailable, openPage, signInWithToken } from '../helpers/browser.js';
import type { TestSchema } from '../helpers/db.js';
import { startAdminBrowserRig, type AdminBrowserRig } from '../helpers/admin-browser-rig.js';

const TOKEN = 'browser-cancel-token-91c2';
const work = actor({ name: 'bc_work', queue: 'bc_q' }, async () => undefined);
const unavailable = browserTestsUnavailable();

let db: TestSchema;
let tq: TaskQ;
let server: AdminServer;
let browser: Browser;
let rig: AdminBrowserRig | undefined;

beforeAll(async () => {
  if (unavailable !== null) return;
  rig = await startAdminBrowserRig('admin_browser_cancel', { token: TOKEN, actionsEnabled: true });
  ({ db, tq, server, browser } = rig);
});

afterAll(async () => {
  await rig?.close();
});

const signIn = (page: Page): Promise<void> => signInWithToken(page, TOKEN);

const countWhere = async (where: string): Promise<number> =>
  Number(
    (await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE ${where}`)).rows[0].n,
  );

describe.skipIf(unavailable !== null)(
  'admin UI in chromium: cancel and retry matching jobs, local times',
  () => {
    it('filters pending jobs, previews the count, confirms and sees the count cancelled', async () => {
      const pending = await Promise.all([1, 2, 3, 4].map((i) => tq.enqueue(work, { i })));
      const failed = await Promise.all([5, 6].map((i) => tq.enqueue(work, { i })));
      await db.pool.query(
        `UPDATE "${db.schema}".jobs SET status = 'failed', attempt = 1, finished_at = clock_timestamp()
       WHERE id = ANY($1::uuid[])`,
        [failed.map((f) => f.jobId)],
      );
      const { context, page, consoleErrors } = await openPage(browser, { baseURL: server.url });
      try {
        await signIn(page);
        await page.goto('/jobs');
        await page.getByLabel('Status').selectOption('pending');
        await page.getByLabel('Queue').fill('bc_q');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByRole('link', { name: 'Cancel matching…' }).click();
        await page.waitForURL((u) => u.pathname === '/jobs/cancel-preview');
        const count = page.locator('#cancel-count');
        await expect.poll(() => count.getAttribute('data-count')).toBe(String(pending.length));
        expect(await count.textContent()).toContain(`${pending.length} jobs`);
        await page.getByRole('button', { name: `Cancel ${pending.length} jobs` }).click();
        await page.waitForURL((u) => u.pathname === '/jobs' && u.searchParams.has('cancelled'));
        await expect
          .poll(() => page.getByRole('status').textContent())
          .toContain(`Cancelled ${pending.length} matching jobs at once`);
        expect(await countWhere(`status = 'cancelled'`)).toBe(pending.length);
        expect(await countWhere(`status = 'failed'`)).toBe(failed.length);
        expect(consoleErrors).toEqual([]);
      } finally {
        await context.close();
      }
    });

    it('filters failed jobs, previews the count, confirms and sees them pending again', async () => {
      await db.pool.query(`TRUNCATE "${db.schema}".jobs`);
      const failed = await Promise.all([8, 9, 10].map((i) => tq.enqueue(work, { i })));
      const waiting = await tq.enqueue(work, { i: 11 });
      await db.pool.query(
        `UPDATE "${db.schema}".jobs SET status = 'failed', attempt = 3, finished_at = clock_timestamp(),
         error_class = 'Outage' WHERE id = ANY($1::uuid[])`,
        [failed.map((f) => f.jobId)],
      );
      const { context, page, consoleErrors } = await openPage(browser, { baseURL: server.url });
      try {
        await signIn(page);
        await page.goto('/jobs');
        await page.getByLabel('Status').selectOption('failed');
        await page.getByLabel('Queue').fill('bc_q');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByRole('link', { name: 'Retry matching…' }).click();
        await page.waitForURL((u) => u.pathname === '/jobs/retry-preview');
        const count = page.locator('#retry-count');
        await expect.poll(() => count.getAttribute('data-count')).toBe(String(failed.length));
        await page.getByRole('button', { name: `Retry ${failed.length} jobs` }).click();
        await page.waitForURL((u) => u.pathname === '/jobs' && u.searchParams.has('retried'));
        await expect
          .poll(() => page.getByRole('status').textContent())
          .toContain(`Retried ${failed.length} matching jobs`);
        expect(await countWhere(`status = 'failed'`)).toBe(0);
        expect(await countWhere(`status = 'pending' AND attempt = 0`)).toBe(failed.length + 1);
        expect((await tq.getRow(waiting.jobId))?.status).toBe('pending');
        expect(consoleErrors).toEqual([]);
      } finally {
        await context.close();
      }
    });

    it("shows a <time> in the browser's zone, with the UTC value in its title", async () => {
      const job = await tq.enqueue(work, { i: 7 });
      const row = await tq.getRow(job.jobId);
      const created = row!.createdAt;
      const { context, page } = await openPage(browser, { baseURL: server.url, timezoneId: 'Asia/Kolkata' });
      try {
        await signIn(page);
        await page.goto(`/jobs/${job.jobId}`);
        const el = page.locator(`time[datetime="${created.toISOString()}"]`).first();
        // Kolkata is UTC+05:30 all year (no DST), so the expected text is fixed arithmetic.
        const local = new Date(created.getTime() + 5.5 * 3_600_000)
          .toISOString()
          .slice(0, 19)
          .replace('T', ' ');
        await expect.poll(() => el.textContent()).toBe(`${local} +05:30`);
        expect(await el.getAttribute('title')).toBe(
          `${created.toISOString().slice(0, 19).replace('T', ' ')} UTC`,
        );
      } finally {
        await context.close();
      }
    });
  },
);
