/**
 * The leader's batch maintenance on Postgres, driven through runOnce()/runNow(): the stale-batch
 * safety net in the sweep loop, and the batch-row prune after the job prune.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { batchItem } from '../../src/client/batch-items.js';
import { TaskQ } from '../../src/client/taskq.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import type { Logger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { MaintenanceLeader } from '../../src/worker/maintenance/maintenance-leader.js';
import { batchRetentionMs } from '../../src/worker/maintenance/retention-scheduler.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const child = actor({ name: 'bm_child', payload: z.object({ n: z.number() }) }, async () => null);
const finalizer = actor({ name: 'bm_final' }, async () => null);

let s: TestSchema;
let tq: TaskQ;
let leader: MaintenanceLeader;
const logged: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
const recording: Logger = {
  debug() {},
  info(o, msg) {
    logged.push({ level: 'info', msg: msg ?? '', fields: o as Record<string, unknown> });
  },
  warn(o, msg) {
    logged.push({ level: 'warn', msg: msg ?? '', fields: o as Record<string, unknown> });
  },
  error() {},
  child: () => recording,
};

const q = (sql: string, v: unknown[] = []) => s.pool.query(sql.replaceAll('$S', `"${s.schema}"`), v);

/** A batch row written directly (no trigger runs on INSERT), finished `finishedAgo` ago or active. */
async function insertBatch(
  id: string,
  o: { status: 'active' | 'complete' | 'aborted'; sealed?: boolean; finishedAgo?: string },
): Promise<void> {
  await q(
    `INSERT INTO $S.batches (id, queue, status, sealed, expected_size, created_at, completed_at)
     VALUES ($1, 'bm', $2, $3, 0, now() - interval '3 days',
             CASE WHEN $4::text IS NULL THEN NULL ELSE now() - $4::interval END)`,
    [id, o.status, o.sealed ?? true, o.finishedAgo ?? null],
  );
}

/** A child of `batchId` in `status`, written directly. */
async function insertChild(batchId: string, status: string, finishedAgo: string | null): Promise<void> {
  await q(
    `INSERT INTO $S.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at, finished_at, attempt, batch_id, metadata)
     VALUES (gen_random_uuid(), 'bm_child', 'bm', '{"n":0}', $2, 1, 'transient', now(),
             CASE WHEN $3::text IS NULL THEN NULL ELSE now() - $3::interval END, 1, $1::uuid,
             jsonb_build_object('batch_id', $1::text))`,
    [batchId, status, finishedAgo],
  );
}

async function batchStatus(id: string): Promise<string | null> {
  const r = await q(`SELECT status FROM $S.batches WHERE id = $1`, [id]);
  return (r.rows[0] as { status: string } | undefined)?.status ?? null;
}

beforeAll(async () => {
  s = await migratedSchema('bmaint');
  const backend = new PostgresBackend(s.driver, { schema: s.schema });
  tq = new TaskQ(backend, { capacityCacheTtl: 0 });
  const { settings } = loadWorkerSettings({
    overrides: {
      schema: s.schema,
      pruneBatchSize: 2,
      pruneRetentionSucceeded: '1h',
      pruneRetentionFailed: '2h',
      pruneRetentionCancelled: '1h',
      pruneRetentionAbandoned: '1h',
    },
  });
  leader = new MaintenanceLeader(
    backend,
    settings,
    { workerId: '018f0000-0000-7000-8000-0000000000b7', hostname: 'test' },
    recording,
    () => {
      throw new Error('fatal');
    },
  );
  expect(await leader.elector.runOnce()).toBe(true);
});
afterAll(async () => {
  await leader.elector.stop();
  await tq.close();
  await s.drop();
});

