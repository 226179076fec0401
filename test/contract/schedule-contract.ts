/**
 * The schedule members of the Backend (`createSchedule` … `fireSchedules`), part of the Backend
 * contract, run unchanged against both backends. Every "now" is the backend's own clock: read
 * through `dueSchedules(…).now` (the database's `clock_timestamp()` on Postgres, the FakeClock in
 * memory) or recorded from the `nextSlot` the backend calls; never the test's clock.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { buildEnqueueArgs } from '../../src/client/enqueue-options.js';
import type { EnqueueArgs } from '../../src/backend/types.js';
import {
  CRON_FIRE_HISTORY,
  type NextSlot,
  type ScheduleCreateArgs,
  type ScheduleFireDecision,
} from '../../src/backend/schedule-types.js';
import type { LeaderSession } from '../../src/backend/worker-types.js';
import { nextScheduleSlot } from '../../src/cron/schedule-slot.js';
import { newJobId } from '../../src/core/ids.js';
import { ScheduleExistsError } from '../../src/errors/schedule-errors.js';
import { LeadershipLostError } from '../../src/errors/leadership-errors.js';
import type { ContractHarness } from './backend-contract.js';

const tick = actor({ name: 'sched_tick' }, async () => undefined);
const other = actor({ name: 'sched_other' }, async () => undefined);
const LEADER_A = '018f0000-0000-7000-8000-00000000d00a';
const LEADER_B = '018f0000-0000-7000-8000-00000000d00b';
const MIN = 60_000;

/** A schedule of `tick` every minute in UTC, overridden by `o`. */
const args = (o: Partial<ScheduleCreateArgs> = {}): ScheduleCreateArgs => ({
  id: newJobId(),
  actor: tick.name,
  name: '',
  cronExpr: '* * * * *',
  timezone: 'UTC',
  dstStrategy: 'skip',
  payloadFactory: null,
  staticPayloadJson: null,
  identityKey: null,
  enabled: true,
  ...o,
});

/** A `nextSlot` that answers `at` whatever the clock says. */
const fixed =
  (at: Date | null): NextSlot =>
  () =>
    at;

/** A job of `a` for one slot, as the leader builds it. */
const jobOf = (a: typeof tick, fireAt: Date, maxPending: number | null = null): EnqueueArgs =>
  buildEnqueueArgs(
    a,
    '{}',
    { metadata: { fire_at: fireAt.toISOString() } },
    { maxPending, idempotencyMaxBytes: 1024 },
  );

