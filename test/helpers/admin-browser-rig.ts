/**
 * What a browser test of the admin UI starts: a migrated schema, a client, the UI served on a free
 * port of 127.0.0.1 (plain HTTP, so cookies are not `Secure`), and chromium. `close()` stops them
 * in reverse order and tolerates a rig that never finished starting.
 */
import type { Browser } from 'playwright-core';

import { serveAdmin, type AdminServer, type ServeAdminOptions } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { launchBrowser } from './browser.js';
import { migratedSchema, type TestSchema } from './db.js';

/** A running rig. */
export interface AdminBrowserRig {
  db: TestSchema;
  tq: TaskQ;
  server: AdminServer;
  browser: Browser;
  close(): Promise<void>;
}

/**
 * Starts a rig on a schema named after `prefix`. `seed` runs before the UI starts (jobs, workers);
 * `options` are the UI's (token, actions, …).
 */
export async function startAdminBrowserRig(
  prefix: string,
  options: Omit<ServeAdminOptions, 'tq' | 'host' | 'port'>,
  seed?: (tq: TaskQ, db: TestSchema) => Promise<void>,
): Promise<AdminBrowserRig> {
  const db = await migratedSchema(prefix);
  const tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  let server: AdminServer | null = null;
  let browser: Browser | null = null;
  const close = async () => {
    await browser?.close();
    await server?.close();
    await tq.close();
    await db.drop();
  };
  try {
    if (seed) await seed(tq, db);
    server = await serveAdmin({ secureCookies: false, ...options, tq, host: '127.0.0.1', port: 0 });
    browser = await launchBrowser();
    return { db, tq, server, browser, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
