/**
 * A worker built with a credential provider: each of its pools is a reloadable resource;
 * `worker.reloadCredentials()` (the path SIGHUP and `reloadInterval` take) swaps in new pools while
 * jobs keep running, and a hung provider makes a pool's reload fail at `reloadFactoryTimeout` with
 * the old pools still serving.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import type { PgCredential, PgCredentialProvider } from '../../src/credentials/credential-types.js';
import type { ReloadableResource } from '../../src/credentials/reloadable-resource.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { testWorkerSettings } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

const DSN = `${TEST_DSN}${TEST_DSN.includes('?') ? '&' : '?'}sslmode=disable`;

/** A provider that can be made to hang (a token endpoint that stops answering). */
class SwitchableProvider implements PgCredentialProvider {
  calls = 0;
  hang = false;
  async getPgCredential(): Promise<PgCredential> {
    this.calls++;
    if (this.hang) return new Promise<never>(() => undefined);
    return { password: 'unused-under-trust' };
  }
}

const tick = actor({ name: 'creds_tick', payload: z.object({ n: z.number().int() }) }, async () => undefined);

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;
const provider = new SwitchableProvider();
const admin = new pg.Pool({ connectionString: TEST_DSN, max: 1 });

beforeAll(async () => {
  db = await migratedSchema('creds');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, maxPoolSize: 2 });
  worker = new Worker({
    actors: [tick],
    settings: testWorkerSettings(db.schema, { pgDsn: DSN, reloadFactoryTimeout: '1s' }),
    logger: silentLogger,
    pgCredentialProvider: provider,
  });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await tq?.close();
  await db?.drop();
  await admin.end();
});

const reloadables = (): ReloadableResource[] =>
  (worker as unknown as { reloadables: ReloadableResource[] }).reloadables;

const ROLES = ['driver', 'heartbeatDriver', 'claimDriver', 'settleDriver'] as const;

/** Server pids of the connections each pool of this worker holds now. */
function poolPids(): number[][] {
  const backend = worker.jobsBackend as unknown as Record<string, { pool: pg.Pool }>;
  return ROLES.map((role) =>
    (backend[role]!.pool as unknown as { _clients: { processID: number }[] })._clients.map(
      (c) => c.processID,
    ),
  );
}

/** Which of `pids` still have a server session. */
async function alive(pids: number[]): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])',
    [pids],
  );
  return rows.map((r) => r.pid);
}

async function runJobs(from: number, count: number): Promise<void> {
  const handles = [];
  for (let n = from; n < from + count; n++) handles.push(await tq.enqueue(tick, { n }));
  for (const h of handles) await h.wait({ timeout: '20s' });
}

describe('worker pools built through a credential provider', () => {
  it('are the four reloadable resources, fetched once each at start', () => {
    expect(reloadables().map((r) => r.name)).toEqual([
      'pg:taskq-worker',
      'pg:taskq-heartbeat',
      'pg:taskq-claim',
      'pg:taskq-settle',
    ]);
    expect(provider.calls).toBeGreaterThanOrEqual(4);
  });

  it('reload swaps every pool for a new one; jobs run before, during and after', async () => {
    await runJobs(0, 20);
    const before = poolPids();
    expect(before.every((pids) => pids.length > 0)).toBe(true);
    const during = runJobs(100, 50);
    const outcomes = await worker.reloadCredentials();
    expect(outcomes.map((o) => [o.resource, o.ok])).toEqual(reloadables().map((r) => [r.name, true]));
    await during;
    await runJobs(200, 20);
    // Every pool is a new one, and the old pools' sessions end once their work is done.
    const after = poolPids();
    for (const [i, pids] of after.entries()) expect(pids.filter((p) => before[i]!.includes(p))).toEqual([]);
    await waitFor(async () => (await alive(before.flat())).length === 0, 15_000, 'the old pools to close');
    const { rows } = await admin.query<{ status: string; n: number }>(
      `SELECT status::text, count(*)::int AS n FROM "${db.schema}".jobs GROUP BY 1`,
    );
    expect(rows).toEqual([{ status: 'succeeded', n: 90 }]);
  });

  it('a hung provider fails each reload at reloadFactoryTimeout, and the old pools keep serving', async () => {
    const before = poolPids();
    provider.hang = true;
    try {
      const reloading = worker.reloadCredentials();
      // Jobs run while the reload waits on the provider.
      await runJobs(300, 10);
      const outcomes = await reloading;
      expect(outcomes.map((o) => [o.ok, o.timedOut])).toEqual(reloadables().map(() => [false, true]));
    } finally {
      provider.hang = false;
    }
    await runJobs(400, 10);
    expect(worker.phase).toBe('running');
    // No pool was replaced.
    const after = poolPids();
    for (const [i, pids] of after.entries()) expect(pids.some((p) => before[i]!.includes(p))).toBe(true);
  });
});
