/**
 * The admin UI's actors and queues pages over HTTP (`app.inject`, real Postgres): rows, counts,
 * drift against the code's declarations, and the queue mode / cap and actor capacity actions —
 * gated (actions enabled, a user who may act, the CSRF token), validated before anything is
 * written, and logged with who did them. Every write is checked in the database.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { adminPlugin, type AdminOptions } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { queueViews } from '../../src/cli/queue-view.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { recordingLogger } from '../helpers/log-records.js';

let db: TestSchema;
let tq: TaskQ;
let s: string;

const WORKER = '018f0000-0000-7000-8000-0000000aa001';
const noop = async () => undefined;
// What the code declares; the stored rows below drift from some of it.
const send = actor({ name: 'aq_send', queue: 'aq_mail', maxConcurrent: 2, maxPending: 100 }, noop);
const report = actor({ name: 'aq_report', queue: 'aq_new_q', metadata: { v: 2 } }, noop);
const fresh = actor({ name: 'aq_fresh', queue: 'aq_mail' }, noop);

/** Users: `ops` may act, `viewer` may not; anyone else is refused. */
const auth: AdminOptions['auth'] = async (req) => {
  const who = req.headers['x-user'];
  if (who === 'viewer') return { user: 'viewer', actions: false };
  if (who === 'ops') return { user: 'ops' };
  return null;
};

async function mount(options: Omit<AdminOptions, 'tq'>): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(adminPlugin, { prefix: '/admin', tq, auth, ...options });
  await app.ready();
  return app;
}

const OPS = { 'x-user': 'ops' };

/** The CSRF cookie and token of a GET page, as a browser holds them after loading it. */
async function csrf(app: FastifyInstance, path: string) {
  const page = await app.inject({ url: path, headers: OPS });
  expect(page.statusCode).toBe(200);
  const token = /<meta name="csrf-token" content="([^"]+)"/.exec(page.body)?.[1];
  const cookie = page.cookies.find((c) => c.name === 'taskq_admin_csrf');
  expect(token).toBeDefined();
  return { token: token as string, cookie: `taskq_admin_csrf=${cookie?.value}` };
}

