/**
 * The admin UI's rate-limits and batches pages over HTTP (`app.inject`, real Postgres and Redis):
 * decoded peek state of published limits (keyed ones grouped and bounded), the reset guarded by
 * allowRateLimitReset + actions + CSRF and logged at warn, reservations never reset; the batches
 * list and a batch's page whose counters are the database's.
 */
import { randomBytes } from 'node:crypto';

import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { adminPlugin, type AdminOptions } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { batchItem } from '../../src/client/batch-items.js';
import { AbortBatchAfter } from '../../src/client/batch-policy.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import {
  ConcurrencyReservation,
  RateLimitRegistry,
  SlidingWindow,
  syncRateLimitBuckets,
  syncSlots,
  TokenBucket,
} from '../../src/ratelimit/index.js';
import { PostgresRateLimitStore } from '../../src/ratelimit/stores/index.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { deadRedis, testRedis } from '../ratelimit/helpers.js';
import { recordingLogger } from '../helpers/log-records.js';

let db: TestSchema;
let redis: Redis;
let tq: TaskQ;
let tqNoRedis: TaskQ;
const run_ = randomBytes(4).toString('hex');
const pgQuota = new TokenBucket(`ui_pg_${run_}`, { capacity: 3, refillPerSecond: 0, backend: 'postgres' });
const redisBucket = new TokenBucket(`ui_redis_${run_}`, {
  capacity: 5,
  refillPerSecond: 1,
  backend: 'redis',
});
const gcra = new SlidingWindow(`ui_gcra_${run_}`, {
  limit: 10,
  window: '1m',
  backend: 'postgres',
  style: 'gcra',
});
const slots = new ConcurrencyReservation(`ui_slots_${run_}`, { slots: 2, lease: '1m' });
const KEYED = `ui_percust_${run_}`;
const kid = actor({ name: 'ui_batch_kid', queue: 'ui_batch_q' }, async () => undefined);
const fin = actor({ name: 'ui_batch_fin', queue: 'ui_batch_q' }, async () => undefined);

async function mount(options: Partial<AdminOptions> = {}): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(adminPlugin, { tq, environment: 'dev', secureCookies: false, ...options });
  await app.ready();
  return app;
}

/** A GET page's body, status and CSRF token + cookie (what a browser holds after loading it). */
async function get(app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  const r = await app.inject({ method: 'GET', url, headers });
  const token = /<meta name="csrf-token" content="([^"]+)"/.exec(r.body)?.[1] ?? '';
  const cookie = `taskq_admin_csrf=${r.cookies.find((c) => c.name === 'taskq_admin_csrf')?.value ?? ''}`;
  return { status: r.statusCode, body: r.body, text: r.body.replace(/\s+/g, ' '), token, cookie };
}

/** POSTs a reset of `name` with (or without) the page's CSRF token. */
async function reset(
  app: FastifyInstance,
  name: string,
  withCsrf = true,
  headers: Record<string, string> = {},
) {
  const page = await get(app, '/rate-limits', headers);
  return app.inject({
    method: 'POST',
    url: `/rate-limits/${encodeURIComponent(name)}/reset`,
    headers: {
      ...headers,
      'content-type': 'application/x-www-form-urlencoded',
      ...(withCsrf ? { cookie: page.cookie } : {}),
    },
    payload: withCsrf ? `_csrf=${encodeURIComponent(page.token)}` : '',
  });
}

const ctx = () => ({ driver: db.driver, schema: db.schema, redis });

