/**
 * The leader's cron loop (`MaintenanceLeader.cron`) on the in-memory backend, driven tick by tick
 * through `runOnce()` while a FakeClock moves: slot order and phase, catch-up after an absence,
 * auto-disable, what a fired job carries, and DST transitions in real zones for each strategy.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor, type AnyActor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { ScheduleHandle } from '../../src/client/schedules.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { JobRow } from '../../src/backend/types.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import type { PayloadFactory } from '../../src/cron/cron-declaration.js';
import { nextFireTimes } from '../../src/cron/next-fires.js';
import type { DstStrategy } from '../../src/cron/dst-strategy.js';
import type { Logger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { MaintenanceLeader } from '../../src/worker/maintenance/maintenance-leader.js';

const ping = actor({ name: 'cf_ping' }, async () => undefined);
const typed = actor({ name: 'cf_typed', payload: z.object({ n: z.number() }) }, async () => undefined);
const MIN = 60_000;
const HOUR = 60 * MIN;

interface Logged {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}

/** A leader on a fresh in-memory backend whose clock starts at `start`. */
async function setup(
  start: string,
  o: {
    catchUpWindowMs?: number;
    threshold?: number;
    factories?: Record<string, PayloadFactory>;
    actors?: AnyActor[];
    payloadMaxBytes?: number;
  } = {},
) {
  const clock = new FakeClock(new Date(start));
  const backend = new InMemoryBackend({ clock });
  const tq = new TaskQ(backend, { capacityCacheTtl: 0 });
  const logs: Logged[] = [];
  const logger: Logger = {
    debug() {},
    info: (obj, msg) => logs.push({ level: 'info', msg: msg ?? '', obj: obj as Record<string, unknown> }),
    warn: (obj, msg) => logs.push({ level: 'warn', msg: msg ?? '', obj: obj as Record<string, unknown> }),
    error: (obj, msg) => logs.push({ level: 'error', msg: msg ?? '', obj: obj as Record<string, unknown> }),
    child: () => logger,
  };
  const { settings } = loadWorkerSettings({
    overrides: {
      ...(o.catchUpWindowMs !== undefined ? { cronCatchUpWindow: o.catchUpWindowMs } : {}),
      ...(o.threshold !== undefined ? { cronAutoDisableThreshold: o.threshold } : {}),
      ...(o.payloadMaxBytes !== undefined ? { payloadMaxBytes: o.payloadMaxBytes } : {}),
    },
  });
  const actors = o.actors ?? [ping, typed];
  const leader = new MaintenanceLeader(
    backend,
    settings,
    { workerId: '018f0000-0000-7000-8000-0000000000f1', hostname: 'cron-test' },
    logger,
    (reason) => {
      throw new Error(`fatal: ${reason}`);
    },
    {
      actors: new Map(actors.map((a) => [a.name, a])),
      factories: new Map(Object.entries(o.factories ?? {})),
    },
  );
  const seen = new Set<string>();
  /** Every job not returned before, oldest first. */
  const newJobs = async (): Promise<JobRow[]> => {
    const out: JobRow[] = [];
    let cursor: string | null = null;
    do {
      const page = await tq.list(cursor === null ? { limit: 1000 } : { limit: 1000, cursor });
      for (const j of page.jobs)
        if (!seen.has(j.id)) {
          seen.add(j.id);
          out.push((await tq.getRow(j.id))!);
        }
      cursor = page.nextCursor;
    } while (cursor !== null);
    return out.sort((a, b) => fireAt(a).getTime() - fireAt(b).getTime());
  };
  /** One tick of the leader at the clock's time: the election, then the cron loop; the jobs it made. */
  const tick = async (): Promise<JobRow[]> => {
    expect(await leader.elector.runOnce()).toBe(true);
    await leader.cron.runOnce();
    const jobs = await newJobs();
    // Never before its slot.
    for (const j of jobs) expect(fireAt(j).getTime()).toBeLessThanOrEqual(clock.now().getTime());
    return jobs;
  };
  /** Moves the clock to `to` in steps of `stepMs`, ticking at each; every fired job with the tick time. */
  const stepTo = async (to: Date, stepMs: number): Promise<{ job: JobRow; at: Date }[]> => {
    const out: { job: JobRow; at: Date }[] = [];
    while (clock.now().getTime() < to.getTime()) {
      clock.moveTo(Math.min(clock.now().getTime() + stepMs, to.getTime()));
      for (const job of await tick()) out.push({ job, at: clock.now() });
    }
    return out;
  };
  return { clock, backend, tq, leader, logs, tick, stepTo, newJobs };
}