/** A form POST as `user` with the page's CSRF token (unless `withToken` is false). */
async function post(
  app: FastifyInstance,
  url: string,
  form: Record<string, string>,
  { user = 'ops', withToken = true } = {},
) {
  const { token, cookie } = await csrf(app, '/admin/queues');
  return app.inject({
    method: 'POST',
    url,
    headers: { 'x-user': user, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(withToken ? { ...form, _csrf: token } : form).toString(),
  });
}

async function queueRow(name: string): Promise<{ mode: string; max_concurrent: number | null } | undefined> {
  const { rows } = await db.pool.query(`SELECT mode, max_concurrent FROM ${s}.queues WHERE name = $1`, [
    name,
  ]);
  return rows[0] as { mode: string; max_concurrent: number | null } | undefined;
}

async function storedMaxConcurrent(actorName: string): Promise<number | null> {
  const { rows } = await db.pool.query(`SELECT max_concurrent FROM ${s}.actor_config WHERE actor = $1`, [
    actorName,
  ]);
  return (rows[0] as { max_concurrent: number | null }).max_concurrent;
}

/** The `<tr>` of one table row, by its data attribute. */
function rowOf(body: string, attr: 'data-actor' | 'data-queue', name: string): string {
  const start = body.indexOf(`<tr ${attr}="${name}"`);
  expect(start).toBeGreaterThanOrEqual(0);
  return body.slice(start, body.indexOf('</tr>', start));
}

const ENTITIES: Record<string, string> = {
  '&#39;': "'",
  '&quot;': '"',
  '&lt;': '<',
  '&gt;': '>',
  '&amp;': '&',
};

/** The text of some markup as a browser shows it: tags removed, entities decoded, spaces collapsed. */
const text = (markup: string): string =>
  markup
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;|&quot;|&lt;|&gt;|&amp;/g, (e) => ENTITIES[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim();

beforeAll(async () => {
  db = await migratedSchema('admin_aq');
  s = `"${db.schema}"`;
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query(`TRUNCATE ${s}.jobs, ${s}.actor_config, ${s}.queues, ${s}.workers CASCADE`);
  // Rows as workers of an older version of the code left them.
  await tq.backend.syncActorConfig(
    [
      { actor: 'aq_send', queue: 'aq_mail', metadata: {} },
      { actor: 'aq_report', queue: 'aq_old_q', metadata: { v: 1, note: '<script>x</script>' } },
    ],
    { force: false },
  );
});

describe('actors page', () => {
  it('lists each row with its live jobs, alive workers, capacity sources and drift against the code', async () => {
    await tq.actors.setCapacity('aq_send', { maxConcurrent: 5, resultTtl: '1h' });
    await tq.enqueue(send, {});
    await tq.enqueue(send, {});
    await tq.enqueue(send, {}, { delay: '1h' });
    await tq.backend.registerWorker({
      workerId: WORKER,
      hostname: 'h',
      pid: 1,
      label: null,
      queues: ['aq_mail'],
      maxConcurrency: 4,
      version: 'test',
    });
    const app = await mount({ actors: [send, report, fresh] });
    const res = await app.inject({ url: '/admin/actors', headers: OPS });
    expect(res.statusCode).toBe(200);

    const sendRow = rowOf(res.body, 'data-actor', 'aq_send');
    expect(sendRow).toContain('href="/admin/jobs?actor=aq_send"');
    const cells = [...sendRow.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => text(m[1]!));
    // Actor, queue, pending, scheduled, running, workers alive.
    expect(cells.slice(0, 6)).toEqual(['aq_send', 'aq_mail', '2', '1', '0', '1']);
    // The operator's 5 applies over the code's 2; maxPending is the code's; the code sets no TTL.
    expect(cells[6]).toBe('5 (operator) code declares 2');
    expect(cells[7]).toBe("100 (code's literal)");
    expect(cells[8]).toBe('1h (operator) code declares none');
    expect(text(sendRow)).toContain("Max concurrent: operator 5, code 2 (operator's value applies)");

    const reportRow = rowOf(res.body, 'data-actor', 'aq_report');
    // Neither the operator nor the code sets its capacity.
    expect(text(reportRow)).toMatch(/^aq_report aq_old_q 0 0 0 0 — \(not set\) — \(not set\) — \(not set\) /);
    expect(text(reportRow)).toContain(
      'queue: code "aq_new_q", stored "aq_old_q" (a worker refuses to start)',
    );
    expect(text(reportRow)).toContain('metadata: code');
    // Stored metadata is escaped like every value from the database.
    expect(reportRow).not.toContain('<script>x');
    expect(reportRow).toContain('&lt;script&gt;');
    // Pending jobs and no alive worker on its queue would be a banner; it has none pending.
    expect(res.body).not.toContain('no alive worker serves');

    expect(text(res.body)).toMatch(/Declared, not registered .* aq_fresh \(queue aq_mail\)/);
    await app.close();
  });

  it('says drift cannot be judged without the code, and warns about pending jobs nothing serves', async () => {
    await tq.enqueue(report, {}, { queue: 'aq_old_q' });
    const app = await mount({});
    const res = await app.inject({ url: '/admin/actors', headers: OPS });
    expect(res.statusCode).toBe(200);
    expect(text(res.body)).toContain('Drift is not shown');
    expect(text(rowOf(res.body, 'data-actor', 'aq_send'))).toContain('code not known');
    expect(text(res.body)).toContain(
      'Actor aq_report has 1 pending job(s) but no alive worker serves its queue aq_old_q',
    );
    // Without actions enabled there is no form.
    expect(res.body).not.toContain('/capacity"');
    await app.close();
  });

  it('refuses a repeated or malformed actors option at registration', async () => {
    await expect(mount({ actors: [send, send] })).rejects.toThrow(InvalidArgumentError);
    await expect(mount({ actors: [{} as typeof send] })).rejects.toThrow(/options\.actors\[0\]/);
  });
});

describe('queues page', () => {
  it('shows the rows of `taskq queues list` (same code): mode, cap, counts, alive workers', async () => {
    await tq.backend.setQueueMode('aq_mail', 'round_robin');
    await tq.backend.setQueueMaxConcurrent('aq_mail', 3);
    await tq.enqueue(send, {});
    await tq.enqueue(send, {}, { delay: '1h' });
    await tq.enqueue(fresh, {}, { queue: 'aq_other' });
    const app = await mount({});
    const res = await app.inject({ url: '/admin/queues', headers: OPS });
    expect(res.statusCode).toBe(200);

    const views = queueViews(
      await tq.backend.listQueues(),
      await tq.backend.observeFleet({ aliveWithinMs: 30_000, keyedReservationBases: [] }),
    );
    expect(views.map((v) => v.name)).toEqual(['aq_mail', 'aq_other']);
    for (const v of views) {
      const cells = [...rowOf(res.body, 'data-queue', v.name).matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map(
        (m) => text(m[1]!),
      );
      expect(cells[0]).toBe(v.name);
      expect(cells[1]).toBe(v.configured ? v.mode : `${v.mode} (default)`);
      expect(cells[2]).toBe(v.maxConcurrent === null ? 'none' : String(v.maxConcurrent));
      expect(cells.slice(3, 6)).toEqual([String(v.pending), String(v.scheduled), String(v.running)]);
      expect(cells[7]).toBe(String(v.workersAlive));
    }
    expect(text(res.body)).toContain('Queue aq_mail has 1 pending job(s) but no alive worker serves it');
    expect(res.body).not.toContain('/max-concurrent"');
    await app.close();
  });
});

describe('actions', () => {
  it('change a queue’s mode and cap (blank clears it) and an actor’s capacity, each logged with the user', async () => {
    const { logger, records } = recordingLogger();
    await tq.enqueue(send, {});
    const app = await mount({ actionsEnabled: true, logger });
    const page = await app.inject({ url: '/admin/queues', headers: OPS });
    expect(page.body).toContain('action="/admin/queues/aq_mail/max-concurrent"');

    let res = await post(app, '/admin/queues/aq_mail/mode', { mode: 'round_robin' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/admin/queues?done=mode');
    expect(await queueRow('aq_mail')).toEqual({ mode: 'round_robin', max_concurrent: null });

    res = await post(app, '/admin/queues/aq_mail/max-concurrent', { maxConcurrent: ' 7 ' });
    expect(res.headers.location).toBe('/admin/queues?done=cap');
    expect(await queueRow('aq_mail')).toEqual({ mode: 'round_robin', max_concurrent: 7 });
    const shown = await app.inject({ url: '/admin/queues?done=cap', headers: OPS });
    expect(text(shown.body)).toContain('Queue cap changed');
    expect(text(rowOf(shown.body, 'data-queue', 'aq_mail'))).toMatch(/^aq_mail round_robin 7 /);

    res = await post(app, '/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '' });
    expect(res.statusCode).toBe(303);
    expect(await queueRow('aq_mail')).toEqual({ mode: 'round_robin', max_concurrent: null });

    res = await post(app, '/admin/actors/aq_send/capacity', { maxConcurrent: '0' });
    expect(res.headers.location).toBe('/admin/actors?done=capacity');
    expect(await storedMaxConcurrent('aq_send')).toBe(0);
    res = await post(app, '/admin/actors/aq_send/capacity', { maxConcurrent: '' });
    expect(res.statusCode).toBe(303);
    expect(await storedMaxConcurrent('aq_send')).toBeNull();

    const actions = records.filter((r) => r.msg === 'admin-action').map((r) => r.obj);
    expect(actions).toEqual([
      { user: 'ops', action: 'queue-mode', queue: 'aq_mail', mode: 'round_robin' },
      { user: 'ops', action: 'queue-max-concurrent', queue: 'aq_mail', maxConcurrent: 7 },
      { user: 'ops', action: 'queue-max-concurrent', queue: 'aq_mail', maxConcurrent: null },
      { user: 'ops', action: 'actor-capacity', actor: 'aq_send', maxConcurrent: 0 },
      { user: 'ops', action: 'actor-capacity', actor: 'aq_send', maxConcurrent: null },
    ]);
    await app.close();
  });

  it('are refused with 403 without actions enabled, for a user who may not act, and without the CSRF token', async () => {
    const { logger, records } = recordingLogger();
    const disabled = await mount({ logger });
    const enabled = await mount({ actionsEnabled: true, logger });
    const attempts: [
      FastifyInstance,
      string,
      Record<string, string>,
      { user?: string; withToken?: boolean },
    ][] = [
      [disabled, '/admin/queues/aq_mail/mode', { mode: 'round_robin' }, {}],
      [disabled, '/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '4' }, {}],
      [disabled, '/admin/actors/aq_send/capacity', { maxConcurrent: '4' }, {}],
      [enabled, '/admin/queues/aq_mail/mode', { mode: 'round_robin' }, { user: 'viewer' }],
      [enabled, '/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '4' }, { user: 'viewer' }],
      [enabled, '/admin/actors/aq_send/capacity', { maxConcurrent: '4' }, { user: 'viewer' }],
      [enabled, '/admin/queues/aq_mail/mode', { mode: 'round_robin' }, { withToken: false }],
      [enabled, '/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '4' }, { withToken: false }],
      [enabled, '/admin/actors/aq_send/capacity', { maxConcurrent: '4' }, { withToken: false }],
    ];
    for (const [app, url, form, opts] of attempts) {
      const res = await post(app, url, form, opts);
      expect(res.statusCode, `${url} ${JSON.stringify(opts)}`).toBe(403);
    }
    expect(await queueRow('aq_mail')).toBeUndefined();
    expect(await storedMaxConcurrent('aq_send')).toBeNull();
    expect(records.filter((r) => r.msg === 'admin-action')).toEqual([]);
    await disabled.close();
    await enabled.close();
  });

  it('answer 400 to a bad mode, cap, capacity or name, naming the field, and write nothing', async () => {
    const { logger, records } = recordingLogger();
    const app = await mount({ actionsEnabled: true, logger });
    const bad: [string, Record<string, string>, RegExp][] = [
      ['/admin/queues/aq_mail/mode', { mode: 'fifo' }, /mode.*strict_fifo or round_robin/],
      ['/admin/queues/aq_mail/mode', {}, /mode.*strict_fifo or round_robin/],
      ['/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '0' }, /maxConcurrent.*from 1 to/],
      ['/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '-3' }, /maxConcurrent/],
      ['/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '2.5' }, /maxConcurrent/],
      ['/admin/queues/aq_mail/max-concurrent', { maxConcurrent: 'ten' }, /maxConcurrent/],
      ['/admin/queues/aq_mail/max-concurrent', { maxConcurrent: '2147483648' }, /maxConcurrent/],
      ['/admin/queues/bad%20name/max-concurrent', { maxConcurrent: '3' }, /queue/],
      ['/admin/queues/bad%20name/mode', { mode: 'round_robin' }, /queue/],
      ['/admin/actors/aq_send/capacity', { maxConcurrent: '-1' }, /maxConcurrent.*from 0 to/],
      ['/admin/actors/aq_send/capacity', { maxConcurrent: '1e3' }, /maxConcurrent/],
      ['/admin/actors/bad%20name/capacity', { maxConcurrent: '1' }, /actor/],
    ];
    for (const [url, form, message] of bad) {
      const res = await post(app, url, form);
      expect(res.statusCode, `${url} ${JSON.stringify(form)}`).toBe(400);
      expect(res.body).toMatch(message);
    }
    const unknown = await post(app, '/admin/actors/aq_nobody/capacity', { maxConcurrent: '1' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('no stored configuration');

    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.queues`);
    expect(rows[0]).toEqual({ n: 0 });
    expect(await storedMaxConcurrent('aq_send')).toBeNull();
    expect(records.filter((r) => r.msg === 'admin-action')).toEqual([]);
    await app.close();
  });
});
