/**
 * The schedules pages and their actions, cancel-by-filter on the jobs list, the archived job page
 * and the `<time>` markup, over HTTP (`app.inject`, real Postgres). Every outcome is checked in
 * the database, not on the page alone.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { adminPlugin, type AdminOptions } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { nextScheduleSlot } from '../../src/cron/schedule-slot.js';
import type { Logger } from '../../src/obs/logger.js';
import { silentLogger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { MaintenanceLeader } from '../../src/worker/maintenance/maintenance-leader.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const tick = actor({ name: 'sp_tick', queue: 'sp_q' }, async () => undefined);
const work = actor({ name: 'sp_work', queue: 'sp_work_q' }, async () => undefined);

let db: TestSchema;
let s: string;
let backend: PostgresBackend;
let tq: TaskQ;
let leader: MaintenanceLeader;
let app: FastifyInstance;
const records: { msg?: string; obj: Record<string, unknown> }[] = [];

const logger: Logger = {
  debug: () => undefined,
  info: (obj: object, msg?: string) => void records.push({ msg, obj: obj as Record<string, unknown> }),
  warn: () => undefined,
  error: () => undefined,
  child: () => logger,
};

/** ops may act; viewer may not; reader may act but not read payloads. */
const auth: AdminOptions['auth'] = async (req) => {
  const who = req.headers['x-user'];
  if (who === 'ops') return { user: 'ops' };
  if (who === 'viewer') return { user: 'viewer', actions: false };
  if (who === 'blind') return { user: 'blind', readPayloads: false };
  return null;
};

async function mount(options: Partial<AdminOptions> = {}): Promise<FastifyInstance> {
  const a = Fastify();
  await a.register(adminPlugin, { prefix: '/admin', tq, auth, actionsEnabled: true, logger, ...options });
  await a.ready();
  return a;
}

const q = async <T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> =>
  (await db.pool.query(sql.replaceAll('$S', s), values)).rows as T[];

/** The CSRF cookie and token a browser holds after loading `path` as `user`. */
async function csrf(a: FastifyInstance, path: string, user = 'ops') {
  const page = await a.inject({ url: path, headers: { 'x-user': user } });
  expect(page.statusCode).toBe(200);
  const token = /<meta name="csrf-token" content="([^"]+)"/.exec(page.body)?.[1] as string;
  const cookie = page.cookies.find((c) => c.name === 'taskq_admin_csrf');
  expect(token).toBeDefined();
  return { token, cookie: `taskq_admin_csrf=${cookie?.value}`, page };
}

/** POSTs a form as `user` with the CSRF token of `from`. */
async function post(
  a: FastifyInstance,
  url: string,
  from: string,
  fields: Record<string, string> = {},
  user = 'ops',
) {
  const { token, cookie } = await csrf(a, from, user === 'viewer' ? 'ops' : user);
  return a.inject({
    method: 'POST',
    url,
    headers: { 'x-user': user, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: token, ...fields }).toString(),
  });
}

const jobCount = async (where = 'true', values: unknown[] = []): Promise<number> =>
  Number((await q<{ n: number }>(`SELECT count(*)::int AS n FROM $S.jobs WHERE ${where}`, values))[0]!.n);

const scheduleRow = async (id: string) =>
  (
    await q<{ enabled: boolean; next_fire_at: Date }>(
      `SELECT enabled, next_fire_at FROM $S.cron_schedules WHERE id = $1`,
      [id],
    )
  )[0]!;