const fireAt = (j: JobRow): Date => new Date(j.metadata.fire_at as string);
const iso = (d: Date): string => d.toISOString();

describe('cron loop: order and phase', () => {
  it('fires each slot once, in order, never before it; a late tick keeps the phase', async () => {
    const t = await setup('2026-06-01T12:00:30Z');
    const h = await t.tq.createSchedule(ping, '*/5 * * * *');
    expect(h.record.nextFireAt).toEqual(new Date('2026-06-01T12:05:00Z'));
    t.clock.moveTo(new Date('2026-06-01T12:04:59.999Z'));
    expect(await t.tick()).toEqual([]);
    t.clock.moveTo(new Date('2026-06-01T12:05:00Z'));
    expect((await t.tick()).map((j) => iso(fireAt(j)))).toEqual(['2026-06-01T12:05:00.000Z']);
    expect(await t.tick()).toEqual([]);
    // A tick 2.5 minutes late fires 12:15 and goes on at 12:20, not 12:22:30.
    t.clock.moveTo(new Date('2026-06-01T12:10:00Z'));
    expect((await t.tick()).map((j) => iso(fireAt(j)))).toEqual(['2026-06-01T12:10:00.000Z']);
    t.clock.moveTo(new Date('2026-06-01T12:17:30Z'));
    expect((await t.tick()).map((j) => iso(fireAt(j)))).toEqual(['2026-06-01T12:15:00.000Z']);
    expect((await h.refresh()).nextFireAt).toEqual(new Date('2026-06-01T12:20:00Z'));
    t.clock.moveTo(new Date('2026-06-01T12:19:59Z'));
    expect(await t.tick()).toEqual([]);
    t.clock.moveTo(new Date('2026-06-01T12:20:00Z'));
    expect((await t.tick()).map((j) => iso(fireAt(j)))).toEqual(['2026-06-01T12:20:00.000Z']);
    // Stepping an hour in odd steps: every slot exactly once, in order, as nextFireTimes says.
    const fired = await t.stepTo(new Date('2026-06-01T13:20:00Z'), 7 * 1000 + 333);
    expect(fired.map((f) => iso(fireAt(f.job)))).toEqual(
      nextFireTimes(
        { expression: '*/5 * * * *', timezone: 'UTC', dstStrategy: 'skip' },
        new Date('2026-06-01T12:20:00Z'),
        12,
      ).map(iso),
    );
    const hist = await h.history(100);
    expect(hist).toHaveLength(16);
    expect(new Set(hist.map((f) => f.fireAt.getTime())).size).toBe(16);
  });

  it('carries the identity key and stamps schedule_id, schedule_name and fire_at', async () => {
    const t = await setup('2026-06-01T12:00:30Z');
    const h = await t.tq.createSchedule(ping, '* * * * *', {
      name: 'ik',
      identityKey: 'tenant-7',
      payload: { x: 1 },
    });
    t.clock.moveTo(new Date('2026-06-01T12:01:00Z'));
    const [job] = await t.tick();
    expect(job).toMatchObject({
      actor: 'cf_ping',
      identityKey: 'tenant-7',
      payload: { x: 1 },
      status: 'pending',
    });
    expect(job!.metadata).toMatchObject({
      schedule_id: h.id,
      schedule_name: 'ik',
      fire_at: '2026-06-01T12:01:00.000Z',
    });
    expect((await h.history(1))[0]).toMatchObject({
      jobId: job!.id,
      fireAt: new Date('2026-06-01T12:01:00Z'),
    });
  });
});