beforeAll(async () => {
  db = await migratedSchema('admin_rb');
  redis = testRedis();
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redis });
  tqNoRedis = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  // What a worker does at startup: register, publish, sync slots; then some use.
  const registry = new RateLimitRegistry();
  for (const p of [pgQuota, redisBucket, gcra, slots]) registry.register(p);
  await syncRateLimitBuckets(registry, ctx());
  await syncSlots([slots], ctx());
  await pgQuota.acquire(ctx(), 2);
  await redisBucket.acquire(ctx(), 2);
  // 25 keyed materialisations of one keyed ref, and 3 of a keyed reservation.
  const store = new PostgresRateLimitStore({ driver: db.driver, schema: db.schema });
  for (let i = 0; i < 25; i++)
    await store.publishBucket({
      name: `${KEYED}:cust-${i}`,
      kind: 'token_bucket',
      capacity: 4,
      refillPerSecond: 2,
      windowMs: null,
      backend: 'postgres',
      keyed: true,
    });
  for (let i = 0; i < 3; i++)
    await store.ensureSlots({ name: `ui_kres_${run_}:t${i}`, slots: 2, leaseMs: 60_000, keyed: true });
});
afterAll(async () => {
  await redisBucket.reset(ctx()).catch(() => undefined);
  await tqNoRedis.close();
  await tq.close();
  redis.disconnect();
  await db.drop();
});

describe('rate-limits page', () => {
  it('shows decoded peek state of every published limit and reservation, keyed ones bounded', async () => {
    const app = await mount();
    const p = await get(app, '/rate-limits');
    expect(p.status).toBe(200);
    expect(p.text).toContain(`ui_pg_${run_}`);
    expect(p.text).toContain('capacity 3, fixed quota (never refills)');
    expect(p.text).toContain('1 / 3 tokens left');
    expect(p.text).toMatch(/capacity 5, refill 1\/s/);
    expect(p.text).toMatch(/[34](\.\d\d)? \/ 5 tokens left/);
    expect(p.text).toContain('limit 10 per 60 s (GCRA)');
    expect(p.text).toContain('0 / 10 used in the window');
    expect(p.text).toContain(`ui_slots_${run_}`);
    expect(p.text).toContain('0 / 2 held');
    // The keyed ref: one group, 25 keys, 10 shown (peeked), the rest counted.
    expect(p.text).toContain(`${KEYED}:*`);
    expect(p.text).toContain('25 keys');
    expect(p.body.match(new RegExp(`${KEYED}:cust-\\d+`, 'g'))?.length).toBe(10);
    expect(p.text).toContain('15 more are not');
    expect(p.text).toContain('4 / 4 tokens left');
    expect(p.text).toContain(`ui_kres_${run_}:*`);
    expect(p.text).toContain('3 keys · 0 / 6 slots held over all keys');
    // Peeking spends nothing.
    expect((await pgQuota.peek(ctx())).tokensRemaining).toBe(1);
    // Resets are off by default: no button.
    expect(p.body).not.toContain('/reset"');
    await app.close();
  });

  it('without Redis, Redis-backed limits say "state needs Redis" and the page still renders', async () => {
    const app = await mount({ tq: tqNoRedis });
    const p = await get(app, '/rate-limits');
    expect(p.status).toBe(200);
    expect(p.text).toMatch(new RegExp(`ui_redis_${run_}.*?state needs Redis`));
    expect(p.text).toContain('1 / 3 tokens left');
    await app.close();
  });

  it('with Redis down, a Redis-backed limit is read from the Postgres fallback and says so', async () => {
    const dead = deadRedis();
    const tqDead = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, redis: dead });
    const app = await mount({ tq: tqDead });
    try {
      const p = await get(app, '/rate-limits');
      expect(p.status).toBe(200);
      expect(p.text).toMatch(new RegExp(`ui_redis_${run_}.*?5 / 5 tokens left.*?\\(read from postgres\\)`));
    } finally {
      await app.close();
      await tqDead.close();
      dead.disconnect();
    }
  });

  it('hides keys (they come from payloads) from users who may not read payloads', async () => {
    const app = await mount({ auth: async () => ({ user: 'support', readPayloads: false }) });
    const p = await get(app, '/rate-limits');
    expect(p.text).toContain('25 keys');
    expect(p.body).not.toMatch(new RegExp(`${KEYED}:cust-`));
    expect(p.text).toContain('Keys are hidden');
    await app.close();
  });
});

