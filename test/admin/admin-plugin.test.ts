/**
 * The admin UI over HTTP (`app.inject`, real Postgres): fail-closed start, authentication, CSRF,
 * framing headers, escaping, payload visibility, the retry / cancel actions and the jobs list.
 */
import { Script } from 'node:vm';

import fastifyCookie from '@fastify/cookie';
import fastifyHelmet from '@fastify/helmet';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_JS } from '../../src/admin/admin-assets.js';
import { adminPlugin, type AdminOptions } from '../../src/admin/index.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { AdminAuthRequiredError, InvalidArgumentError } from '../../src/errors/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { recordingLogger } from '../helpers/log-records.js';

let db: TestSchema;
let tq: TaskQ;
let s: string;
const work = actor({ name: 'ui_work', queue: 'ui_q' }, async () => undefined);

async function mount(options: Omit<AdminOptions, 'tq'>): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(adminPlugin, { prefix: '/admin', tq, ...options });
  await app.ready();
  return app;
}

/** The CSRF cookie and token of a GET page (what a browser holds after loading it). */
async function csrf(app: FastifyInstance, path: string, headers: Record<string, string> = {}) {
  const page = await app.inject({ method: 'GET', url: path, headers });
  expect(page.statusCode).toBe(200);
  const token = /<meta name="csrf-token" content="([^"]+)"/.exec(page.body)?.[1];
  const cookie = page.cookies.find((c) => c.name === 'taskq_admin_csrf');
  expect(token).toBeDefined();
  expect(cookie).toBeDefined();
  return { token: token as string, cookie: `taskq_admin_csrf=${cookie?.value}` };
}

async function statusOf(id: string): Promise<string> {
  const { rows } = await db.pool.query(`SELECT status::text FROM ${s}.jobs WHERE id = $1`, [id]);
  return (rows[0] as { status: string }).status;
}

async function makeFailed(id: string, message: string): Promise<void> {
  await db.pool.query(
    `UPDATE ${s}.jobs SET status = 'failed', attempt = 1, finished_at = clock_timestamp(),
       error_class = 'Boom', error_message = $2, error_traceback = $3 WHERE id = $1`,
    [id, message, `Boom: ${message}\n${'    at frame\n'.repeat(2000)}`],
  );
}