export function defineScheduleContract(name: string, makeHarness: () => Promise<ContractHarness>): void {
  describe(`Backend schedule contract: ${name}`, () => {
    let h: ContractHarness;
    let client: TaskQ;

    beforeAll(async () => {
      h = await makeHarness();
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(async () => {
      await h.reset();
      client = new TaskQ(h.backend, { capacityCacheTtl: 0 });
    });

    /** The backend clock's reading. */
    const clockNow = async (): Promise<Date> => (await h.backend.dueSchedules(1)).now;

    /** Every job, counted page by page. */
    const jobCount = async (): Promise<number> => {
      let n = 0;
      let cursor: string | null = null;
      do {
        const page = await client.list(cursor === null ? { limit: 1000 } : { limit: 1000, cursor });
        n += page.jobs.length;
        cursor = page.nextCursor;
      } while (cursor !== null);
      return n;
    };

    /** A due schedule: its next slot is one minute before the backend's now. */
    const dueOne = async (o: Partial<ScheduleCreateArgs> = {}) => {
      const now = await clockNow();
      return h.backend.createSchedule(args(o), fixed(new Date(now.getTime() - MIN)));
    };

    /** One decision firing `slots` of schedule `id` (expected at `slots[0]`), then `next`. */
    const decision = (
      id: string,
      expected: Date,
      slots: Date[],
      next: Date | null,
      o: { failure?: string; maxPending?: number | null; of?: typeof tick } = {},
    ): ScheduleFireDecision => ({
      scheduleId: id,
      expectedNextFireAt: expected,
      fires:
        o.failure === undefined
          ? slots.map((fireAt) => ({ fireAt, job: jobOf(o.of ?? tick, fireAt, o.maxPending ?? null) }))
          : [],
      nextFireAt: next,
      failure: o.failure ?? null,
    });

    describe('create, ensure, read', () => {
      it('creates a schedule whose first slot comes from the backend clock', async () => {
        const seen: Date[] = [];
        const recording: NextSlot = (now, s) => {
          seen.push(now);
          return nextScheduleSlot(now, s);
        };
        const before = await clockNow();
        const rec = await h.backend.createSchedule(
          args({ name: 'n1', staticPayloadJson: '{"a":1}', identityKey: 'k', cronExpr: '*/5 * * * *' }),
          recording,
        );
        const after = await clockNow();
        expect(seen).toHaveLength(1);
        expect(seen[0]!.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(seen[0]!.getTime()).toBeLessThanOrEqual(after.getTime());
        expect(rec.nextFireAt).toEqual(nextScheduleSlot(seen[0]!, rec));
        expect(rec).toMatchObject({
          actor: tick.name,
          name: 'n1',
          cronExpr: '*/5 * * * *',
          timezone: 'UTC',
          dstStrategy: 'skip',
          staticPayload: { a: 1 },
          identityKey: 'k',
          enabled: true,
          lastFiredAt: null,
          lastFireError: null,
          consecutiveFailures: 0,
        });
        expect(rec.createdAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(rec.createdAt.getTime()).toBeLessThanOrEqual(after.getTime());
        expect(await h.backend.getSchedule(rec.id)).toEqual(rec);
      });

      it('refuses a second schedule of the same (actor, name) with ScheduleExistsError and writes nothing', async () => {
        const first = await h.backend.createSchedule(args({ name: 'dup' }), nextScheduleSlot);
        const err = await h.backend
          .createSchedule(args({ name: 'dup', cronExpr: '0 * * * *' }), nextScheduleSlot)
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ScheduleExistsError);
        expect(err).toMatchObject({ code: 'TASKQ_SCHEDULE_EXISTS', actor: tick.name, scheduleName: 'dup' });
        expect(await h.backend.listSchedules()).toEqual([first]);
        // Another actor, or another name, is another schedule.
        await h.backend.createSchedule(args({ name: 'dup', actor: other.name }), nextScheduleSlot);
        await h.backend.createSchedule(args({ name: 'dup2' }), nextScheduleSlot);
        expect(await h.backend.listSchedules()).toHaveLength(3);
      });

      it('ensure creates the absent ones only and leaves existing ones untouched', async () => {
        const existing = await h.backend.createSchedule(args({ name: 'a' }), nextScheduleSlot);
        const out = await h.backend.ensureSchedules(
          [args({ name: 'a', cronExpr: '0 0 * * *', enabled: false }), args({ name: 'b' })],
          nextScheduleSlot,
        );
        expect(out.map((o) => o.created)).toEqual([false, true]);
        expect(out[0]!.record).toEqual(existing);
        expect(out[1]!.record).toMatchObject({ name: 'b', cronExpr: '* * * * *' });
        expect(await h.backend.getSchedule(existing.id)).toEqual(existing);
        const again = await h.backend.ensureSchedules([args({ name: 'b' })], nextScheduleSlot);
        expect(again).toEqual([{ record: out[1]!.record, created: false }]);
        expect(await h.backend.ensureSchedules([], nextScheduleSlot)).toEqual([]);
        expect(await h.backend.listSchedules()).toHaveLength(2);
      });

      it('gets by id (null when absent) and lists by actor, name, id with filters', async () => {
        const b2 = await h.backend.createSchedule(args({ name: 'z' }), nextScheduleSlot);
        const a1 = await h.backend.createSchedule(args({ name: 'a', enabled: false }), nextScheduleSlot);
        const o1 = await h.backend.createSchedule(args({ actor: other.name, name: 'm' }), nextScheduleSlot);
        expect(await h.backend.getSchedule(newJobId())).toBeNull();
        const ids = (l: { id: string }[]) => l.map((s) => s.id);
        expect(ids(await h.backend.listSchedules())).toEqual([o1.id, a1.id, b2.id]);
        expect(ids(await h.backend.listSchedules({}))).toEqual([o1.id, a1.id, b2.id]);
        expect(ids(await h.backend.listSchedules({ actor: tick.name }))).toEqual([a1.id, b2.id]);
        expect(ids(await h.backend.listSchedules({ enabled: false }))).toEqual([a1.id]);
        expect(ids(await h.backend.listSchedules({ actor: tick.name, enabled: true }))).toEqual([b2.id]);
        expect(await h.backend.listSchedules({ actor: 'nobody' })).toEqual([]);
      });
    });

    describe('update and delete', () => {
      it('a new expression reseeds the next slot from the backend clock in the stored zone and strategy', async () => {
        const rec = await h.backend.createSchedule(
          args({ timezone: 'Europe/Berlin', dstStrategy: 'allof', cronExpr: '0 0 1 1 *' }),
          nextScheduleSlot,
        );
        const seen: { now: Date; s: Parameters<NextSlot>[1] }[] = [];
        const recording: NextSlot = (now, s) => {
          seen.push({ now, s: { cronExpr: s.cronExpr, timezone: s.timezone, dstStrategy: s.dstStrategy } });
          return nextScheduleSlot(now, s);
        };
        const before = await clockNow();
        const up = await h.backend.updateSchedule(rec.id, { cronExpr: '30 2 * * *' }, recording);
        const after = await clockNow();
        expect(seen).toHaveLength(1);
        expect(seen[0]!.s).toEqual({
          cronExpr: '30 2 * * *',
          timezone: 'Europe/Berlin',
          dstStrategy: 'allof',
        });
        expect(seen[0]!.now.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(seen[0]!.now.getTime()).toBeLessThanOrEqual(after.getTime());
        expect(up).toMatchObject({ cronExpr: '30 2 * * *', timezone: 'Europe/Berlin', dstStrategy: 'allof' });
        expect(up!.nextFireAt).toEqual(nextScheduleSlot(seen[0]!.now, up!));
        expect(await h.backend.getSchedule(rec.id)).toEqual(up);
        // Without a new expression the next slot stays, and nextSlot is not asked.
        const same = await h.backend.updateSchedule(rec.id, { enabled: false }, recording);
        expect(seen).toHaveLength(1);
        expect(same!.nextFireAt).toEqual(up!.nextFireAt);
      });

      it('enabling clears the failures and the last error; disabling keeps them', async () => {
        const s = await dueOne();
        const [r] = await h.backend.fireSchedules(
          [
            decision(s.id, s.nextFireAt!, [], new Date(s.nextFireAt!.getTime() + MIN), {
              failure: 'Error: boom',
            }),
          ],
          { autoDisableThreshold: 1 },
        );
        expect(r).toMatchObject({ status: 'failed', disabled: true, failure: 'Error: boom' });
        const off = await h.backend.getSchedule(s.id);
        expect(off).toMatchObject({ enabled: false, consecutiveFailures: 1, lastFireError: 'Error: boom' });
        const stillOff = await h.backend.updateSchedule(s.id, { enabled: false }, nextScheduleSlot);
        expect(stillOff).toMatchObject({
          enabled: false,
          consecutiveFailures: 1,
          lastFireError: 'Error: boom',
        });
        const on = await h.backend.updateSchedule(s.id, { enabled: true }, nextScheduleSlot);
        expect(on).toMatchObject({ enabled: true, consecutiveFailures: 0, lastFireError: null });
        // A slot that passed while it was off is not fired: the chain is re-anchored after now.
        const { now } = await h.backend.dueSchedules(1);
        if (off!.nextFireAt!.getTime() <= now.getTime())
          expect(on!.nextFireAt!.getTime()).toBeGreaterThan(off!.nextFireAt!.getTime());
        else expect(on!.nextFireAt).toEqual(off!.nextFireAt);
      });

      it('changes the payload and the payload factory, keeping other metadata', async () => {
        const s = await h.backend.createSchedule(args({ staticPayloadJson: '{"v":1}' }), nextScheduleSlot);
        expect(s.metadata).toEqual({ static_payload: { v: 1 } });
        const p2 = await h.backend.updateSchedule(s.id, { staticPayloadJson: '[1,"x"]' }, nextScheduleSlot);
        expect(p2).toMatchObject({ staticPayload: [1, 'x'], metadata: { static_payload: [1, 'x'] } });
        const f = await h.backend.updateSchedule(
          s.id,
          { staticPayloadJson: null, payloadFactory: 'make' },
          nextScheduleSlot,
        );
        expect(f).toMatchObject({ payloadFactory: 'make', metadata: {} });
        expect(f!.staticPayload).toBeUndefined();
        const back = await h.backend.updateSchedule(s.id, { payloadFactory: null }, nextScheduleSlot);
        expect(back!.payloadFactory).toBeNull();
        expect(back!.nextFireAt).toEqual(s.nextFireAt);
        expect(await h.backend.getSchedule(s.id)).toEqual(back);
      });

      it('fireNow makes it due at the backend clock', async () => {
        const s = await h.backend.createSchedule(args({ cronExpr: '0 0 1 1 *' }), nextScheduleSlot);
        expect((await h.backend.dueSchedules(10)).rows).toEqual([]);
        const before = await clockNow();
        const up = await h.backend.updateSchedule(s.id, { fireNow: true }, nextScheduleSlot);
        const after = await clockNow();
        expect(up!.nextFireAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(up!.nextFireAt!.getTime()).toBeLessThanOrEqual(after.getTime());
        expect((await h.backend.dueSchedules(10)).rows.map((r) => r.id)).toEqual([s.id]);
      });

      it('skipScheduleFire moves past the next slot (slotAfter of that slot), fires nothing, keeps failures', async () => {
        const s = await dueOne({ cronExpr: '*/5 * * * *' });
        const slot = s.nextFireAt!;
        const asked: Date[] = [];
        const after: NextSlot = (from, sch) => {
          asked.push(from);
          return nextScheduleSlot(from, sch);
        };
        const r = await h.backend.skipScheduleFire(s.id, after);
        expect(asked).toEqual([slot]);
        expect(r!.skipped).toEqual(slot);
        expect(r!.record.nextFireAt).toEqual(nextScheduleSlot(slot, s));
        expect(r!.record).toMatchObject({ enabled: true, consecutiveFailures: 0, lastFireError: null });
        expect(await h.backend.getSchedule(s.id)).toEqual(r!.record);
        expect(await h.backend.listScheduleFires(s.id, 10)).toEqual([]);
        expect(await jobCount()).toBe(0);
        // With the slot the caller saw: a repeat (the slot already moved) skips nothing more.
        const again = await h.backend.skipScheduleFire(s.id, nextScheduleSlot, slot);
        expect(again!.skipped).toBeNull();
        expect(again!.record).toEqual(r!.record);
        const next = r!.record.nextFireAt!;
        const second = await h.backend.skipScheduleFire(s.id, nextScheduleSlot, next);
        expect(second!.skipped).toEqual(next);
        expect(second!.record.nextFireAt).toEqual(nextScheduleSlot(next, s));
      });

      it('skipScheduleFire of an unknown schedule is null; one with no next slot skips nothing', async () => {
        expect(await h.backend.skipScheduleFire(newJobId(), nextScheduleSlot)).toBeNull();
        const none = await h.backend.createSchedule(args(), fixed(null));
        const r = await h.backend.skipScheduleFire(none.id, nextScheduleSlot);
        expect(r).toEqual({ record: none, skipped: null });
      });

      it('updates of an unknown schedule answer null and write nothing', async () => {
        expect(await h.backend.updateSchedule(newJobId(), { enabled: false }, nextScheduleSlot)).toBeNull();
        expect(await h.backend.updateSchedule(newJobId(), { fireNow: true }, nextScheduleSlot)).toBeNull();
        expect(await h.backend.listSchedules()).toEqual([]);
      });

      it('delete is idempotent and deletes the fire history', async () => {
        const s = await dueOne();
        const [r] = await h.backend.fireSchedules([decision(s.id, s.nextFireAt!, [s.nextFireAt!], null)], {
          autoDisableThreshold: 3,
        });
        expect(r!.status).toBe('fired');
        expect(await h.backend.listScheduleFires(s.id, 10)).toHaveLength(1);
        expect(await h.backend.deleteSchedule(s.id)).toBe(true);
        expect(await h.backend.getSchedule(s.id)).toBeNull();
        expect(await h.backend.listScheduleFires(s.id, 10)).toEqual([]);
        expect(await h.backend.deleteSchedule(s.id)).toBe(false);
        // The fired job stays: deleting a schedule does not cancel what it made.
        expect(await jobCount()).toBe(1);
      });
    });

    describe('due and fire', () => {
      it('dueSchedules returns enabled due schedules, oldest slot first, with the clock reading', async () => {
        const now = await clockNow();
        const at = (ms: number) => fixed(new Date(now.getTime() + ms));
        const late = await h.backend.createSchedule(args({ name: 'late' }), at(-MIN));
        const older = await h.backend.createSchedule(args({ name: 'older' }), at(-10 * MIN));
        await h.backend.createSchedule(args({ name: 'off', enabled: false }), at(-20 * MIN));
        await h.backend.createSchedule(args({ name: 'future' }), at(60 * MIN));
        await h.backend.createSchedule(args({ name: 'never' }), fixed(null));
        const before = await clockNow();
        const due = await h.backend.dueSchedules(10);
        const after = await clockNow();
        expect(due.rows.map((r) => r.id)).toEqual([older.id, late.id]);
        expect(due.now.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(due.now.getTime()).toBeLessThanOrEqual(after.getTime());
        expect((await h.backend.dueSchedules(1)).rows.map((r) => r.id)).toEqual([older.id]);
      });

      it('fireSchedules writes the jobs, the fired slots and the next slot together', async () => {
        const s = await dueOne({ identityKey: 'ik' });
        const t0 = s.nextFireAt!;
        const t1 = new Date(t0.getTime() + MIN);
        const next = new Date(t0.getTime() + 2 * MIN);
        const d = decision(s.id, t0, [t0, t1], next);
        const before = await clockNow();
        const [r] = await h.backend.fireSchedules([d], { autoDisableThreshold: 3 });
        const after = await clockNow();
        expect(r).toEqual({
          scheduleId: s.id,
          status: 'fired',
          jobIds: d.fires.map((f) => f.job.id),
          failure: null,
          disabled: false,
        });
        for (const f of d.fires) {
          const row = await client.getRow(f.job.id);
          expect(row).toMatchObject({ actor: tick.name, status: 'pending' });
          expect(row!.metadata).toMatchObject({ fire_at: f.fireAt.toISOString() });
        }
        const stored = await h.backend.getSchedule(s.id);
        expect(stored).toMatchObject({ nextFireAt: next, consecutiveFailures: 0, lastFireError: null });
        expect(stored!.lastFiredAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(stored!.lastFiredAt!.getTime()).toBeLessThanOrEqual(after.getTime());
        const fires = await h.backend.listScheduleFires(s.id, 10);
        expect(fires.map((f) => [f.fireAt, f.jobId])).toEqual([
          [t1, d.fires[1]!.job.id],
          [t0, d.fires[0]!.job.id],
        ]);
        expect(fires.every((f) => f.scheduleId === s.id)).toBe(true);
        // Not due any more: the next slot is in the future.
        expect((await h.backend.dueSchedules(10)).rows).toEqual([]);
      });

      it('a decision made for an old slot, or for a disabled or deleted schedule, is stale and writes nothing', async () => {
        const s = await dueOne();
        const t0 = s.nextFireAt!;
        const t1 = new Date(t0.getTime() + MIN);
        await h.backend.fireSchedules([decision(s.id, t0, [t0], t1)], { autoDisableThreshold: 3 });
        const afterFirst = await h.backend.getSchedule(s.id);
        const jobs = await jobCount();
        // The same decision again (a second leader, or a retry): the schedule is no longer at t0.
        const again = decision(s.id, t0, [t0], t1);
        const failing = decision(s.id, t0, [], t1, { failure: 'Error: late' });
        const results = await h.backend.fireSchedules([again, failing], { autoDisableThreshold: 1 });
        expect(results).toEqual([
          { scheduleId: s.id, status: 'stale', jobIds: [], failure: null, disabled: false },
          { scheduleId: s.id, status: 'stale', jobIds: [], failure: null, disabled: false },
        ]);
        expect(await jobCount()).toBe(jobs);
        expect(await h.backend.getSchedule(s.id)).toEqual(afterFirst);
        expect(await h.backend.listScheduleFires(s.id, 10)).toHaveLength(1);

        const off = await dueOne({ name: 'off' });
        await h.backend.updateSchedule(off.id, { enabled: false }, nextScheduleSlot);
        const gone = await dueOne({ name: 'gone' });
        await h.backend.deleteSchedule(gone.id);
        const r2 = await h.backend.fireSchedules(
          [
            decision(off.id, off.nextFireAt!, [off.nextFireAt!], null),
            decision(gone.id, gone.nextFireAt!, [gone.nextFireAt!], null),
          ],
          { autoDisableThreshold: 3 },
        );
        expect(r2.map((r) => r.status)).toEqual(['stale', 'stale']);
        expect(await jobCount()).toBe(jobs);
        expect(await h.backend.listScheduleFires(off.id, 10)).toEqual([]);
      });

      it('counts failures, keeps the last error, disables at the threshold; a success resets the count', async () => {
        const s = await dueOne();
        let at = s.nextFireAt!;
        const step = async (failure: string | null) => {
          const next = new Date(at.getTime() + MIN);
          const [r] = await h.backend.fireSchedules(
            [decision(s.id, at, [at], next, failure === null ? {} : { failure })],
            { autoDisableThreshold: 3 },
          );
          at = next;
          return r!;
        };
        expect(await step('Error: one')).toMatchObject({
          status: 'failed',
          failure: 'Error: one',
          disabled: false,
        });
        expect(await h.backend.getSchedule(s.id)).toMatchObject({
          consecutiveFailures: 1,
          lastFireError: 'Error: one',
          lastFiredAt: null,
          nextFireAt: at,
          enabled: true,
        });
        expect(await h.backend.listScheduleFires(s.id, 10)).toEqual([]);
        expect(await step('Error: two')).toMatchObject({ status: 'failed', disabled: false });
        expect(await step(null)).toMatchObject({ status: 'fired', disabled: false });
        const reset = await h.backend.getSchedule(s.id);
        expect(reset).toMatchObject({ consecutiveFailures: 0, enabled: true });
        expect(reset!.lastFiredAt).not.toBeNull();
        await step('Error: a');
        await step('Error: b');
        expect(await step('Error: c')).toEqual({
          scheduleId: s.id,
          status: 'failed',
          jobIds: [],
          failure: 'Error: c',
          disabled: true,
        });
        expect(await h.backend.getSchedule(s.id)).toMatchObject({
          enabled: false,
          consecutiveFailures: 3,
          lastFireError: 'Error: c',
          nextFireAt: at,
        });
        expect(await jobCount()).toBe(1);
      });

      it('a decision that fires nothing (slots skipped) moves the chain and keeps the failure count', async () => {
        const s = await dueOne();
        const t0 = s.nextFireAt!;
        const t1 = new Date(t0.getTime() + MIN);
        const t2 = new Date(t0.getTime() + 2 * MIN);
        await h.backend.fireSchedules([decision(s.id, t0, [], t1, { failure: 'Error: once' })], {
          autoDisableThreshold: 3,
        });
        const [r] = await h.backend.fireSchedules([decision(s.id, t1, [], t2)], { autoDisableThreshold: 3 });
        expect(r).toEqual({ scheduleId: s.id, status: 'fired', jobIds: [], failure: null, disabled: false });
        expect(await h.backend.getSchedule(s.id)).toMatchObject({
          nextFireAt: t2,
          consecutiveFailures: 1,
          lastFireError: 'Error: once',
          lastFiredAt: null,
          enabled: true,
        });
        expect(await h.backend.listScheduleFires(s.id, 10)).toEqual([]);
        expect(await jobCount()).toBe(0);
      });

      it("a gate's refusal fails that schedule's slots with none of its jobs left; the batch's other decisions fire", async () => {
        const gated = await dueOne({ name: 'gated' });
        const free = await dueOne({ name: 'free', actor: other.name });
        // One pending job of the gated actor: its maxPending of 1 is reached.
        await client.enqueue(tick, {});
        const g0 = gated.nextFireAt!;
        const g1 = new Date(g0.getTime() + MIN);
        const gNext = new Date(g0.getTime() + 2 * MIN);
        const dGated = decision(gated.id, g0, [g0, g1], gNext, { maxPending: 1 });
        const dFree = decision(free.id, free.nextFireAt!, [free.nextFireAt!], null, { of: other });
        const results = await h.backend.fireSchedules([dGated, dFree], { autoDisableThreshold: 3 });
        expect(results[0]).toMatchObject({
          scheduleId: gated.id,
          status: 'failed',
          jobIds: [],
          disabled: false,
        });
        expect(results[0]!.failure).toMatch(/MaxPending/);
        expect(results[1]).toMatchObject({
          scheduleId: free.id,
          status: 'fired',
          jobIds: [dFree.fires[0]!.job.id],
        });
        for (const f of dGated.fires) expect(await client.getRow(f.job.id)).toBeNull();
        expect(await client.getRow(dFree.fires[0]!.job.id)).not.toBeNull();
        expect(await jobCount()).toBe(2);
        expect(await h.backend.getSchedule(gated.id)).toMatchObject({
          nextFireAt: gNext,
          consecutiveFailures: 1,
          lastFireError: results[0]!.failure,
        });
        expect(await h.backend.listScheduleFires(gated.id, 10)).toEqual([]);
        expect(await h.backend.listScheduleFires(free.id, 10)).toHaveLength(1);

        // A multi-slot decision whose own first job fills the gate: the second is refused, and the
        // first does not stay either.
        await h.reset();
        const g = await dueOne({ name: 'g2' });
        const t0 = g.nextFireAt!;
        const d2 = decision(g.id, t0, [t0, new Date(t0.getTime() + MIN)], null, { maxPending: 1 });
        const [r2] = await h.backend.fireSchedules([d2], { autoDisableThreshold: 3 });
        expect(r2).toMatchObject({ status: 'failed', jobIds: [] });
        expect(await jobCount()).toBe(0);
        expect(await h.backend.listScheduleFires(g.id, 10)).toEqual([]);
      });

      it(`keeps the newest ${CRON_FIRE_HISTORY} fires, newest first`, async () => {
        const s = await dueOne();
        const t0 = s.nextFireAt!;
        const slot = (i: number) => new Date(t0.getTime() + i * 1000);
        const first = Array.from({ length: 60 }, (_, i) => slot(i));
        const second = Array.from({ length: 50 }, (_, i) => slot(60 + i));
        await h.backend.fireSchedules([decision(s.id, t0, first, slot(60))], { autoDisableThreshold: 3 });
        await h.backend.fireSchedules([decision(s.id, slot(60), second, slot(110))], {
          autoDisableThreshold: 3,
        });
        const all = await h.backend.listScheduleFires(s.id, 1000);
        expect(all).toHaveLength(CRON_FIRE_HISTORY);
        expect(all.map((f) => f.fireAt)).toEqual(
          Array.from({ length: CRON_FIRE_HISTORY }, (_, i) => slot(109 - i)),
        );
        expect((await h.backend.listScheduleFires(s.id, 3)).map((f) => f.fireAt)).toEqual([
          slot(109),
          slot(108),
          slot(107),
        ]);
        expect(await jobCount()).toBe(110);
      });

      describe('behind the leader fence', () => {
        const sessions: LeaderSession[] = [];
        const open = async (workerId: string): Promise<LeaderSession> => {
          const s = await h.backend.openLeaderSession(workerId, 'host', { leaseMs: 10_000 });
          sessions.push(s);
          return s;
        };

        it('a stale fence throws LeadershipLostError and writes nothing; the current one writes', async () => {
          try {
            const s = await dueOne();
            const a = await open(LEADER_A);
            const b = await open(LEADER_B);
            expect(await a.tryAcquire()).toBe(true);
            const stale = a.fence!;
            await a.release();
            expect(await b.tryAcquire()).toBe(true);
            const d = decision(s.id, s.nextFireAt!, [s.nextFireAt!], null);
            const err = await h.backend
              .fireSchedules([d], { autoDisableThreshold: 3 }, stale)
              .catch((e: unknown) => e);
            expect(err).toBeInstanceOf(LeadershipLostError);
            expect(await jobCount()).toBe(0);
            expect(await h.backend.getSchedule(s.id)).toEqual(s);
            expect(await h.backend.listScheduleFires(s.id, 10)).toEqual([]);
            const [r] = await h.backend.fireSchedules([d], { autoDisableThreshold: 3 }, b.fence!);
            expect(r!.status).toBe('fired');
            expect(await jobCount()).toBe(1);
          } finally {
            for (const s of sessions.splice(0)) await s.close();
          }
        });
      });
    });
  });
}
