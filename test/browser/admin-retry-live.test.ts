/**
 * The 3 a.m. path in a real browser: sign in with the token, find the failed job through the
 * jobs list's filters, open it, retry it, and watch it succeed on the open page (SSE) without the
 * page navigating or reloading. A real worker runs the job. On the way, forged posts (no CSRF
 * token) are refused.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { serveAdmin, type AdminServer } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import type { Worker } from '../../src/worker/worker.js';
import { browserTestsUnavailable, launchBrowser, openPage, signInWithToken } from '../helpers/browser.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'browser-retry-token-51c2';
const unavailable = browserTestsUnavailable();

/** The first attempt fails; once healed, an attempt waits for the test's go before it succeeds. */
let healed = false;
let release: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (release = resolve));
const flaky = actor(
  { name: 'ui_flaky', queue: 'ui_live_q', retry: { maxAttempts: 1 } },
  async (payload: { order: number }) => {
    if (!healed) throw new Error(`order ${payload.order} could not be charged`);
    await gate;
    return { charged: payload.order };
  },
);
const calm = actor({ name: 'ui_calm', queue: 'ui_live_q' }, async () => 'ok');

let db: TestSchema;
let tq: TaskQ;
let server: AdminServer;
let worker: Worker;
let browser: Browser;
let failedId: string;

beforeAll(async () => {
  if (unavailable !== null) return;
  db = await migratedSchema('admin_browser_retry');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  worker = await startTestWorker([flaky, calm], db.schema, { queues: ['ui_live_q'] });
  // Noise the filters must see past: jobs of another actor that succeed.
  for (let i = 0; i < 5; i++) await tq.enqueue(calm, {});
  failedId = (await tq.enqueue(flaky, { order: 4711 })).jobId;
  await waitFor(async () => (await tq.getRow(failedId))?.status === 'failed', 15_000, 'the job to fail');
  server = await serveAdmin({
    tq,
    token: TOKEN,
    host: '127.0.0.1',
    port: 0,
    secureCookies: false,
    actionsEnabled: true,
    pollInterval: '200ms',
  });
  browser = await launchBrowser();
});

afterAll(async () => {
  release();
  await browser?.close();
  await server?.close();
  await worker?.stop();
  await tq?.close();
  await db?.drop();
});

describe.skipIf(unavailable !== null)('admin UI in chromium: find, retry and watch a failed job', () => {
  it('filters to the failed job, retries it and shows it succeed live', async () => {
    const { context, page, consoleErrors } = await openPage(browser, { baseURL: server.url });
    try {
      await signInWithToken(page, TOKEN);

      await page.getByRole('link', { name: 'Jobs', exact: true }).click();
      await page.getByLabel('Status').selectOption('failed');
      await page.getByLabel('Actor').fill('ui_flaky');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL((u) => u.searchParams.get('status') === 'failed');
      const rows = page.locator('tbody tr');
      expect(await rows.count()).toBe(1);
      await page.getByRole('link', { name: failedId }).click();
      await page.waitForURL((u) => u.pathname === `/jobs/${failedId}`);
      expect(await page.locator('#job-status').textContent()).toBe('failed');
      expect(await page.locator('main').textContent()).toContain('order 4711 could not be charged');

      // A forged request (the session cookie rides along, the CSRF token does not) is refused,
      // and so is the page's own form once its token is stripped; the job stays failed.
      const forged = await page.evaluate(async (url) => {
        const r = await fetch(url, {
          method: 'POST',
          credentials: 'same-origin',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'confirm=1',
        });
        return { status: r.status, text: await r.text() };
      }, `/jobs/${failedId}/retry`);
      expect(forged.status).toBe(403);
      expect(forged.text.toLowerCase()).toContain('csrf');
      await page.locator('input[name="_csrf"]').evaluateAll((fields) => {
        for (const field of fields) field.remove();
      });
      const stripped = page.waitForResponse((r) => r.url().endsWith('/retry'));
      await page.getByRole('button', { name: 'Retry' }).click();
      expect((await stripped).status()).toBe(403);
      expect((await tq.getRow(failedId))?.status).toBe('failed');
      await page.goto(`/jobs/${failedId}`);

      healed = true;
      await page.getByRole('button', { name: 'Retry' }).click();
      await page.waitForURL((u) => u.searchParams.get('done') === 'retried');
      // The retried attempt is running (held at the gate) while the page is open.
      await expect.poll(() => page.locator('#job-status').textContent(), { timeout: 15_000 }).toBe('running');

      // From here on the page must not navigate: the success arrives over the live stream.
      let navigations = 0;
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) navigations++;
      });
      release();
      await expect
        .poll(() => page.locator('#job-status').textContent(), { timeout: 15_000 })
        .toBe('succeeded');
      // The attempts table is swapped in place once the job settles: both attempts, no reload.
      await expect.poll(() => page.locator('h2:has-text("Attempts") + table tbody tr').count()).toBe(2);
      expect(navigations).toBe(0);
      expect((await tq.getRow(failedId))?.status).toBe('succeeded');
      // The two refused posts answered 403 (the browser reports that status); nothing else failed.
      expect(consoleErrors.filter((e) => !e.includes('status of 403'))).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
