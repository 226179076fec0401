/**
 * On Postgres the database clock (`clock_timestamp()`) decides when a schedule is due and where a
 * new chain starts; the worker's own clock plays no part. The process clock is moved hours away
 * with fake timers (Date only: timers and I/O run for real) and the decisions must not move.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { silentLogger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { MaintenanceLeader } from '../../src/worker/maintenance/maintenance-leader.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

const ping = actor({ name: 'dbc_ping' }, async () => undefined);
const HOUR = 3_600_000;

let db: TestSchema;
let tq: TaskQ;
let leader: MaintenanceLeader;

beforeAll(async () => {
  db = await migratedSchema('cronclk');
  const backend = new PostgresBackend(db.driver, { schema: db.schema });
  tq = new TaskQ(backend, { capacityCacheTtl: 0 });
  const { settings } = loadWorkerSettings({ overrides: { schema: db.schema } });
  leader = new MaintenanceLeader(
    backend,
    settings,
    { workerId: '018f0000-0000-7000-8000-0000000000d1', hostname: 'clock-test' },
    silentLogger,
    (reason) => {
      throw new Error(`fatal: ${reason}`);
    },
    { actors: new Map([[ping.name, ping]]), factories: new Map() },
  );
  expect(await leader.elector.runOnce()).toBe(true);
});
afterAll(async () => {
  await leader.elector.stop();
  await db.drop();
});
beforeEach(async () => {
  await q(`TRUNCATE $S.cron_schedules, $S.cron_fires, $S.jobs CASCADE`);
});
afterEach(() => {
  vi.useRealTimers();
});

const q = (sql: string, v: unknown[] = []) => db.pool.query(sql.replaceAll('$S', `"${db.schema}"`), v);
const dbNow = async (): Promise<Date> => (await q(`SELECT clock_timestamp() AS now`)).rows[0].now as Date;
/** Moves the process's Date (only) `ms` away from the real time. */
const skewProcessClock = (ms: number): void => {
  const real = Date.now();
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(real + ms);
};
const jobsOf = async (scheduleId: string): Promise<number> =>
  Number(
    (await q(`SELECT count(*)::int AS n FROM $S.jobs WHERE metadata->>'schedule_id' = $1`, [scheduleId]))
      .rows[0].n,
  );

describe('cron on Postgres follows the database clock', () => {
  it("a new schedule's first slot follows the database clock, not the process's", async () => {
    for (const skew of [-6 * HOUR, 6 * HOUR]) {
      skewProcessClock(skew);
      const before = await dbNow();
      const h = await tq.createSchedule(ping, '* * * * * *', { name: `s${skew}` });
      const after = await dbNow();
      vi.useRealTimers();
      // Every second: the first slot is the database's next whole second, hours from the process's.
      const slot = h.record.nextFireAt!.getTime();
      expect(slot).toBeGreaterThan(before.getTime());
      expect(slot).toBeLessThanOrEqual(Math.floor(after.getTime() / 1000) * 1000 + 1000);
      expect(h.record.createdAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(h.record.createdAt.getTime()).toBeLessThanOrEqual(after.getTime());
    }
  });

  it('an expression changed while the process clock is off reseeds from the database clock', async () => {
    const h = await tq.createSchedule(ping, '0 0 1 1 *');
    skewProcessClock(-12 * HOUR);
    const before = await dbNow();
    const up = await tq.updateSchedule(h.id, { expression: '* * * * * *' });
    const after = await dbNow();
    expect(up.nextFireAt!.getTime()).toBeGreaterThan(before.getTime());
    expect(up.nextFireAt!.getTime()).toBeLessThanOrEqual(Math.floor(after.getTime() / 1000) * 1000 + 1000);
  });

  it('a slot still in the database future does not fire, however far ahead the process clock is', async () => {
    const h = await tq.createSchedule(ping, '0 * * * *');
    const next = h.record.nextFireAt!;
    // The process believes the slot passed hours ago.
    skewProcessClock(next.getTime() - Date.now() + 5 * HOUR);
    expect(Date.now()).toBeGreaterThan(next.getTime());
    const report = await leader.cron.runOnce();
    expect(report).toEqual({ fired: 0, failed: 0, stale: 0, disabled: 0 });
    expect(await jobsOf(h.id)).toBe(0);
    expect((await h.refresh()).nextFireAt).toEqual(next);
  });

  it('a slot due on the database clock fires even when the process clock says it is not due', async () => {
    const h = await tq.createSchedule(ping, '0 * * * *');
    // Made due on the database clock: its slot is one second behind clock_timestamp().
    await q(
      `UPDATE $S.cron_schedules SET next_fire_at = date_trunc('second', clock_timestamp()) - interval '1 second' WHERE id = $1`,
      [h.id],
    );
    const slot = (await h.refresh()).nextFireAt!;
    // The process believes the slot is hours away.
    skewProcessClock(-5 * HOUR);
    expect(Date.now()).toBeLessThan(slot.getTime());
    const report = await leader.cron.runOnce();
    expect(report.fired).toBe(1);
    expect(await jobsOf(h.id)).toBe(1);
    const fires = await h.history();
    expect(fires.map((f) => f.fireAt)).toEqual([slot]);
    // The job is runnable on the database clock (pending, not held back by the process's).
    const job = await tq.getRow(fires[0]!.jobId);
    expect(job).toMatchObject({ status: 'pending' });
    expect(job!.metadata.fire_at).toBe(slot.toISOString());
    const after = await h.refresh();
    expect(after.nextFireAt!.getTime()).toBeGreaterThan(slot.getTime());
    expect(after.lastFiredAt!.getTime()).toBeGreaterThanOrEqual(slot.getTime());
    expect(after.lastFiredAt!.getTime()).toBeLessThanOrEqual((await dbNow()).getTime());
  });

  it('runNow makes it due at the database clock, whatever the process clock says', async () => {
    const h = await tq.createSchedule(ping, '0 0 1 1 *');
    skewProcessClock(10 * HOUR);
    const before = await dbNow();
    const rec = await h.runNow();
    const after = await dbNow();
    expect(rec.nextFireAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(rec.nextFireAt!.getTime()).toBeLessThanOrEqual(after.getTime());
    expect((await leader.cron.runOnce()).fired).toBe(1);
    expect(await jobsOf(h.id)).toBe(1);
  });
});