describe('cron loop: catch-up after an absence', () => {
  it('within the window every missed slot fires in order', async () => {
    const t = await setup('2026-06-01T12:00:30Z', { catchUpWindowMs: HOUR });
    await t.tq.createSchedule(ping, '*/10 * * * *');
    t.clock.moveTo(new Date('2026-06-01T12:55:00Z'));
    const jobs = await t.tick();
    expect(jobs.map((j) => iso(fireAt(j)))).toEqual([
      '2026-06-01T12:10:00.000Z',
      '2026-06-01T12:20:00.000Z',
      '2026-06-01T12:30:00.000Z',
      '2026-06-01T12:40:00.000Z',
      '2026-06-01T12:50:00.000Z',
    ]);
    expect(t.logs.filter((l) => l.msg === 'cron-slots-skipped')).toEqual([]);
  });

  it('longer than the window, only the in-window slots fire; the older ones are skipped and logged', async () => {
    const t = await setup('2026-06-01T12:00:30Z', { catchUpWindowMs: HOUR });
    const h = await t.tq.createSchedule(ping, '*/10 * * * *');
    t.clock.moveTo(new Date('2026-06-01T15:05:00Z'));
    const jobs = await t.tick();
    expect(jobs.map((j) => iso(fireAt(j)))).toEqual([
      '2026-06-01T14:10:00.000Z',
      '2026-06-01T14:20:00.000Z',
      '2026-06-01T14:30:00.000Z',
      '2026-06-01T14:40:00.000Z',
      '2026-06-01T14:50:00.000Z',
      '2026-06-01T15:00:00.000Z',
    ]);
    const skipped = t.logs.filter((l) => l.msg === 'cron-slots-skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.obj).toMatchObject({
      scheduleId: h.id,
      from: new Date('2026-06-01T12:10:00Z'),
      to: new Date('2026-06-01T14:10:00Z'),
    });
    expect((await h.refresh()).nextFireAt).toEqual(new Date('2026-06-01T15:10:00Z'));
    t.clock.moveTo(new Date('2026-06-01T15:10:00Z'));
    expect((await t.tick()).map((j) => iso(fireAt(j)))).toEqual(['2026-06-01T15:10:00.000Z']);
  });

  it('a slot exactly at the window edge still fires', async () => {
    const t = await setup('2026-06-01T12:00:30Z', { catchUpWindowMs: HOUR });
    await t.tq.createSchedule(ping, '*/10 * * * *');
    t.clock.moveTo(new Date('2026-06-01T15:10:00Z'));
    const jobs = await t.tick();
    expect(jobs.map((j) => iso(fireAt(j)))[0]).toBe('2026-06-01T14:10:00.000Z');
    expect(jobs).toHaveLength(7);
  });
});