describe('stale-batch safety net (sweep loop)', () => {
  it('completes an active sealed batch whose children all ended without the trigger, and warns', async () => {
    // A lost accounting update, made on purpose: the trigger is off while the children end.
    const h = await tq.enqueueBatch([batchItem(child, { n: 1 }), batchItem(child, { n: 2 })], {
      finalizer: batchItem(finalizer, {}),
    });
    await q(`ALTER TABLE $S.jobs DISABLE TRIGGER jobs_batch_child_status`);
    try {
      await q(`UPDATE $S.jobs SET status = 'succeeded', finished_at = now() WHERE batch_id = $1`, [
        h.batchId,
      ]);
    } finally {
      await q(`ALTER TABLE $S.jobs ENABLE TRIGGER jobs_batch_child_status`);
    }
    expect(await batchStatus(h.batchId)).toBe('active');

    // Beside it: a batch with a child still pending, and an open (unsealed) batch with no child.
    const waiting = '018f0000-0000-7000-8000-00000000a001';
    const open = '018f0000-0000-7000-8000-00000000a002';
    await insertBatch(waiting, { status: 'active' });
    await insertChild(waiting, 'succeeded', '1 minute');
    await insertChild(waiting, 'pending', null);
    await insertBatch(open, { status: 'active', sealed: false });

    logged.length = 0;
    const report = await leader.sweeps.runOnce();
    expect(report.staleBatchesCompleted).toEqual([h.batchId]);
    const row = (await tq.getBatch(h.batchId))!;
    expect(row.status).toBe('complete');
    expect(row.completedAt).not.toBeNull();
    expect(await batchStatus(waiting)).toBe('active');
    expect(await batchStatus(open)).toBe('active');
    const warning = logged.find((l) => l.msg === 'stale-batches-completed');
    expect(warning).toMatchObject({ level: 'warn', fields: { completed: 1, batchIds: [h.batchId] } });
    expect(warning!.fields.term).toBeDefined();

    // Nothing left to do: the next pass reports nothing and stays quiet.
    logged.length = 0;
    expect((await leader.sweeps.runOnce()).staleBatchesCompleted).toEqual([]);
    expect(logged.filter((l) => l.msg === 'stale-batches-completed')).toEqual([]);
  });

  it('does nothing unless this worker leads', async () => {
    const stale = '018f0000-0000-7000-8000-00000000a003';
    await insertBatch(stale, { status: 'active' });
    await insertChild(stale, 'failed', '1 minute');
    await leader.elector.stop();
    try {
      expect((await leader.sweeps.runOnce()).staleBatchesCompleted).toEqual([]);
      expect(await batchStatus(stale)).toBe('active');
    } finally {
      expect(await leader.elector.runOnce()).toBe(true);
    }
    expect((await leader.sweeps.runOnce()).staleBatchesCompleted).toEqual([stale]);
  });
});

describe('batch-row prune (after the job prune)', () => {
  it('keeps a finished row as long as the longest job retention', () => {
    expect(
      batchRetentionMs({
        succeededMs: 1,
        failedMs: 4,
        cancelledMs: 3,
        abandonedMs: 2,
        archiveMs: 100,
      }),
    ).toBe(4);
  });

  it('deletes only finished, old batch rows left without children, in bounded statements', async () => {
    // Retention here: 2 h (the failed jobs' retention, the longest). pruneBatchSize is 2.
    const ids = {
      // Old, finished, children already gone: deleted (three of them: more than one statement).
      gone1: '018f0000-0000-7000-8000-00000000b001',
      gone2: '018f0000-0000-7000-8000-00000000b002',
      gone3: '018f0000-0000-7000-8000-00000000b003',
      // Old and aborted, its children old enough to be archived by this very prune: deleted.
      archivedNow: '018f0000-0000-7000-8000-00000000b004',
      // Old, but a failed child is still within its retention (kept in jobs): kept.
      childLeft: '018f0000-0000-7000-8000-00000000b005',
      // Finished recently: kept.
      recent: '018f0000-0000-7000-8000-00000000b006',
      // Active (never finished): kept.
      active: '018f0000-0000-7000-8000-00000000b007',
    };
    await insertBatch(ids.gone1, { status: 'complete', finishedAgo: '3 hours' });
    await insertBatch(ids.gone2, { status: 'aborted', finishedAgo: '1 day' });
    await insertBatch(ids.gone3, { status: 'complete', finishedAgo: '2 days' });
    await insertBatch(ids.archivedNow, { status: 'aborted', finishedAgo: '5 hours' });
    await insertChild(ids.archivedNow, 'failed', '5 hours');
    await insertChild(ids.archivedNow, 'cancelled', '5 hours');
    await insertBatch(ids.childLeft, { status: 'complete', finishedAgo: '3 hours' });
    await insertChild(ids.childLeft, 'failed', '90 minutes');
    await insertBatch(ids.recent, { status: 'complete', finishedAgo: '30 minutes' });
    await insertBatch(ids.active, { status: 'active', sealed: false });
    const before = (await q(`SELECT id FROM $S.batches`)).rows.map((r: { id: string }) => r.id);

    logged.length = 0;
    const report = await leader.prune.runNow();
    expect(report).not.toBeNull();
    expect(report!.batchRowsDeleted).toBe(4);
    const after = new Set((await q(`SELECT id FROM $S.batches`)).rows.map((r: { id: string }) => r.id));
    for (const id of [ids.gone1, ids.gone2, ids.gone3, ids.archivedNow]) expect(after.has(id)).toBe(false);
    for (const id of [ids.childLeft, ids.recent, ids.active]) expect(after.has(id)).toBe(true);
    // Rows the earlier tests wrote are all active (or finished just now): none of them went.
    expect(after.size).toBe(before.length - 4);
    expect(
      (
        await q(`SELECT count(*)::int AS n FROM $S.jobs_archive WHERE metadata->>'batch_id' = $1`, [
          ids.archivedNow,
        ])
      ).rows[0],
    ).toEqual({ n: 2 });
    expect(logged.find((l) => l.msg === 'prune-finished')?.fields).toMatchObject({ batchRowsDeleted: 4 });
  });
});
