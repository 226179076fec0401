/**
 * The jobs list's identity-key and state filters over HTTP (`app.inject`, real Postgres): they
 * select what the API selects, a bad state is refused naming the field, and cancel-by-filter never
 * takes `state` alone (that would be every cancellable job).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { adminPlugin } from '../../src/admin/index.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const work = actor({ name: 'jf_work', queue: 'jf_q' }, async () => undefined);

let db: TestSchema;
let tq: TaskQ;
let app: FastifyInstance;
let keyed: string;
let done: string;

beforeAll(async () => {
  db = await migratedSchema('admin_job_filters');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  keyed = (await tq.enqueue(work, {}, { identityKey: 'customer-42' })).jobId;
  await tq.enqueue(work, {});
  done = (await tq.enqueue(work, {})).jobId;
  await db.pool.query(
    `UPDATE "${db.schema}".jobs SET status = 'succeeded', attempt = 1, finished_at = clock_timestamp() WHERE id = $1`,
    [done],
  );
  app = Fastify();
  await app.register(adminPlugin, { prefix: '/admin', tq, environment: 'dev', actionsEnabled: true });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await tq?.close();
  await db?.drop();
});

/** The job ids the list page links to. */
function idsOn(body: string): string[] {
  return [...body.matchAll(/href="\/admin\/jobs\/([0-9a-f-]{36})"/g)].map((m) => m[1] as string);
}

describe('jobs list: identity key and state filters', () => {
  it('identity selects the jobs holding that key', async () => {
    const r = await app.inject({ url: '/admin/jobs?identity=customer-42' });
    expect(r.statusCode).toBe(200);
    expect(idsOn(r.body)).toEqual([keyed]);
  });

  it('state=active selects live jobs, state=finished terminal ones', async () => {
    const active = await app.inject({ url: '/admin/jobs?state=active&queue=jf_q' });
    expect(idsOn(active.body).sort()).not.toContain(done);
    expect(idsOn(active.body)).toHaveLength(2);
    const finished = await app.inject({ url: '/admin/jobs?state=finished&queue=jf_q' });
    expect(idsOn(finished.body)).toEqual([done]);
  });

  it('refuses an unknown state with 400 naming the field', async () => {
    const r = await app.inject({ url: '/admin/jobs?state=zombie' });
    expect(r.statusCode).toBe(400);
    expect(r.body).toContain('state');
    expect(r.body).toContain('&quot;active&quot; or &quot;finished&quot;');
  });

  it('cancel-by-filter refuses state alone, and offers no Cancel matching link for it', async () => {
    const list = await app.inject({ url: '/admin/jobs?state=active' });
    expect(list.body).not.toContain('id="cancel-matching"');
    const preview = await app.inject({ url: '/admin/jobs/cancel-preview?state=active' });
    expect(preview.statusCode).toBe(400);
    expect(preview.body).toContain('Choose at least one filter');
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status = 'cancelled'`,
    );
    expect(rows[0]).toEqual({ n: 0 });
    const narrowed = await app.inject({
      url: '/admin/jobs/cancel-preview?state=active&identity=customer-42',
    });
    expect(narrowed.statusCode).toBe(200);
    expect(narrowed.body.replace(/\s+/g, ' ')).toMatch(/\b1 job/);
  });
});