describe('cron loop: auto-disable', () => {
  const cases: {
    what: string;
    make: (tq: TaskQ) => Promise<ScheduleHandle>;
    error: RegExp;
    heal: (h: ScheduleHandle, state: { ok: boolean }, tq: TaskQ) => Promise<void>;
  }[] = [
    {
      what: 'a payload factory that throws',
      make: (tq) => tq.createSchedule(ping, '* * * * *', { payloadFactory: 'flaky' }),
      error: /factory down/,
      heal: async (_h, state) => {
        state.ok = true;
      },
    },
    {
      what: 'an actor the leader does not run',
      make: (tq) => tq.createSchedule('cf_nobody', '* * * * *'),
      error: /cf_nobody.*not registered/,
      // Not healed: the test stops once it is disabled.
      heal: async () => undefined,
    },
    {
      what: "a payload failing the actor's schema",
      make: (tq) => tq.createSchedule('cf_typed', '* * * * *', { payload: { n: 'one' } }),
      error: /PayloadValidation|payload/i,
      heal: async (h, _state, tq) => {
        await tq.updateSchedule(h.id, { payload: { n: 1 } });
      },
    },
  ];

  it.each(cases)('disables after the threshold of consecutive failures: $what', async (c) => {
    const state = { ok: false };
    const t = await setup('2026-06-01T12:00:30Z', {
      threshold: 3,
      factories: {
        flaky: () => {
          if (!state.ok) throw new Error('factory down');
          return { from: 'factory' };
        },
      },
    });
    const h = await c.make(t.tq);
    for (let i = 1; i <= 3; i++) {
      t.clock.advance(MIN);
      expect(await t.tick()).toEqual([]);
      const rec = await h.refresh();
      expect(rec.consecutiveFailures).toBe(i);
      expect(rec.lastFireError).toMatch(c.error);
      expect(rec.enabled).toBe(i < 3);
    }
    expect(t.logs.filter((l) => l.msg === 'cron-fire-failed')).toHaveLength(3);
    const off = t.logs.filter((l) => l.msg === 'cron-schedule-auto-disabled');
    expect(off).toHaveLength(1);
    expect(off[0]!.obj).toMatchObject({ scheduleId: h.id, failures: 3 });
    // Disabled: nothing more happens, however long.
    t.clock.advance(10 * MIN);
    expect(await t.tick()).toEqual([]);
    expect((await h.refresh()).consecutiveFailures).toBe(3);
    if (c.what.startsWith('an actor')) return;
    await c.heal(h, state, t.tq);
    expect(await h.enable()).toMatchObject({ enabled: true, consecutiveFailures: 0, lastFireError: null });
    // The slots that passed while it was disabled do not fire; the next one does.
    expect(await t.tick()).toHaveLength(0);
    t.clock.advance(MIN);
    const resumed = await t.tick();
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.metadata.schedule_id).toBe(h.id);
    expect((await h.refresh()).consecutiveFailures).toBe(0);
  });

  it('a success between failures resets the count', async () => {
    let fail = true;
    const t = await setup('2026-06-01T12:00:30Z', {
      threshold: 2,
      factories: {
        sometimes: () => {
          if (fail) throw new Error('no');
          return {};
        },
      },
    });
    const h = await t.tq.createSchedule(ping, '* * * * *', { payloadFactory: 'sometimes' });
    t.clock.advance(MIN);
    await t.tick();
    fail = false;
    t.clock.advance(MIN);
    expect(await t.tick()).toHaveLength(1);
    fail = true;
    t.clock.advance(MIN);
    await t.tick();
    expect(await h.refresh()).toMatchObject({ enabled: true, consecutiveFailures: 1 });
  });
});

/** One DST case: a zone, an expression whose wall time a transition skips or repeats, the night. */
interface DstCase {
  zone: string;
  expression: string;
  /** The clock starts here and steps to `to` (both UTC). */
  from: string;
  to: string;
  /** The UTC instants each strategy fires in [from, to]. */
  expected: Record<DstStrategy, string[]>;
}