describe('rate-limits page bounds', () => {
  it('shows at most 50 keyed groups, most recently used first, and counts the rest', async () => {
    const store = new PostgresRateLimitStore({ driver: db.driver, schema: db.schema });
    for (let i = 0; i < 52; i++)
      await store.publishBucket({
        name: `ui_many_${run_}_${String(i).padStart(2, '0')}:k`,
        kind: 'gcra',
        capacity: 5,
        refillPerSecond: null,
        windowMs: 1000,
        backend: 'postgres',
        keyed: true,
      });
    const app = await mount();
    const p = await get(app, '/rate-limits');
    // 53 groups (these 52 and the first test's): the 3 least recently used are counted only.
    expect(p.text).toContain('3 more keyed rate-limit groups (the least recently used) are not shown.');
    expect(p.body.match(/<h3><code>[^<]+:\*<\/code><\/h3>/g)?.length).toBe(50 + 1); // + the keyed reservation
    expect(p.body).not.toContain(`${KEYED}:*`);
    expect(p.body).toContain(`ui_many_${run_}_51:*`);
    await app.close();
  });
});

describe('rate-limit reset', () => {
  it('answers 403 and changes nothing when the setting is off, even with actions on', async () => {
    const app = await mount({ actionsEnabled: true });
    const r = await reset(app, pgQuota.name);
    expect(r.statusCode).toBe(403);
    expect(r.body).toContain('TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET');
    expect((await pgQuota.peek(ctx())).tokensRemaining).toBe(1);
    await app.close();
  });

  it('answers 403 with the setting on but actions off, and shows no button', async () => {
    const app = await mount({ allowRateLimitReset: true });
    expect((await get(app, '/rate-limits')).body).not.toContain('/reset"');
    const r = await reset(app, pgQuota.name);
    expect(r.statusCode).toBe(403);
    expect(r.body).toContain('Actions are disabled');
    expect((await pgQuota.peek(ctx())).tokensRemaining).toBe(1);
    await app.close();
  });

  it('answers 403 without the CSRF token, and to a user who may not act', async () => {
    const app = await mount({ allowRateLimitReset: true, actionsEnabled: true });
    expect((await reset(app, pgQuota.name, false)).statusCode).toBe(403);
    await app.close();
    const viewer = await mount({
      allowRateLimitReset: true,
      actionsEnabled: true,
      auth: async () => ({ user: 'viewer', actions: false }),
    });
    expect((await get(viewer, '/rate-limits')).body).not.toContain('/reset"');
    const r = await reset(viewer, pgQuota.name);
    expect(r.statusCode).toBe(403);
    expect(r.body).toContain('User viewer may not reset rate limits');
    expect((await pgQuota.peek(ctx())).tokensRemaining).toBe(1);
    await viewer.close();
  });

  it('with the setting and actions on, refills the limit and logs who did it at warn', async () => {
    const { logger, records } = recordingLogger();
    const app = await mount({
      allowRateLimitReset: true,
      actionsEnabled: true,
      logger,
      auth: async () => ({ user: 'ann' }),
    });
    const page = await get(app, '/rate-limits');
    expect(page.body).toContain(`action="/rate-limits/ui_pg_${run_}/reset"`);
    // Reservations get no button.
    expect(page.body).not.toContain(`/rate-limits/ui_slots_${run_}/reset`);
    const r = await reset(app, pgQuota.name);
    expect(r.statusCode).toBe(303);
    expect(r.headers.location).toBe('/rate-limits?done=reset');
    expect((await pgQuota.peek(ctx())).tokensRemaining).toBe(3);
    expect(records).toContainEqual({
      level: 'warn',
      msg: 'admin-action',
      obj: {
        user: 'ann',
        action: 'rate-limit-reset',
        name: pgQuota.name,
        kind: 'token_bucket',
        backend: 'postgres',
      },
    });
    expect((await get(app, '/rate-limits?done=reset')).text).toContain(
      'Reset: the rate limit is full again.',
    );

    // A Redis-backed one is reset in Redis.
    expect((await reset(app, redisBucket.name)).statusCode).toBe(303);
    expect((await redisBucket.peek(ctx())).tokensRemaining).toBe(5);
    await app.close();
  });

  it('resets a name of any text and length (past the 100-character parameter limit, with "/")', async () => {
    const odd = new TokenBucket(`ui_odd_${run_}/${'x'.repeat(150)} é?#%`, {
      capacity: 2,
      refillPerSecond: 0,
      backend: 'postgres',
    });
    const registry = new RateLimitRegistry();
    registry.register(odd);
    await syncRateLimitBuckets(registry, ctx());
    await odd.acquire(ctx(), 2);
    const app = await mount({ allowRateLimitReset: true, actionsEnabled: true });
    expect((await get(app, '/rate-limits')).body).toContain(
      `action="/rate-limits/${encodeURIComponent(odd.name)}/reset"`,
    );
    expect((await reset(app, odd.name)).statusCode).toBe(303);
    expect((await odd.peek(ctx())).tokensRemaining).toBe(2);
    // Only /rate-limits/<one encoded name>/reset is an endpoint; a broken encoding is a 400.
    const page = await get(app, '/rate-limits');
    const post = (url: string) =>
      app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie },
        payload: `_csrf=${encodeURIComponent(page.token)}`,
      });
    expect((await post(`/rate-limits/${pgQuota.name}`)).statusCode).toBe(404);
    expect((await post(`/rate-limits/a/b/reset`)).statusCode).toBe(404);
    expect((await post(`/rate-limits/%E0%A4%A/reset`)).statusCode).toBe(400);
    await app.close();
  });

  it('refuses a reservation with a clear message, and an unknown name with 404', async () => {
    const app = await mount({ allowRateLimitReset: true, actionsEnabled: true });
    const r = await reset(app, slots.name);
    expect(r.statusCode).toBe(400);
    expect(r.body).toContain(
      'is a reservation: slots are freed by their holders or when their lease expires, never reset',
    );
    const missing = await reset(app, `no_such_${run_}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain(`no_such_${run_}`);
    await app.close();
  });

  it('a Redis-backed limit without Redis has no button and answers 409', async () => {
    const app = await mount({ tq: tqNoRedis, allowRateLimitReset: true, actionsEnabled: true });
    const page = await get(app, '/rate-limits');
    expect(page.body).toContain(`/rate-limits/ui_pg_${run_}/reset`);
    expect(page.body).not.toContain(`/rate-limits/ui_redis_${run_}/reset`);
    const r = await reset(app, redisBucket.name);
    expect(r.statusCode).toBe(409);
    expect(r.body).toContain('needs ctx.redis');
    await app.close();
  });
});

describe('batches pages', () => {
  let batchId: string;
  let childIds: string[];
  const s = () => `"${db.schema}"`;

  beforeAll(async () => {
    const h = await tq.enqueueBatch(
      Array.from({ length: 4 }, () => batchItem(kid, {})),
      { finalizer: batchItem(fin, {}), failurePolicy: new AbortBatchAfter(3) },
    );
    batchId = h.batchId;
    childIds = h.jobHandles.slice(0, 4).map((j) => j.jobId);
    // One child succeeded and one failed: the batch's trigger counts them at commit.
    await db.pool.query(
      `UPDATE ${s()}.jobs SET status = 'succeeded', attempt = 1, finished_at = clock_timestamp() WHERE id = $1`,
      [childIds[0]],
    );
    await db.pool.query(
      `UPDATE ${s()}.jobs SET status = 'failed', attempt = 1, finished_at = clock_timestamp() WHERE id = $1`,
      [childIds[1]],
    );
  });

  it('the batch page shows the counters the database holds, the policy and the finalizer', async () => {
    const app = await mount();
    const { rows } = await db.pool.query(
      `SELECT expected_size, succeeded, failed, cancelled, crashed, abandoned, consecutive_failures, failure_threshold, finalizer_job_id::text
         FROM ${s()}.batches WHERE id = $1`,
      [batchId],
    );
    const row = rows[0] as Record<string, number | string>;
    expect(row.succeeded).toBe(1);
    expect(row.failed).toBe(1);
    const p = await get(app, `/batches/${batchId}`);
    expect(p.status).toBe(200);
    for (const k of ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'])
      expect(p.body).toContain(`data-counter="${k}">${row[k]}<`);
    expect(p.body).toContain(`data-counter="total">${row.expected_size}<`);
    expect(p.body).toContain(`data-counter="not finished">${Number(row.expected_size) - 2}<`);
    expect(p.text).toContain(`aborts after 3 consecutive failures (streak now ${row.consecutive_failures})`);
    expect(p.body).toContain(`href="/jobs/${row.finalizer_job_id}"`);
    expect(p.body).toContain(`href="/jobs?batch=${batchId}"`);
    await app.close();
  });

  it('the children link lists exactly the batch children; a bad batch id there is 400', async () => {
    const app = await mount();
    const p = await get(app, `/jobs?batch=${batchId}`);
    expect(p.status).toBe(200);
    for (const id of childIds) expect(p.body).toContain(`/jobs/${id}"`);
    expect(p.body.match(/<a href="\/jobs\/[0-9a-f-]{36}">/g)?.length).toBe(4);
    expect((await get(app, '/jobs?batch=nope')).status).toBe(400);
    await app.close();
  });

  it('metadata is shown only to users who may read payloads', async () => {
    await db.pool.query(`UPDATE ${s()}.batches SET metadata = $2 WHERE id = $1`, [
      batchId,
      { owner: 'x'.repeat(300) },
    ]);
    const reader = await mount({ maxShownChars: 100 });
    const shown = await get(reader, `/batches/${batchId}`);
    expect(shown.body).toContain('&quot;owner&quot;');
    expect(shown.body).toMatch(/more characters not shown/);
    await reader.close();
    const support = await mount({ auth: async () => ({ user: 's', readPayloads: false }) });
    const hidden = await get(support, `/batches/${batchId}`);
    expect(hidden.body).not.toContain('owner');
    expect(hidden.text).toContain('Hidden: you may not read payloads');
    await support.close();
  });

  it('a bad batch id answers 400, an unknown one 404', async () => {
    const app = await mount();
    const bad = await get(app, '/batches/not-a-uuid');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('must be a batch id (a UUID)');
    expect((await get(app, '/batches/lookup?id=xyz')).status).toBe(400);
    const unknown = await get(app, '/batches/0190a5b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b');
    expect(unknown.status).toBe(404);
    const found = await app.inject({ method: 'GET', url: `/batches/lookup?id=${batchId.toUpperCase()}` });
    expect(found.statusCode).toBe(303);
    expect(found.headers.location).toBe(`/batches/${batchId}`);
    await app.close();
  });

  it('lists batches with the listBatches filters and keyset pages; bad filters answer 400', async () => {
    const app = await mount();
    const all = await get(app, '/batches');
    expect(all.status).toBe(200);
    expect(all.body).toContain(`href="/batches/${batchId}"`);
    expect((await get(app, '/batches?state=active&queue=ui_batch_q')).body).toContain(batchId);
    expect((await get(app, '/batches?state=finished')).body).not.toContain(batchId);
    expect((await get(app, '/batches?queue=elsewhere')).text).toContain('No batch matches.');
    expect((await get(app, '/batches?state=sideways')).status).toBe(400);
    expect((await get(app, '/batches?cursor=garbage')).status).toBe(400);

    // 50 a page: 50 more batches push the first one to the second page.
    for (let i = 0; i < 50; i++)
      await tq.enqueueBatch([batchItem(kid, {})], { failurePolicy: new AbortBatchAfter(1) });
    const first = await get(app, '/batches?queue=ui_batch_q');
    expect(first.body.match(/<a href="\/batches\/[0-9a-f-]{36}">/g)?.length).toBe(50);
    expect(first.body).not.toContain(`href="/batches/${batchId}"`);
    const next = /<a rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toMatch(/^\/batches\?queue=ui_batch_q&cursor=/);
    const second = await get(app, next!);
    expect(second.body).toContain(`href="/batches/${batchId}"`);
    expect(second.body).not.toContain('rel="next"');
    await app.close();
  });
});