beforeAll(async () => {
  db = await migratedSchema('admin_ui');
  s = `"${db.schema}"`;
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

describe('fail-closed start', () => {
  it('refuses to register without authentication outside dev, and names what to do', async () => {
    for (const environment of [undefined, null, 'production', 'staging']) {
      const app = Fastify();
      await expect(app.register(adminPlugin, { prefix: '/admin', tq, environment }).ready()).rejects.toThrow(
        AdminAuthRequiredError,
      );
      await app.close();
    }
    const err = await Fastify()
      .register(adminPlugin, { tq, environment: 'production' })
      .ready()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(AdminAuthRequiredError);
    expect((err as AdminAuthRequiredError).code).toBe('TASKQ_ADMIN_AUTH_REQUIRED');
    expect((err as Error).message).toMatch(/auth hook.*token/);
  });

  it('starts without authentication in dev (and with requireAuth: false), warning admin-ui-no-auth', async () => {
    for (const opts of [{ environment: 'dev' }, { environment: 'Development' }, { requireAuth: false }]) {
      const { logger, records } = recordingLogger();
      const app = await mount({ ...opts, logger });
      expect(records.some((r) => r.level === 'warn' && r.msg === 'admin-ui-no-auth')).toBe(true);
      expect((await app.inject({ url: '/admin/' })).statusCode).toBe(200);
      await app.close();
    }
  });

  it('refuses bad options at the boundary, naming the option', async () => {
    const bad: [Partial<AdminOptions>, string][] = [
      [{ frameAncestors: 'any' as 'none' }, 'options.frameAncestors'],
      [{ maxSseConnections: 0 }, 'options.maxSseConnections'],
      [{ pollInterval: '10ms' }, 'options.pollInterval'],
      [{ token: 'has space' }, 'options.token'],
      [{ actionsEnabled: 'yes' as unknown as boolean }, 'options.actionsEnabled'],
    ];
    for (const [opts, field] of bad) {
      const err = await Fastify()
        .register(adminPlugin, { tq, environment: 'dev', ...opts })
        .ready()
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe(field);
    }
  });
});

describe('authentication', () => {
  it('bearer token: 401 without it or with a wrong one, 200 with it; the login form sets a session', async () => {
    const app = await mount({ token: 'sekret-token' });
    expect((await app.inject({ url: '/admin/' })).statusCode).toBe(401);
    const wrong = await app.inject({ url: '/admin/', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(
      (await app.inject({ url: '/admin/', headers: { authorization: 'Bearer sekret-token' } })).statusCode,
    ).toBe(200);
    // A browser is sent to the login form, which needs the CSRF token too.
    const browser = await app.inject({ url: '/admin/jobs', headers: { accept: 'text/html' } });
    expect(browser.statusCode).toBe(303);
    expect(browser.headers.location).toBe('/admin/login');
    const { token, cookie } = await csrf(app, '/admin/login');
    const bad = await app.inject({
      method: 'POST',
      url: '/admin/login',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: token, token: 'guess' }).toString(),
    });
    expect(bad.statusCode).toBe(401);
    const good = await app.inject({
      method: 'POST',
      url: '/admin/login',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: token, token: 'sekret-token' }).toString(),
    });
    expect(good.statusCode).toBe(303);
    const session = good.cookies.find((c) => c.name === 'taskq_admin_session');
    expect(session?.httpOnly).toBe(true);
    expect(session?.secure).toBe(true);
    expect(session?.sameSite).toBe('Strict');
    expect(session?.value).not.toContain('sekret-token');
    const after = await app.inject({
      url: '/admin/',
      headers: { cookie: `taskq_admin_session=${session?.value}` },
    });
    expect(after.statusCode).toBe(200);
    await app.close();
  });

  it('auth hook: 401 when it returns null; 403 on actions for a user who may not act', async () => {
    const job = await tq.enqueue(work, { n: 1 });
    const app = await mount({
      actionsEnabled: true,
      auth: async (req) => {
        const who = req.headers['x-user'];
        if (who === 'viewer') return { user: 'viewer', actions: false };
        if (who === 'ops') return { user: 'ops' };
        return null;
      },
    });
    expect((await app.inject({ url: '/admin/' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/admin/', headers: { 'x-user': 'ops' } })).statusCode).toBe(200);
    const viewerPage = await app.inject({ url: `/admin/jobs/${job.jobId}`, headers: { 'x-user': 'viewer' } });
    expect(viewerPage.body).not.toContain('/cancel"');
    const { token, cookie } = await csrf(app, `/admin/jobs/${job.jobId}`, { 'x-user': 'ops' });
    const refused = await app.inject({
      method: 'POST',
      url: `/admin/jobs/${job.jobId}/cancel`,
      headers: { 'x-user': 'viewer', cookie, 'x-csrf-token': token },
    });
    expect(refused.statusCode).toBe(403);
    expect(await statusOf(job.jobId)).toBe('pending');
    await app.close();
  });
});

describe('security headers and CSRF', () => {
  it('sends CSP frame-ancestors and X-Frame-Options from frameAncestors', async () => {
    for (const [frameAncestors, xfo] of [
      ['none', 'DENY'],
      ['self', 'SAMEORIGIN'],
    ] as const) {
      const app = await mount({ environment: 'dev', frameAncestors });
      const res = await app.inject({ url: '/admin/' });
      expect(res.headers['content-security-policy']).toContain(`frame-ancestors '${frameAncestors}'`);
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['x-frame-options']).toBe(xfo);
      await app.close();
    }
  });

  it('refuses a POST without the CSRF token (403) and writes nothing; accepts it with the token', async () => {
    const job = await tq.enqueue(work, { n: 2 });
    const { logger, records } = recordingLogger();
    const app = await mount({ environment: 'dev', actionsEnabled: true, secureCookies: false, logger });
    const noToken = await app.inject({ method: 'POST', url: `/admin/jobs/${job.jobId}/cancel` });
    expect(noToken.statusCode).toBe(403);
    const { token, cookie } = await csrf(app, `/admin/jobs/${job.jobId}`);
    const wrongToken = await app.inject({
      method: 'POST',
      url: `/admin/jobs/${job.jobId}/cancel`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: '_csrf=forged',
    });
    expect(wrongToken.statusCode).toBe(403);
    const noCookie = await app.inject({
      method: 'POST',
      url: `/admin/jobs/${job.jobId}/cancel`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(token)}`,
    });
    expect(noCookie.statusCode).toBe(403);
    expect(await statusOf(job.jobId)).toBe('pending');
    const ok = await app.inject({
      method: 'POST',
      url: `/admin/jobs/${job.jobId}/cancel`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(token)}`,
    });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe(`/admin/jobs/${job.jobId}?done=cancelled`);
    expect(await statusOf(job.jobId)).toBe('cancelled');
    const action = records.find((r) => r.msg === 'admin-action');
    expect(action?.obj).toMatchObject({
      user: 'anonymous',
      action: 'cancel',
      jobId: job.jobId,
      changed: true,
    });
    await app.close();
  });

  it('the CSRF cookie is Secure, HttpOnly and SameSite=Strict per secureCookies', async () => {
    for (const secureCookies of [true, false]) {
      const app = await mount({ environment: 'dev', secureCookies });
      const page = await app.inject({ url: '/admin/' });
      const c = page.cookies.find((x) => x.name === 'taskq_admin_csrf');
      expect(c?.secure ?? false).toBe(secureCookies);
      expect(c?.httpOnly).toBe(true);
      expect(c?.sameSite).toBe('Strict');
      expect(c?.path).toBe('/admin');
      await app.close();
    }
  });
});

describe('pages', () => {
  it('escapes a job error containing <script>, bounds the traceback, and hides payloads without read access', async () => {
    const job = await tq.enqueue(work, { secret: 'card-4242', html: '<b>x</b>' });
    await makeFailed(job.jobId, '<script>alert(1)</script>');
    const app = await mount({
      auth: async (req) =>
        req.headers['x-user'] === 'reader' ? { user: 'reader' } : { user: 'blind', readPayloads: false },
    });
    const page = await app.inject({ url: `/admin/jobs/${job.jobId}`, headers: { 'x-user': 'reader' } });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>alert(1)</script>');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).toContain('card-4242');
    expect(page.body).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(page.body).toMatch(/more characters not shown/);
    expect(page.body).toContain('<time datetime="');
    const blind = await app.inject({ url: `/admin/jobs/${job.jobId}`, headers: { 'x-user': 'blind' } });
    expect(blind.statusCode).toBe(200);
    expect(blind.body).not.toContain('card-4242');
    expect(blind.body).toMatch(/payload is hidden/);
    // The live-state endpoint never carries the payload either.
    const state = await app.inject({ url: `/admin/jobs/${job.jobId}/state`, headers: { 'x-user': 'blind' } });
    expect(state.json()).toMatchObject({ id: job.jobId, status: 'failed' });
    expect(state.body).not.toContain('card-4242');
    await app.close();
  });

  it('overview lists queues with counts and warns about a queue with pending jobs and no alive worker', async () => {
    const stranded = actor({ name: 'ui_stranded', queue: 'ui_nobody' }, async () => undefined);
    await tq.enqueue(stranded, {});
    const served = actor({ name: 'ui_served', queue: 'ui_served_q' }, async () => undefined);
    await tq.enqueue(served, {});
    await db.pool.query(
      `INSERT INTO ${s}.workers (id, hostname, pid, queues) VALUES ('01900000-0000-7000-8000-00000000a11e', 'h', 1, '{ui_served_q}')`,
    );
    const app = await mount({ environment: 'dev' });
    const res = await app.inject({ url: '/admin/' });
    expect(res.statusCode).toBe(200);
    const body = res.body.replace(/\s+/g, ' ');
    expect(body).toMatch(/class="banner" role="alert"> ?Queue <strong>ui_nobody<\/strong> has 1 pending/);
    // A queue whose workers are alive gets no banner.
    expect(body).not.toMatch(/Queue <strong>ui_served_q<\/strong>/);
    expect(body).toMatch(
      /<td><a href="\/admin\/jobs\?queue=ui_served_q">ui_served_q<\/a><\/td>\s*<td><a [^>]*>1<\/a><\/td>/,
    );
    expect(body).toMatch(/No worker has led yet/);
    await app.close();
  });

  it("the job page says why a waiting job isn't running (tq.explain), and says nothing for a finished one", async () => {
    const nobody = actor({ name: 'ui_explained', queue: 'ui_explain_q' }, async () => undefined);
    const waiting = await tq.enqueue(nobody, {});
    const later = await tq.enqueue(nobody, {}, { delay: '1h' });
    const done = await tq.enqueue(nobody, {});
    await db.pool.query(
      `UPDATE ${s}.jobs SET status = 'succeeded', finished_at = clock_timestamp() WHERE id = $1`,
      [done.jobId],
    );
    const app = await mount({ environment: 'dev' });
    const page = async (id: string): Promise<string> => {
      const res = await app.inject({ url: `/admin/jobs/${id}` });
      expect(res.statusCode).toBe(200);
      return res.body.replace(/\s+/g, ' ');
    };
    const first = await page(waiting.jobId);
    expect(first).toContain("Why isn't this job running?");
    expect(first).toMatch(/<li><code>no-worker<\/code> [^<]*ui_explain_q/);
    const second = await page(later.jobId);
    expect(second).toMatch(/<li><code>scheduled<\/code>/);
    const third = await page(done.jobId);
    expect(third).not.toContain("Why isn't this job running?");
    await app.close();
  });

  it('unknown and malformed job ids answer 404 and 400', async () => {
    const app = await mount({ environment: 'dev' });
    expect((await app.inject({ url: '/admin/jobs/01900000-0000-7000-8000-0000000000ff' })).statusCode).toBe(
      404,
    );
    const bad = await app.inject({ url: '/admin/jobs/<x>' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).not.toContain('<x>');
    const lookup = await app.inject({ url: '/admin/lookup?id=nope' });
    expect(lookup.statusCode).toBe(400);
    const keyed = await tq.enqueue(work, {}, { idempotencyKey: 'order <7>', idempotencyScope: 'shop' });
    const byKey = await app.inject({
      url: `/admin/lookup?key=${encodeURIComponent('order <7>')}&scope=shop`,
    });
    expect(byKey.statusCode).toBe(303);
    expect(byKey.headers.location).toBe(`/admin/jobs/${keyed.jobId}`);
    const otherScope = await app.inject({ url: `/admin/lookup?key=${encodeURIComponent('order <7>')}` });
    expect(otherScope.statusCode).toBe(404);
    expect(otherScope.body).toContain('order &lt;7&gt;');
    expect((await app.inject({ url: '/admin/lookup' })).statusCode).toBe(400);
    expect((await app.inject({ url: '/admin/lookup?key=a%00b' })).statusCode).toBe(400);
    const found = await app.inject({ url: '/admin/lookup?id=01900000-0000-7000-8000-0000000000FF' });
    expect(found.statusCode).toBe(303);
    expect(found.headers.location).toBe('/admin/jobs/01900000-0000-7000-8000-0000000000ff');
    await app.close();
  });
});

describe('jobs list', () => {
  it('filters by status, queue, actor and tag, and pages with the keyset cursor', async () => {
    const listed = actor({ name: 'ui_listed', queue: 'ui_list_q' }, async () => undefined);
    const ids: string[] = [];
    for (let i = 0; i < 60; i++)
      ids.push((await tq.enqueue(listed, { i }, { tags: i % 2 === 0 ? ['even'] : ['odd'] })).jobId);
    await makeFailed(ids[3] as string, 'failed one');
    const app = await mount({ environment: 'dev' });
    const idsOn = (body: string) =>
      [...body.matchAll(/href="\/admin\/jobs\/([0-9a-f-]{36})"/g)].map((m) => m[1]);

    const first = await app.inject({ url: '/admin/jobs?queue=ui_list_q' });
    expect(first.statusCode).toBe(200);
    const page1 = idsOn(first.body);
    expect(page1).toHaveLength(50);
    const next = /rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toMatch(/queue=ui_list_q&cursor=/);
    const second = await app.inject({ url: next as string });
    const page2 = idsOn(second.body);
    expect(page2).toHaveLength(10);
    expect(new Set([...page1, ...page2])).toEqual(new Set(ids));
    expect(second.body).not.toContain('rel="next"');

    const even = idsOn((await app.inject({ url: '/admin/jobs?queue=ui_list_q&tag=even' })).body);
    expect(even).toHaveLength(30);
    const failed = idsOn((await app.inject({ url: '/admin/jobs?status=failed&actor=ui_listed' })).body);
    expect(failed).toEqual([ids[3]]);
    const none = await app.inject({ url: '/admin/jobs?actor=ui_nobody' });
    expect(none.body).toContain('No job matches');

    const badStatus = await app.inject({ url: '/admin/jobs?status=<bogus>' });
    expect(badStatus.statusCode).toBe(400);
    expect(badStatus.body).not.toContain('<bogus>');
    expect((await app.inject({ url: '/admin/jobs?cursor=forged' })).statusCode).toBe(400);
    await app.close();
  });
});

describe('actions', () => {
  it('retry sends a failed job back to pending; both actions are refused (403) when actions are disabled', async () => {
    const job = await tq.enqueue(work, { n: 3 });
    await makeFailed(job.jobId, 'to retry');
    const off = await mount({ environment: 'dev', secureCookies: false });
    const offPage = await off.inject({ url: `/admin/jobs/${job.jobId}` });
    expect(offPage.body).not.toContain('/retry"');
    const c0 = await csrf(off, `/admin/jobs/${job.jobId}`);
    for (const action of ['retry', 'cancel']) {
      const res = await off.inject({
        method: 'POST',
        url: `/admin/jobs/${job.jobId}/${action}`,
        headers: { cookie: c0.cookie, 'x-csrf-token': c0.token },
      });
      expect(res.statusCode).toBe(403);
    }
    expect(await statusOf(job.jobId)).toBe('failed');
    await off.close();

    const { logger, records } = recordingLogger();
    const on = await mount({ environment: 'dev', actionsEnabled: true, secureCookies: false, logger });
    const { token, cookie } = await csrf(on, `/admin/jobs/${job.jobId}`);
    const res = await on.inject({
      method: 'POST',
      url: `/admin/jobs/${job.jobId}/retry`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(token)}`,
    });
    expect(res.statusCode).toBe(303);
    expect(await statusOf(job.jobId)).toBe('pending');
    const shown = await on.inject({ url: res.headers.location as string });
    expect(shown.body).toContain('Retried');
    const logged = records.filter((r) => r.msg === 'admin-action');
    expect(logged).toHaveLength(1);
    expect(logged[0]?.obj).toMatchObject({ action: 'retry', jobId: job.jobId, changed: true });
    await on.close();
  });

  it('never puts a payload value in a log line', async () => {
    const job = await tq.enqueue(work, { secret: 'never-log-me' });
    await makeFailed(job.jobId, 'x');
    const { logger, records } = recordingLogger();
    const app = await mount({ environment: 'dev', actionsEnabled: true, secureCookies: false, logger });
    await app.inject({ url: `/admin/jobs/${job.jobId}` });
    const { token, cookie } = await csrf(app, `/admin/jobs/${job.jobId}`);
    for (const action of ['retry', 'cancel'])
      await app.inject({
        method: 'POST',
        url: `/admin/jobs/${job.jobId}/${action}`,
        headers: { cookie, 'x-csrf-token': token },
      });
    expect(records.length).toBeGreaterThan(0);
    expect(JSON.stringify(records)).not.toContain('never-log-me');
    await app.close();
  });
});

describe('mounting', () => {
  it('lives beside a host app that has its own cookie and helmet plugins, without changing its routes', async () => {
    const memory = new TaskQ(new InMemoryBackend());
    const app = Fastify();
    await app.register(fastifyCookie);
    await app.register(fastifyHelmet);
    app.get('/', async () => 'host');
    await app.register(adminPlugin, { prefix: '/ops/taskq', tq: memory, environment: 'dev' });
    await app.ready();
    const ui = await app.inject({ url: '/ops/taskq/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(ui.body).toContain('href="/ops/taskq/jobs"');
    expect((await app.inject({ url: '/ops/taskq/assets/admin.js' })).statusCode).toBe(200);
    const host = await app.inject({ url: '/' });
    expect(host.body).toBe('host');
    // The host keeps its own policy: the UI's hooks stay inside its prefix.
    expect(host.headers['content-security-policy']).not.toContain("frame-ancestors 'none'");
    await app.close();
    await memory.close();
  });

  it('serves a script that parses (no build step, no inline code)', () => {
    expect(() => new Script(ADMIN_JS)).not.toThrow();
  });
});