const dstCases: Record<string, DstCase> = {
  'America/New_York spring gap (02:30 does not exist)': {
    zone: 'America/New_York',
    expression: '30 2 * * *',
    from: '2026-03-07T12:00:00Z',
    to: '2026-03-09T12:00:00Z',
    expected: {
      skip: ['2026-03-09T06:30:00Z'],
      firstof: ['2026-03-08T07:00:00Z', '2026-03-09T06:30:00Z'],
      allof: ['2026-03-08T07:00:00Z', '2026-03-09T06:30:00Z'],
    },
  },
  'America/New_York autumn overlap (01:30 twice)': {
    zone: 'America/New_York',
    expression: '30 1 * * *',
    from: '2026-10-31T12:00:00Z',
    to: '2026-11-02T12:00:00Z',
    expected: {
      skip: ['2026-11-01T05:30:00Z', '2026-11-02T06:30:00Z'],
      firstof: ['2026-11-01T05:30:00Z', '2026-11-02T06:30:00Z'],
      allof: ['2026-11-01T05:30:00Z', '2026-11-01T06:30:00Z', '2026-11-02T06:30:00Z'],
    },
  },
  'Europe/Berlin spring gap (02:30 does not exist)': {
    zone: 'Europe/Berlin',
    expression: '30 2 * * *',
    from: '2026-03-28T12:00:00Z',
    to: '2026-03-30T12:00:00Z',
    expected: {
      skip: ['2026-03-30T00:30:00Z'],
      firstof: ['2026-03-29T01:00:00Z', '2026-03-30T00:30:00Z'],
      allof: ['2026-03-29T01:00:00Z', '2026-03-30T00:30:00Z'],
    },
  },
  'Europe/Berlin autumn overlap (02:30 twice)': {
    zone: 'Europe/Berlin',
    expression: '30 2 * * *',
    from: '2026-10-24T12:00:00Z',
    to: '2026-10-26T12:00:00Z',
    expected: {
      skip: ['2026-10-25T00:30:00Z', '2026-10-26T01:30:00Z'],
      firstof: ['2026-10-25T00:30:00Z', '2026-10-26T01:30:00Z'],
      allof: ['2026-10-25T00:30:00Z', '2026-10-25T01:30:00Z', '2026-10-26T01:30:00Z'],
    },
  },
  'Australia/Lord_Howe half-hour gap (02:15 does not exist)': {
    zone: 'Australia/Lord_Howe',
    expression: '15 2 * * *',
    from: '2026-10-03T00:00:00Z',
    to: '2026-10-05T00:00:00Z',
    expected: {
      skip: ['2026-10-04T15:15:00Z'],
      firstof: ['2026-10-03T15:30:00Z', '2026-10-04T15:15:00Z'],
      allof: ['2026-10-03T15:30:00Z', '2026-10-04T15:15:00Z'],
    },
  },
  'Australia/Lord_Howe half-hour overlap (01:45 twice)': {
    zone: 'Australia/Lord_Howe',
    expression: '45 1 * * *',
    from: '2026-04-04T00:00:00Z',
    to: '2026-04-06T00:00:00Z',
    expected: {
      skip: ['2026-04-04T14:45:00Z', '2026-04-05T15:15:00Z'],
      firstof: ['2026-04-04T14:45:00Z', '2026-04-05T15:15:00Z'],
      allof: ['2026-04-04T14:45:00Z', '2026-04-04T15:15:00Z', '2026-04-05T15:15:00Z'],
    },
  },
  'Europe/Moscow 2014 move to UTC+3 (01:30 twice, a one-off change)': {
    zone: 'Europe/Moscow',
    expression: '30 1 * * *',
    from: '2014-10-25T12:00:00Z',
    to: '2014-10-27T12:00:00Z',
    expected: {
      skip: ['2014-10-25T21:30:00Z', '2014-10-26T22:30:00Z'],
      firstof: ['2014-10-25T21:30:00Z', '2014-10-26T22:30:00Z'],
      allof: ['2014-10-25T21:30:00Z', '2014-10-25T22:30:00Z', '2014-10-26T22:30:00Z'],
    },
  },
  'America/New_York 2006 rules (spring gap on April 2)': {
    zone: 'America/New_York',
    expression: '30 2 * * *',
    from: '2006-04-01T12:00:00Z',
    to: '2006-04-03T12:00:00Z',
    expected: {
      skip: ['2006-04-03T06:30:00Z'],
      firstof: ['2006-04-02T07:00:00Z', '2006-04-03T06:30:00Z'],
      allof: ['2006-04-02T07:00:00Z', '2006-04-03T06:30:00Z'],
    },
  },
};

describe('cron loop across DST transitions', () => {
  it.each(Object.entries(dstCases))('%s', async (_name, c) => {
    const t = await setup(c.from);
    const strategies: DstStrategy[] = ['skip', 'firstof', 'allof'];
    const handles = new Map<string, DstStrategy>();
    const previews = new Map<DstStrategy, string[]>();
    for (const s of strategies) {
      const h = await t.tq.createSchedule(ping, c.expression, { name: s, timezone: c.zone, dstStrategy: s });
      handles.set(h.id, s);
      previews.set(
        s,
        h
          .nextFireTimes(5)
          .filter((d) => d.getTime() <= new Date(c.to).getTime())
          .map(iso),
      );
    }
    // Step over the nights in 7-minute steps: each slot fires at the first tick at or after it.
    const fired = await t.stepTo(new Date(c.to), 7 * MIN);
    for (const s of strategies) {
      const mine = fired.filter((f) => handles.get(f.job.metadata.schedule_id as string) === s);
      const slots = mine.map((f) => iso(fireAt(f.job)));
      const expected = c.expected[s].map((x) => iso(new Date(x)));
      expect(slots, s).toEqual(expected);
      // One job per slot, each fired within one step of its slot.
      expect(new Set(slots).size, s).toBe(slots.length);
      for (const f of mine) expect(f.at.getTime() - fireAt(f.job).getTime(), s).toBeLessThan(7 * MIN);
      // What the handle previewed is what the loop fired.
      expect(previews.get(s), s).toEqual(expected);
    }
    // The 7-minute steps outlast the lease (the elector takes it again each tick): only cron's logs count.
    expect(t.logs.filter((l) => l.msg.startsWith('cron-')).map((l) => l.msg)).toEqual([]);
  });
});

