/**
 * A real browser for the admin UI's tests: Debian's `chromium` (installed by `.ci/run`), driven by
 * `playwright-core` (which never downloads a browser). Headless, one context per test, so cookies
 * never leak between tests.
 */
import { existsSync } from 'node:fs';

import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Where Debian puts the browser; `TASKQ_TEST_CHROMIUM` overrides it. */
const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The browser binary, or null when none is installed (CI installs one: see `.ci/run`). */
export function chromiumPath(): string | null {
  const configured = process.env.TASKQ_TEST_CHROMIUM;
  if (configured) return configured;
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/**
 * Why browser tests cannot run here, or null when they can. In CI a missing browser is a failure
 * (the caller throws), never a silent skip.
 */
export function browserUnavailableReason(): string | null {
  return chromiumPath() === null
    ? `no chromium at ${CANDIDATES.join(' or ')} (apt-get install chromium, or set TASKQ_TEST_CHROMIUM)`
    : null;
}

/**
 * For a browser test file's top level: the reason browser tests cannot run here (they are then
 * skipped, with a printed warning), or null. In CI a missing browser throws instead: `.ci/run`
 * installs chromium, so its absence there is a failure, never a silent skip.
 */
export function browserTestsUnavailable(): string | null {
  const reason = browserUnavailableReason();
  if (reason !== null && process.env.CI) throw new Error(`browser tests need chromium in CI: ${reason}`);
  if (reason !== null) console.warn(`skipping browser tests: ${reason}`);
  return reason;
}

/** Signs `page` in through the UI's token form (from any page: it starts at `/login`). */
export async function signInWithToken(page: Page, token: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname !== '/login');
}

/** Launches headless chromium. */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === null) throw new Error(browserUnavailableReason() ?? 'no chromium');
  return chromium.launch({
    executablePath,
    headless: true,
    // Containers run as root without a user namespace sandbox; /dev/shm may be small.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** A fresh context (own cookies) and page; the page's console errors are collected for asserts. */
export async function openPage(
  browser: Browser,
  options: { baseURL?: string; timezoneId?: string } = {},
): Promise<{ context: BrowserContext; page: Page; consoleErrors: string[] }> {
  const context = await browser.newContext({
    baseURL: options.baseURL,
    timezoneId: options.timezoneId ?? 'Europe/Berlin',
    viewport: { width: 1280, height: 900 },
  });
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  return { context, page, consoleErrors };
}
