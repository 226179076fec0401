// Screenshots of every admin UI page for docs/ui.md: `npx tsx scripts/ui-screenshots.ts`.
// It fills a scratch schema (TASKQ_PG_DSN, default the local `test` database; schema
// taskq_ui_shots, dropped first) with a small, realistic fleet — jobs of several actors in every
// status, a failure with its traceback, a batch, schedules, rate limits, a worker that heartbeats —
// serves the UI on a free port with the token and actions on, and drives Debian's chromium
// (playwright-core) through each page, writing docs/ui/<page>.png.
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';

import { chromium } from 'playwright-core';

import { serveAdmin } from '../src/admin/index.js';
import { AbortBatchAfter, actor, batchItem, Migrator, PgDriver, TaskQ } from '../src/index.js';
import { ConcurrencyReservation, TokenBucket } from '../src/ratelimit/index.js';
import { silentLogger } from '../src/obs/logger.js';
import { Worker } from '../src/worker/index.js';

const dsn = process.env.TASKQ_PG_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = 'taskq_ui_shots';
const out = resolve('docs/ui');
const TOKEN = 'screenshot-token';
const browserPath = process.env.TASKQ_TEST_CHROMIUM ?? '/usr/bin/chromium';

const driver = new PgDriver({ connection: dsn });
await driver.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await new Migrator(driver, { schema }).up();
const tq = await TaskQ.open({ driver, schema });

let paymentsUp = false;
const emails = new TokenBucket('smtp-relay', { capacity: 20, refillPerSecond: 5, backend: 'postgres' });
const gpu = new ConcurrencyReservation('gpu-slots', { slots: 2, lease: '5m' });
const sendEmail = actor(
  { name: 'send_email', queue: 'emails', rateLimits: [emails] },
  async (p: { to: string }) => ({ delivered: p.to }),
);
const resizeImage = actor(
  { name: 'resize_image', queue: 'media', reservations: [gpu] },
  async (p: { file: string }) => {
    if (p.file.startsWith('corrupt')) throw new Error(`${p.file} is not an image`);
    return { file: p.file, width: 800 };
  },
);
const chargeCard = actor(
  { name: 'charge_card', queue: 'payments', retry: { maxAttempts: 2, base: 0.05, jitter: 0 } },
  async (p: { order: number; cents: number }) => {
    if (!paymentsUp) throw new Error(`payment gateway timed out charging order ${p.order}`);
    return { charged: p.cents };
  },
);
const nightlyReport = actor({ name: 'nightly_report', queue: 'reports' }, async () => 'report sent');

const workerOn = (queues: string[]) =>
  new Worker({
    actors: [sendEmail, resizeImage, chargeCard, nightlyReport],
    settings: {
      pgDsn: dsn,
      schema,
      queues,
      maxConcurrency: 4,
      healthEnabled: false,
      watchdogEnabled: false,
      heartbeatInterval: '1s',
    },
    logger: silentLogger,
  });
const worker = workerOn(['emails', 'media', 'payments', 'reports']);
await worker.start();

// Work that runs now: emails, images (two corrupt ones fail), charges that fail for good.
const emailJobs = await Promise.all(
  Array.from({ length: 12 }, (_, i) =>
    tq.enqueue(sendEmail, { to: `user${i}@example.com` }, { tags: ['welcome'] }),
  ),
);
const album = await tq.enqueueBatch(
  ['a.jpg', 'b.jpg', 'corrupt-c.jpg', 'd.jpg', 'corrupt-e.jpg', 'f.jpg'].map((file) =>
    batchItem(resizeImage, { file }),
  ),
  { failurePolicy: new AbortBatchAfter(3) },
);
const charges = await Promise.all(
  [1041, 1042].map((order) =>
    tq.enqueue(chargeCard, { order, cents: 4999 }, { idempotencyKey: `order-${order}` }),
  ),
);
await Promise.all([...emailJobs, ...charges].map((h) => tq.waitForTerminal(h.jobId, 30_000)));
while ((await tq.getBatch(album.batchId))?.status === 'active') await new Promise((r) => setTimeout(r, 100));
paymentsUp = true;

// Schedules, and work waiting: a charge in an hour, emails a paused worker has not reached.
await tq.createSchedule(nightlyReport, '0 2 * * *', { name: 'nightly', timezone: 'Europe/Berlin' });
await tq.createSchedule(sendEmail, '*/15 * * * *', { name: 'digest', payload: { to: 'team@example.com' } });
await tq.enqueue(chargeCard, { order: 1043, cents: 1299 }, { delay: '1h' });
await worker.stop();
// A worker that stays up (the leader, serving reports and payments) while the pages are taken;
// the emails and media queues are left without one, to show the banners.
const standing = workerOn(['reports', 'payments']);
await standing.start();
const waiting = await tq.enqueue(sendEmail, { to: 'late@example.com' });
for (let i = 0; i < 4; i++) await tq.enqueue(resizeImage, { file: `queued-${i}.jpg` });
const failed = charges[0];

const server = await serveAdmin({
  tq,
  token: TOKEN,
  host: '127.0.0.1',
  port: 0,
  secureCookies: false,
  actionsEnabled: true,
  allowRateLimitReset: true,
  actors: [sendEmail, resizeImage, chargeCard, nightlyReport],
  environment: 'staging',
});
const browser = await chromium.launch({
  executablePath: browserPath,
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
const context = await browser.newContext({
  baseURL: server.url,
  viewport: { width: 1280, height: 800 },
  timezoneId: 'Europe/Berlin',
  colorScheme: 'light',
});
const page = await context.newPage();
await mkdir(out, { recursive: true });

async function shot(name: string, path: string): Promise<void> {
  const response = await page.goto(path);
  if (!response || response.status() >= 400) throw new Error(`${path} answered ${response?.status()}`);
  await page.screenshot({ path: `${out}/${name}.png`, fullPage: true });
  console.log(`docs/ui/${name}.png  ${path}`);
}

await page.goto('/login');
await page.screenshot({ path: `${out}/login.png` });
console.log('docs/ui/login.png  /login');
await page.getByLabel('Admin token').fill(TOKEN);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.waitForURL((u) => u.pathname === '/');

const schedules = await tq.listSchedules();
await shot('overview', '/');
await shot('jobs', '/jobs?status=failed');
await shot('job', `/jobs/${failed?.jobId}`);
await shot('job-waiting', `/jobs/${waiting.jobId}`);
await shot('cancel-preview', '/jobs/cancel-preview?queue=media&status=pending');
await shot('actors', '/actors');
await shot('queues', '/queues');
await shot('rate-limits', '/rate-limits');
await shot('batches', '/batches');
await shot('batch', `/batches/${album.batchId}`);
await shot('schedules', '/schedules');
await shot('schedule', `/schedules/${schedules[0]?.id}`);

await browser.close();
await standing.stop();
await server.close();
await driver.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await tq.close(); // closes the driver too (TaskQ.open with a driver owns it)
