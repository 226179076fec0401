/**
 * The overview over HTTP (`app.inject`, real Postgres): jobs finished in the last minute per queue
 * and outcome, every registered worker with its age, and the leader's watchdog verdict.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { adminPlugin } from '../../src/admin/index.js';
import { leaderVerdict } from '../../src/admin/overview-page.js';
import type { WorkerObservation } from '../../src/backend/activity-observation.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { LeaderLease } from '../../src/backend/worker-types.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const work = actor({ name: 'ov_work', queue: 'ov_q' }, async () => undefined);
const W_ALIVE = '018f0000-0000-7000-8000-00000000c001';
const W_STALE = '018f0000-0000-7000-8000-00000000c002';

let db: TestSchema;
let tq: TaskQ;
let app: FastifyInstance;

beforeAll(async () => {
  db = await migratedSchema('admin_overview');
  const backend = new PostgresBackend(db.driver, { schema: db.schema });
  tq = new TaskQ(backend);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await tq.enqueue(work, {})).jobId);
  // Three succeeded and one failed a moment ago; one failed an hour ago (outside the window).
  await db.pool.query(
    `UPDATE "${db.schema}".jobs SET status = (CASE WHEN id = ANY($2) THEN 'failed' ELSE 'succeeded' END)::"${db.schema}".job_status,
       attempt = 1, finished_at = clock_timestamp() - (CASE WHEN id = $3 THEN interval '1 hour' ELSE interval '0' END)
     WHERE id = ANY($1)`,
    [ids, [ids[3], ids[4]], ids[4]],
  );
  for (const [workerId, hostname] of [
    [W_ALIVE, 'host-live'],
    [W_STALE, 'host-gone'],
  ] as const)
    await backend.registerWorker({
      workerId,
      hostname,
      pid: 42,
      label: null,
      queues: ['ov_q'],
      maxConcurrency: 8,
      version: 'test',
    });
  await db.pool.query(
    `UPDATE "${db.schema}".workers SET last_seen_at = clock_timestamp() - interval '10 minutes' WHERE id = $1`,
    [W_STALE],
  );
  app = Fastify();
  await app.register(adminPlugin, { prefix: '/admin', tq, environment: 'dev' });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await tq?.close();
  await db?.drop();
});

describe('overview', () => {
  it('shows the last minute’s outcomes per queue, every worker, and no leader yet', async () => {
    const r = await app.inject({ url: '/admin/' });
    expect(r.statusCode).toBe(200);
    const text = r.body.replace(/\s+/g, ' ').replace(/> </g, '><');
    expect(text).toContain('Finished recently');
    expect(text).toContain(
      'ov_q</a></td><td>3</td><td><strong class="status-failed">1</strong></td><td>0</td>',
    );
    expect(text).toContain('Workers (1 alive of 2)');
    expect(text).toContain('host-live, 42');
    expect(text).toMatch(/host-gone, 42.*not alive: over 30 s/);
    expect(text).toContain('Maintenance leader unhealthy: no worker has led yet');
  });
});

describe('leaderVerdict', () => {
  const lease = (valid: boolean): LeaderLease => ({
    workerId: W_ALIVE,
    hostname: 'h',
    term: '3',
    acquiredAt: new Date(0),
    renewedAt: new Date(0),
    expiresAt: new Date(0),
    valid,
  });
  const worker = (alive: boolean): WorkerObservation => ({
    workerId: W_ALIVE,
    hostname: 'h',
    pid: 1,
    label: null,
    queues: [],
    maxConcurrency: 1,
    version: null,
    startedAt: new Date(0),
    lastSeenAt: new Date(0),
    lastSeenAgeSeconds: alive ? 4 : 95,
    alive,
  });

  it('is healthy only with a valid lease held by an alive worker', () => {
    expect(leaderVerdict(lease(true), [worker(true)], 30)).toEqual({
      healthy: true,
      why: 'its worker was seen 4 s ago',
    });
    expect(leaderVerdict(lease(true), [worker(false)], 30).healthy).toBe(false);
    expect(leaderVerdict(lease(true), [], 30).why).toContain('not been seen in the last 30 s');
    expect(leaderVerdict(lease(false), [worker(true)], 30).why).toContain('lease expired');
    expect(leaderVerdict(null, [], 30).why).toContain('no worker has led yet');
  });
});