describe('cron loop: gates', () => {
  it("an operator's stored maxPending holds for fired jobs as it does for enqueue()", async () => {
    const t = await setup('2026-06-01T12:00:30Z', { threshold: 5 });
    const h = await t.tq.createSchedule(ping, '* * * * *');
    await t.tq.enqueue(ping, {});
    await t.newJobs();
    // ping declares no maxPending; the operator sets 1 and one job is pending.
    t.backend.actorConfig.set(ping.name, {
      actor: ping.name,
      queue: 'default',
      maxConcurrent: null,
      maxPending: 1,
      resultTtlMs: null,
      metadata: {},
      updatedAt: t.clock.now(),
    });
    await expect(t.tq.enqueue(ping, {})).rejects.toMatchObject({ name: 'MaxPendingExceededError' });
    t.clock.advance(MIN);
    expect(await t.tick()).toEqual([]);
    expect(await h.refresh()).toMatchObject({ consecutiveFailures: 1 });
    expect(h.record.lastFireError).toMatch(/MaxPending/);
    expect(t.logs.filter((l) => l.msg === 'cron-fire-failed')).toHaveLength(1);
  });
});

describe('cron loop: skipped slots are not successes', () => {
  it('a catch-up that skips every slot keeps the failure count', async () => {
    const t = await setup('2026-06-01T12:00:30Z', {
      threshold: 3,
      catchUpWindowMs: 10 * MIN,
      factories: {
        down: () => {
          throw new Error('still down');
        },
      },
    });
    const h = await t.tq.createSchedule(ping, '0 * * * *', { payloadFactory: 'down' });
    t.clock.moveTo(new Date('2026-06-01T13:00:00Z'));
    await t.tick();
    t.clock.moveTo(new Date('2026-06-01T14:00:00Z'));
    await t.tick();
    expect(await h.refresh()).toMatchObject({ consecutiveFailures: 2, enabled: true });
    // Away from 14:00 to 17:30 with a 10-minute window: 15:00, 16:00 and 17:00 are all skipped.
    t.clock.moveTo(new Date('2026-06-01T17:30:00Z'));
    expect(await t.tick()).toEqual([]);
    expect(t.logs.filter((l) => l.msg === 'cron-slots-skipped')).toHaveLength(1);
    expect(await h.refresh()).toMatchObject({
      consecutiveFailures: 2,
      lastFireError: 'Error: still down',
      lastFiredAt: null,
      nextFireAt: new Date('2026-06-01T18:00:00Z'),
    });
    t.clock.moveTo(new Date('2026-06-01T18:00:00Z'));
    await t.tick();
    expect(await h.refresh()).toMatchObject({ consecutiveFailures: 3, enabled: false });
  });
});

describe("cron loop: the worker's payloadMaxBytes", () => {
  it("bounds a fired job's payload as it bounds the worker's own enqueues", async () => {
    const t = await setup('2026-06-01T12:00:30Z', { payloadMaxBytes: 2048 });
    // Stored by a client with the default 1 MiB bound; the leader's worker allows 2 KiB.
    const big = await t.tq.createSchedule(ping, '* * * * *', {
      name: 'big',
      payload: { b: 'x'.repeat(3000) },
    });
    const small = await t.tq.createSchedule(ping, '* * * * *', {
      name: 'small',
      payload: { b: 'x'.repeat(1000) },
    });
    t.clock.advance(MIN);
    const jobs = await t.tick();
    expect(jobs.map((j) => j.metadata.schedule_id)).toEqual([small.id]);
    expect((await big.refresh()).lastFireError).toMatch(/PayloadTooLarge|2048/);
  });
});
