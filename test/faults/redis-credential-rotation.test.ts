/**
 * Rotating a Redis ACL user's password under load. A worker process runs jobs that take a Redis
 * token bucket and publish progress, on a redis-server of the test's own whose ACL user `u` is the
 * only way in; its provider reads a file. The test rotates `u`'s password, rewrites the file, sends
 * SIGHUP, then kills every connection of `u`: the worker's clients come back with the new password,
 * the old one no longer works, no job is lost or fails, and the worker never exits. The machine's
 * own Redis is never touched; Postgres is the test database, in a schema of this file's own.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { progressGlobalChannel } from '../../src/progress/progress-channels.js';
import { rotating } from '../fixtures/redis-credential-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { aclPasswordWorks, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { makeScratchDir } from '../helpers/scratch-dir.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let server: RedisServer;
let admin: Redis;
let listener: Redis;
let db: TestSchema;
let tq: TaskQ;
let worker: WorkerProcess | null = null;
let credFile: string;

const WORKER_CLIENTS = ['taskq-ratelimit', 'taskq-progress-publisher'];

/** The ids of user `u`'s connections named `name` (CLIENT LIST). */
async function idsOf(name: string): Promise<string[]> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .filter((l) => l.includes(` name=${name} `) && l.includes(' user=u '))
    .map((l) => /^id=(\d+)/.exec(l)![1]!);
}

async function statusCounts(): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM "${db.schema}".jobs GROUP BY status`,
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  // `u` is the worker's only way in; the test itself stays the `default` user.
  await admin.call('ACL', 'SETUSER', 'u', 'on', '>old-secret', '~*', '&*', '+@all');
  listener = new Redis(server.url);
  credFile = join(makeScratchDir('taskq-redis-cred-'), 'redis-credential.json');
  writeFileSync(credFile, JSON.stringify({ username: 'u', password: 'old-secret' }));
  db = await migratedSchema('rediscredrot');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});

afterAll(async () => {
  if (worker && worker.proc.exitCode === null) await worker.stop();
  await tq?.close();
  listener?.disconnect();
  admin?.disconnect();
  await db?.drop();
  await server?.destroy();
});

describe('Redis ACL password rotation under load', () => {
  it('SIGHUP, then killed connections come back with the new password; no job lost or failed', async () => {
    const w = (worker = startWorkerProcess(
      db.schema,
      {
        TASKQ_QUEUES: 'rot',
        TASKQ_REDIS_URL: server.url,
        TQ_REDIS_CRED_FILE: credFile,
        TASKQ_LOG_LEVEL: 'info',
        TASKQ_MAX_CONCURRENCY: '8',
      },
      'test/fixtures/redis-credential-worker.ts',
    ));
    await w.ready;

    const progressAt: number[] = [];
    await listener.subscribe(progressGlobalChannel(db.schema));
    listener.on('message', () => progressAt.push(performance.now()));

    // Steady load: a few jobs every few milliseconds until told to stop.
    let enqueued = 0;
    let loading = true;
    const load = (async () => {
      while (loading) {
        await Promise.all([0, 1, 2].map(() => tq.enqueue(rotating, { i: enqueued++ })));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    for (const name of WORKER_CLIENTS)
      await waitFor(
        async () => (await idsOf(name)).length === 1,
        20_000,
        `the worker's ${name} connection as u`,
      );
    await waitFor(() => progressAt.length >= 20, 20_000, 'progress through Redis before the rotation');
    const before = Object.fromEntries(
      await Promise.all(WORKER_CLIENTS.map(async (n) => [n, await idsOf(n)])),
    );

    // Rotate: the ACL user's password, then the file the provider reads, then SIGHUP.
    await admin.call('ACL', 'SETUSER', 'u', 'resetpass', '>new-secret');
    writeFileSync(credFile, JSON.stringify({ username: 'u', password: 'new-secret' }));
    w.proc.kill('SIGHUP');
    const reloaded = (): { resources: string[]; failed: string[] } | null => {
      const line = w.stdout.find((l) => l.includes('"credentials-reloaded"'));
      return line ? (JSON.parse(line) as { resources: string[]; failed: string[] }) : null;
    };
    await waitFor(() => reloaded() !== null, 20_000, 'the credentials-reloaded line');
    expect(reloaded()!.failed).toEqual([]);
    expect(reloaded()!.resources).toEqual(expect.arrayContaining(['redis:ratelimit', 'redis:progress']));

    // Redis keeps sessions that authenticated before the change: end them, the worker must reconnect.
    const killed = Number(await admin.call('CLIENT', 'KILL', 'USER', 'u'));
    expect(killed).toBeGreaterThanOrEqual(2);
    const killedAt = performance.now();
    for (const name of WORKER_CLIENTS)
      await waitFor(
        async () => {
          const ids = await idsOf(name);
          return ids.length === 1 && !before[name]!.includes(ids[0]!);
        },
        20_000,
        `the worker's ${name} connection to come back as u`,
      );
    await waitFor(
      () => progressAt.filter((t) => t > killedAt).length >= 20,
      20_000,
      'progress through Redis after the reconnect',
    );
    // The load keeps running through the new connections: jobs keep succeeding, each taking the
    // bucket in Redis (the rate-limit connection's last command is the script).
    const succeededAtKill = (await statusCounts()).succeeded ?? 0;
    await waitFor(
      async () => ((await statusCounts()).succeeded ?? 0) >= succeededAtKill + 100,
      30_000,
      '100 more jobs to succeed after the reconnect',
    );
    const rl = ((await admin.call('CLIENT', 'LIST')) as string)
      .split('\n')
      .find((l) => l.includes(' name=taskq-ratelimit '));
    expect(rl).toMatch(/ cmd=evalsha /);
    expect(await aclPasswordWorks(server.url, 'u', 'old-secret')).toBe(false);
    expect(await aclPasswordWorks(server.url, 'u', 'new-secret')).toBe(true);

    loading = false;
    await load;
    await waitFor(
      async () => (await statusCounts()).succeeded === enqueued,
      60_000,
      `all ${enqueued} jobs to succeed`,
    );
    const counts = await statusCounts();
    expect(counts).toEqual({ succeeded: enqueued });
    const wrongPass = w.stdout.filter((l) => l.includes('WRONGPASS'));
    // Acquisitions in the moment between the kill and the reconnect fall back to Postgres (by
    // design); none failed for want of a valid credential.
    const fallbacks = w.stdout.filter((l) => l.includes('"ratelimit-redis-fallback"'));
    expect(wrongPass).toEqual([]);
    expect(w.stdout.filter((l) => /NOAUTH|WRONGPASS|redis-credential-fetch-failed/.test(l))).toEqual([]);
    console.log(
      `enqueued ${enqueued}; killed ${killed} connections; progress events ${progressAt.length} ` +
        `(${progressAt.filter((t) => t > killedAt).length} after the kill); Postgres fallbacks ${fallbacks.length}`,
    );
    expect(w.proc.exitCode).toBeNull();
    const exit = await w.stop();
    expect(exit.code).toBe(0);
  }, 120_000);
});