beforeAll(async () => {
  db = await migratedSchema('admin_sched');
  s = `"${db.schema}"`;
  backend = new PostgresBackend(db.driver, { schema: db.schema });
  tq = new TaskQ(backend, { capacityCacheTtl: 0 });
  const { settings } = loadWorkerSettings({ overrides: { schema: db.schema } });
  leader = new MaintenanceLeader(
    backend,
    settings,
    { workerId: '018f0000-0000-7000-8000-0000000000e1', hostname: 'admin-sched-test' },
    silentLogger,
    (reason) => {
      throw new Error(`fatal: ${reason}`);
    },
    { actors: new Map([[tick.name, tick]]), factories: new Map() },
  );
  expect(await leader.elector.runOnce()).toBe(true);
  app = await mount();
});
afterAll(async () => {
  await app.close();
  await leader.elector.stop();
  await tq.close();
  await db.drop();
});
beforeEach(async () => {
  records.length = 0;
  await q(`TRUNCATE $S.cron_schedules, $S.cron_fires, $S.jobs, $S.jobs_archive CASCADE`);
});

describe('schedules pages', () => {
  it('lists schedules and shows one: expression, zone, DST strategy, state, next fire times, payload by permission', async () => {
    const h = await tq.createSchedule(tick, '30 2 * * *', {
      name: 'nightly',
      timezone: 'Europe/Berlin',
      dstStrategy: 'allof',
      payload: { secret: 'card-4242', html: '<b>x</b>' },
    });
    const list = await app.inject({ url: '/admin/schedules', headers: { 'x-user': 'ops' } });
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(`/admin/schedules/${h.id}`);
    expect(list.body).toContain('30 2 * * *');
    expect(list.body).toContain('Europe/Berlin');
    const off = await app.inject({ url: '/admin/schedules?enabled=no', headers: { 'x-user': 'ops' } });
    expect(off.body).not.toContain(`/admin/schedules/${h.id}`);
    const bad = await app.inject({ url: '/admin/schedules?enabled=maybe', headers: { 'x-user': 'ops' } });
    expect(bad.statusCode).toBe(400);

    const page = await app.inject({ url: `/admin/schedules/${h.id}`, headers: { 'x-user': 'ops' } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('allof');
    expect(page.body).toContain('card-4242');
    expect(page.body).toContain('&lt;b&gt;x&lt;/b&gt;');
    const next = h.nextFireTimes(10);
    for (const t of next) expect(page.body).toContain(`datetime="${t.toISOString()}"`);
    for (const action of ['run-now', 'disable', 'skip']) expect(page.body).toContain(`/${h.id}/${action}"`);
    const blind = await app.inject({ url: `/admin/schedules/${h.id}`, headers: { 'x-user': 'blind' } });
    expect(blind.body).not.toContain('card-4242');
    expect(blind.body).toMatch(/payload is hidden/);
    const viewer = await app.inject({ url: `/admin/schedules/${h.id}`, headers: { 'x-user': 'viewer' } });
    expect(viewer.body).not.toContain('/run-now"');

    const missing = await app.inject({
      url: '/admin/schedules/018f0000-0000-7000-8000-000000000000',
      headers: { 'x-user': 'ops' },
    });
    expect(missing.statusCode).toBe(404);
    expect(
      (await app.inject({ url: '/admin/schedules/nope', headers: { 'x-user': 'ops' } })).statusCode,
    ).toBe(400);
  });

  it('run now enqueues exactly one job (once the leader ticks) and lists the fire', async () => {
    const h = await tq.createSchedule(tick, '0 0 1 1 *');
    const res = await post(app, `/admin/schedules/${h.id}/run-now`, `/admin/schedules/${h.id}`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/admin/schedules/${h.id}?done=ran-now`);
    expect(await jobCount()).toBe(0);
    expect((await leader.cron.runOnce()).fired).toBe(1);
    expect(await jobCount('actor = $1', [tick.name])).toBe(1);
    expect((await leader.cron.runOnce()).fired).toBe(0);
    expect(await jobCount()).toBe(1);
    const [job] = await q<{ id: string }>(`SELECT id FROM $S.jobs`);
    const page = await app.inject({
      url: `/admin/schedules/${h.id}?done=ran-now`,
      headers: { 'x-user': 'ops' },
    });
    expect(page.body).toContain(`/admin/jobs/${job!.id}`);
    expect(page.body).toContain('Due now');
    expect(records.find((r) => r.msg === 'admin-action')?.obj).toMatchObject({
      user: 'ops',
      action: 'schedule-run-now',
      scheduleId: h.id,
    });
  });

  it('disable and enable change the stored schedule', async () => {
    const h = await tq.createSchedule(tick, '*/5 * * * *');
    const off = await post(app, `/admin/schedules/${h.id}/disable`, `/admin/schedules/${h.id}`);
    expect(off.headers.location).toBe(`/admin/schedules/${h.id}?done=disabled`);
    expect((await scheduleRow(h.id)).enabled).toBe(false);
    const on = await post(app, `/admin/schedules/${h.id}/enable`, `/admin/schedules/${h.id}`);
    expect(on.headers.location).toBe(`/admin/schedules/${h.id}?done=enabled`);
    expect((await scheduleRow(h.id)).enabled).toBe(true);
    expect(records.filter((r) => r.msg === 'admin-action').map((r) => [r.obj.user, r.obj.action])).toEqual([
      ['ops', 'schedule-disable'],
      ['ops', 'schedule-enable'],
    ]);
  });

  it('skip advances next_fire_at by exactly one slot and enqueues nothing; a repeat with the same slot skips nothing', async () => {
    const h = await tq.createSchedule(tick, '*/5 * * * *', { timezone: 'America/New_York' });
    const slot = (await scheduleRow(h.id)).next_fire_at;
    const expected = nextScheduleSlot(slot, h.record)!;
    const form = { slot: slot.toISOString() };
    const res = await post(app, `/admin/schedules/${h.id}/skip`, `/admin/schedules/${h.id}`, form);
    expect(res.headers.location).toBe(`/admin/schedules/${h.id}?done=skipped`);
    expect((await scheduleRow(h.id)).next_fire_at).toEqual(expected);
    expect(expected.getTime() - slot.getTime()).toBe(5 * 60_000);
    const again = await post(app, `/admin/schedules/${h.id}/skip`, `/admin/schedules/${h.id}`, form);
    expect(again.headers.location).toBe(`/admin/schedules/${h.id}?done=not-skipped`);
    expect((await scheduleRow(h.id)).next_fire_at).toEqual(expected);
    expect((await leader.cron.runOnce()).fired).toBe(0);
    expect(await jobCount()).toBe(0);
    expect(await q(`SELECT 1 FROM $S.cron_fires`)).toEqual([]);
    expect(records.find((r) => r.msg === 'admin-action')?.obj).toMatchObject({
      user: 'ops',
      action: 'schedule-skip',
      skipped: slot.toISOString(),
      nextFireAt: expected.toISOString(),
    });
    const bad = await post(app, `/admin/schedules/${h.id}/skip`, `/admin/schedules/${h.id}`, {
      slot: 'soon',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('slot');
    expect((await scheduleRow(h.id)).next_fire_at).toEqual(expected);
  });

  it('refuses actions without the CSRF token, for a user without actions, and with actions disabled', async () => {
    const h = await tq.createSchedule(tick, '*/5 * * * *');
    const before = await scheduleRow(h.id);
    const noCsrf = await app.inject({
      method: 'POST',
      url: `/admin/schedules/${h.id}/disable`,
      headers: { 'x-user': 'ops', 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    expect(noCsrf.statusCode).toBe(403);
    expect(
      (await post(app, `/admin/schedules/${h.id}/disable`, `/admin/schedules/${h.id}`, {}, 'viewer'))
        .statusCode,
    ).toBe(403);
    const readOnly = await mount({ actionsEnabled: false });
    try {
      const page = await readOnly.inject({ url: `/admin/schedules/${h.id}`, headers: { 'x-user': 'ops' } });
      expect(page.body).not.toContain('/run-now"');
      for (const action of ['run-now', 'disable', 'skip']) {
        const r = await post(readOnly, `/admin/schedules/${h.id}/${action}`, `/admin/schedules/${h.id}`, {
          slot: before.next_fire_at.toISOString(),
        });
        expect(r.statusCode).toBe(403);
      }
    } finally {
      await readOnly.close();
    }
    expect(await scheduleRow(h.id)).toEqual(before);
    expect((await leader.cron.runOnce()).fired).toBe(0);
    expect(await jobCount()).toBe(0);
    expect(records.filter((r) => r.msg === 'admin-action')).toEqual([]);
  });
});

describe('cancel by filter', () => {
  it('previews a count that equals the number cancelled, counted in the database', async () => {
    for (let i = 0; i < 4; i++) await tq.enqueue(work, { i });
    for (let i = 0; i < 2; i++) await tq.enqueue(work, { i }, { delay: '1h' });
    const other = await tq.enqueue(tick, { i: 9 });
    const list = await app.inject({ url: '/admin/jobs?queue=sp_work_q', headers: { 'x-user': 'ops' } });
    expect(list.body).toContain('/admin/jobs/cancel-preview?queue=sp_work_q');
    const preview = await app.inject({
      url: '/admin/jobs/cancel-preview?queue=sp_work_q',
      headers: { 'x-user': 'ops' },
    });
    expect(preview.statusCode).toBe(200);
    const shown = Number(/id="cancel-count" data-count="(\d+)"/.exec(preview.body)?.[1]);
    const active = `queue = 'sp_work_q' AND status IN ('pending', 'scheduled', 'running')`;
    expect(shown).toBe(await jobCount(active));
    expect(shown).toBe(6);
    expect(preview.body).toContain('name="expected" value="6"');

    const res = await post(app, '/admin/jobs/cancel-where', '/admin/jobs/cancel-preview?queue=sp_work_q', {
      queue: 'sp_work_q',
      expected: String(shown),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/admin/jobs?queue=sp_work_q&cancelled=6&requested=0');
    expect(await jobCount(`queue = 'sp_work_q' AND status = 'cancelled'`)).toBe(shown);
    expect(await jobCount(active)).toBe(0);
    expect(await jobCount(`id = $1 AND status = 'pending'`, [other.jobId])).toBe(1);
    const done = await app.inject({ url: res.headers.location as string, headers: { 'x-user': 'ops' } });
    expect(done.body).toContain('Cancelled 6 matching jobs at once');
    const log = records.find((r) => r.msg === 'admin-action')?.obj;
    expect(log).toMatchObject({
      user: 'ops',
      action: 'cancel-where',
      filter: { queue: 'sp_work_q' },
      previewed: 6,
      cancelled: 6,
      totalAffected: 6,
    });
    expect(JSON.stringify(log)).not.toContain('"i"');
  });

  it('asks again, cancelling nothing, when more jobs match than were confirmed', async () => {
    for (let i = 0; i < 3; i++) await tq.enqueue(work, { i });
    const res = await post(app, '/admin/jobs/cancel-where', '/admin/jobs', {
      actor: work.name,
      expected: '2',
    });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('3 jobs match now, more than the 2 you confirmed');
    expect(res.body).toContain('name="expected" value="3"');
    expect(await jobCount(`status = 'cancelled'`)).toBe(0);
  });

  it('refuses an empty filter with a clear message and cancels nothing', async () => {
    for (let i = 0; i < 3; i++) await tq.enqueue(work, { i });
    const list = await app.inject({ url: '/admin/jobs', headers: { 'x-user': 'ops' } });
    expect(list.body).not.toContain('cancel-preview');
    const preview = await app.inject({ url: '/admin/jobs/cancel-preview', headers: { 'x-user': 'ops' } });
    expect(preview.statusCode).toBe(400);
    expect(preview.body).toContain('Choose at least one filter');
    expect(preview.body).not.toContain('cancel-where');
    const forms: Record<string, string>[] = [
      { expected: '3' },
      { expected: '3', queue: '  ', order: 'created_at_desc' },
    ];
    for (const fields of forms) {
      const res = await post(app, '/admin/jobs/cancel-where', '/admin/jobs', fields);
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain('Choose at least one filter');
    }
    expect(await jobCount(`status = 'cancelled'`)).toBe(0);
    expect(records.filter((r) => r.msg === 'admin-action')).toEqual([]);
  });

  it('refuses a bad filter value or count, without CSRF, and without actions; nothing is cancelled', async () => {
    await tq.enqueue(work, { i: 1 });
    const bad = await app.inject({
      url: '/admin/jobs/cancel-preview?status=sleeping',
      headers: { 'x-user': 'ops' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('status');
    const badCount = await post(app, '/admin/jobs/cancel-where', '/admin/jobs', {
      queue: 'sp_work_q',
      expected: 'all',
    });
    expect(badCount.statusCode).toBe(400);
    const noCsrf = await app.inject({
      method: 'POST',
      url: '/admin/jobs/cancel-where',
      headers: { 'x-user': 'ops', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'queue=sp_work_q&expected=1',
    });
    expect(noCsrf.statusCode).toBe(403);
    const viewer = await post(
      app,
      '/admin/jobs/cancel-where',
      '/admin/jobs',
      { queue: 'sp_work_q', expected: '1' },
      'viewer',
    );
    expect(viewer.statusCode).toBe(403);
    const viewerPreview = await app.inject({
      url: '/admin/jobs/cancel-preview?queue=sp_work_q',
      headers: { 'x-user': 'viewer' },
    });
    expect(viewerPreview.statusCode).toBe(403);
    expect(await jobCount(`status = 'cancelled'`)).toBe(0);
  });
});

describe('retry by filter', () => {
  /** `n` jobs of `work`, cancelled: retryable. */
  async function cancelledJobs(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await tq.enqueue(work, { i })).jobId);
    await tq.cancelWhere({ actor: work.name });
    return ids;
  }

  it('previews a count that equals the number retried, counted in the database', async () => {
    await cancelledJobs(3);
    await tq.enqueue(work, { i: 9 }); // pending: not retried, not counted
    const list = await app.inject({ url: '/admin/jobs?actor=sp_work', headers: { 'x-user': 'ops' } });
    expect(list.body).toContain('/admin/jobs/retry-preview?actor=sp_work');
    const preview = await app.inject({
      url: '/admin/jobs/retry-preview?actor=sp_work',
      headers: { 'x-user': 'ops' },
    });
    expect(preview.statusCode).toBe(200);
    const shown = Number(/id="retry-count" data-count="(\d+)"/.exec(preview.body)?.[1]);
    expect(shown).toBe(await jobCount(`actor = 'sp_work' AND status = 'cancelled'`));
    expect(shown).toBe(3);
    const res = await post(app, '/admin/jobs/retry-where', '/admin/jobs/retry-preview?actor=sp_work', {
      actor: 'sp_work',
      expected: String(shown),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/admin/jobs?actor=sp_work&retried=3');
    expect(await jobCount(`actor = 'sp_work' AND status = 'pending'`)).toBe(4);
    expect(await jobCount(`status = 'cancelled'`)).toBe(0);
    const done = await app.inject({ url: res.headers.location as string, headers: { 'x-user': 'ops' } });
    expect(done.body).toContain('Retried 3 matching jobs');
    expect(records.find((r) => r.msg === 'admin-action')?.obj).toMatchObject({
      user: 'ops',
      action: 'retry-where',
      filter: { actor: 'sp_work' },
      previewed: 3,
      retried: 3,
    });
  });

  it('asks again when more jobs match than were confirmed, and refuses a status it cannot retry; nothing retried', async () => {
    await cancelledJobs(2);
    const more = await post(app, '/admin/jobs/retry-where', '/admin/jobs', {
      actor: work.name,
      expected: '1',
    });
    expect(more.statusCode).toBe(409);
    expect(more.body).toContain('2 jobs match now, more than the 1 you confirmed');
    const pending = await app.inject({
      url: '/admin/jobs/retry-preview?actor=sp_work&status=pending',
      headers: { 'x-user': 'ops' },
    });
    expect(pending.statusCode).toBe(400);
    expect(pending.body).toContain('cannot be retried');
    const empty = await app.inject({ url: '/admin/jobs/retry-preview', headers: { 'x-user': 'ops' } });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain('the UI never retries every job at once');
    const viewer = await post(
      app,
      '/admin/jobs/retry-where',
      '/admin/jobs',
      { actor: work.name, expected: '2' },
      'viewer',
    );
    expect(viewer.statusCode).toBe(403);
    const noCsrf = await app.inject({
      method: 'POST',
      url: '/admin/jobs/retry-where',
      headers: { 'x-user': 'ops', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'actor=sp_work&expected=2',
    });
    expect(noCsrf.statusCode).toBe(403);
    expect(await jobCount(`status = 'cancelled'`)).toBe(2);
    expect(records.filter((r) => r.msg === 'admin-action')).toEqual([]);
  });
});

describe('archived jobs', () => {
  it('answers 200 with an archived banner, the archived row and its attempts', async () => {
    const job = await tq.enqueue(work, { secret: 'kept-in-archive' });
    await q(
      `UPDATE $S.jobs SET status = 'failed', attempt = 1, started_at = clock_timestamp() - interval '3 days',
         finished_at = clock_timestamp() - interval '3 days', error_class = 'Boom', error_message = 'it broke'
       WHERE id = $1`,
      [job.jobId],
    );
    await q(
      `INSERT INTO $S.job_attempts (job_id, attempt, finished_at, outcome, error_class, error_message)
       VALUES ($1, 1, clock_timestamp() - interval '3 days', 'failed', 'Boom', 'it broke')`,
      [job.jobId],
    );
    const day = 86_400_000;
    const moved = await backend.pruneJobs(
      { succeededMs: day, failedMs: day, cancelledMs: day, abandonedMs: day, archiveMs: 10 * day },
      100,
    );
    expect(moved).toEqual({ archived: 1, attempts: 1 });
    expect(await jobCount()).toBe(0);
    const page = await app.inject({ url: `/admin/jobs/${job.jobId}`, headers: { 'x-user': 'ops' } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="archived-banner"');
    expect(page.body).toContain('Archived.');
    expect(page.body).toContain('it broke');
    expect(page.body).toContain('kept-in-archive');
    expect(page.body).toMatch(/<td>failed<\/td>/);
    expect(page.body).not.toContain('/retry"');
    const gone = await app.inject({
      url: '/admin/jobs/018f0000-0000-7000-8000-0000000000ff',
      headers: { 'x-user': 'ops' },
    });
    expect(gone.statusCode).toBe(404);
  });
});

describe('times', () => {
  it('renders every timestamp of the overview, jobs, job and schedule pages as <time> with its UTC value', async () => {
    const job = await tq.enqueue(work, { i: 1 });
    const h = await tq.createSchedule(tick, '*/5 * * * *');
    for (const url of [
      '/admin/',
      '/admin/jobs',
      `/admin/jobs/${job.jobId}`,
      '/admin/schedules',
      `/admin/schedules/${h.id}`,
    ]) {
      const body = (await app.inject({ url, headers: { 'x-user': 'ops' } })).body;
      const times = [...body.matchAll(/<time datetime="([^"]+)" title="([^"]+)">([^<]+)<\/time>/g)];
      if (url !== '/admin/') expect(times.length).toBeGreaterThan(0);
      for (const [, iso, title, text] of times) {
        const utc = `${iso!.slice(0, 19).replace('T', ' ')} UTC`;
        expect(title).toBe(utc);
        expect(text).toBe(utc);
      }
      // No timestamp outside a <time> element (the hidden skip form's slot is an attribute value).
      const outside = body.replace(/<time [^>]*>[^<]*<\/time>/g, '').replace(/value="[^"]*"/g, '');
      expect(outside).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
    }
  });
});
