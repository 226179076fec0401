/**
 * The client's schedule API (`createSchedule`, `listSchedules`, `getSchedule`, `updateSchedule`,
 * `deleteSchedule`, `ScheduleHandle`) on real Postgres and on the in-memory backend: every bad
 * argument is refused with a typed error naming the field and the value, before anything is
 * written; the handle's operations do what their documentation says.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { buildEnqueueArgs } from '../../src/client/enqueue-options.js';
import type { EnqueueArgs } from '../../src/backend/types.js';
import type { Backend } from '../../src/backend/backend.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { newJobId } from '../../src/core/ids.js';
import { nextFireTimes } from '../../src/cron/next-fires.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { PayloadValidationError } from '../../src/errors/payload-validation-error.js';
import { PayloadTooLarge } from '../../src/errors/payload-too-large.js';
import { ScheduleNotFoundError } from '../../src/errors/schedule-errors.js';
import { migratedSchema } from '../helpers/db.js';

const typed = actor({ name: 'sc_typed', payload: z.object({ n: z.number().int() }) }, async () => undefined);
const loose = actor({ name: 'sc_loose' }, async () => undefined);
const HOUR = 3_600_000;

interface Setup {
  backend: Backend;
  /** Removes every schedule, fire and job. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

function defineScheduleApiTests(name: string, setup: () => Promise<Setup>): void {
  describe(`client schedule API: ${name}`, () => {
    let s: Setup;
    let tq: TaskQ;

    beforeAll(async () => {
      s = await setup();
      tq = new TaskQ(s.backend, { capacityCacheTtl: 0 });
    });
    afterAll(async () => {
      await s.close();
    });
    beforeEach(async () => {
      await s.reset();
    });

    /** Everything stored about schedules, to compare before and after a refused call. */
    const snapshot = async (): Promise<string> => {
      const all = await s.backend.listSchedules();
      const fires = await Promise.all(all.map((r) => s.backend.listScheduleFires(r.id, 100)));
      return JSON.stringify({ all, fires });
    };

    /** Expects `call` to be refused with an InvalidArgumentError naming `field` and `value`. */
    const refused = async (call: () => Promise<unknown>, field: string, value: unknown): Promise<void> => {
      const before = await snapshot();
      const err = await call().catch((e: unknown) => e);
      expect(err, field).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe(field);
      expect((err as InvalidArgumentError).value).toEqual(value);
      expect((err as Error).message).toContain(field);
      expect(await snapshot()).toBe(before);
    };

    describe('createSchedule refuses bad arguments and writes nothing', () => {
      beforeEach(async () => {
        // One existing schedule, so that "nothing written" also means "nothing changed".
        await tq.createSchedule(loose, '0 * * * *', { name: 'existing' });
      });

      it.each([
        ['an invalid expression', 'every day', {}, 'createSchedule.expression', 'every day'],
        ['a never-firing expression', '0 0 30 2 *', {}, 'createSchedule.expression', '0 0 30 2 *'],
        ['a non-string expression', 5, {}, 'createSchedule.expression', 5],
        [
          'an unknown zone',
          '0 * * * *',
          { timezone: 'Mars/Olympus' },
          'createSchedule.timezone',
          'Mars/Olympus',
        ],
        ['a fixed offset', '0 * * * *', { timezone: '+05:30' }, 'createSchedule.timezone', '+05:30'],
        [
          'a bad strategy',
          '0 * * * *',
          { dstStrategy: 'sometimes' },
          'createSchedule.dstStrategy',
          'sometimes',
        ],
        [
          'payload and payloadFactory',
          '0 * * * *',
          { payload: {}, payloadFactory: 'f' },
          'createSchedule.options.payloadFactory',
          'f',
        ],
        ['an unknown option', '0 * * * *', { timeZone: 'UTC' }, 'createSchedule.options.timeZone', undefined],
        ['a non-boolean enabled', '0 * * * *', { enabled: 'yes' }, 'createSchedule.options.enabled', 'yes'],
        ['a non-string name', '0 * * * *', { name: 7 }, 'createSchedule.options.name', 7],
        ['a name with NUL', '0 * * * *', { name: 'a\u0000b' }, 'createSchedule.options.name', 'a\u0000b'],
        [
          'a too long name',
          '0 * * * *',
          { name: 'x'.repeat(201) },
          'createSchedule.options.name',
          'x'.repeat(201),
        ],
        ['an empty identity key', '0 * * * *', { identityKey: '' }, 'createSchedule.options.identityKey', ''],
        [
          'an empty factory name',
          '0 * * * *',
          { payloadFactory: '' },
          'createSchedule.options.payloadFactory',
          '',
        ],
      ])('%s', async (_what, expression, options, field, value) => {
        await refused(
          () => tq.createSchedule(loose, expression as string, options as Record<string, never>),
          field,
          value,
        );
      });

      it('a bad actor, and options that are not an object', async () => {
        await refused(() => tq.createSchedule('', '0 * * * *'), 'createSchedule.actor', '');
        await refused(() => tq.createSchedule(42 as never, '0 * * * *'), 'createSchedule.actor', 42);
        await refused(
          () => tq.createSchedule(loose, '0 * * * *', 'x' as never),
          'createSchedule.options',
          'x',
        );
      });

      it("a payload failing the actor's schema when the actor is a ref", async () => {
        const before = await snapshot();
        const err = await tq
          .createSchedule(typed, '0 * * * *', { payload: { n: 'one' } })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PayloadValidationError);
        expect(err).toMatchObject({ actor: 'sc_typed' });
        expect((err as PayloadValidationError).validationErrors.map((i) => i.path)).toEqual([['n']]);
        expect((err as Error).message).toContain('createSchedule.options.payload');
        expect(await snapshot()).toBe(before);
        // A valid one is stored as the schema's output; by name, the payload is checked at fire time.
        const ok = await tq.createSchedule(typed, '0 * * * *', { name: 'ok', payload: { n: 1 } });
        expect(ok.record.staticPayload).toEqual({ n: 1 });
        const byName = await tq.createSchedule('sc_typed', '0 * * * *', {
          name: 'late',
          payload: { n: 'x' },
        });
        expect(byName.record.staticPayload).toEqual({ n: 'x' });
      });
    });

    it('a static payload above payloadMaxBytes is refused at create and at update, by ref or by name', async () => {
      const big = { blob: 'x'.repeat(1024 * 1024 + 1) };
      const existing = await tq.createSchedule(loose, '0 * * * *', { name: 'small', payload: { a: 1 } });
      const before = await snapshot();
      for (const call of [
        () => tq.createSchedule(loose, '0 * * * *', { name: 'big', payload: big }),
        () => tq.createSchedule('sc_loose', '0 * * * *', { name: 'big', payload: big }),
      ]) {
        const err = await call().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PayloadTooLarge);
        expect(err).toMatchObject({ field: 'createSchedule.options.payload', limit: 1024 * 1024 });
      }
      const err = await tq.updateSchedule(existing.id, { payload: big }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PayloadTooLarge);
      expect(err).toMatchObject({ field: 'updateSchedule.change.payload' });
      expect(await snapshot()).toBe(before);
    });

    describe('the other calls refuse bad arguments and write nothing', () => {
      let id: string;
      beforeEach(async () => {
        id = (await tq.createSchedule(loose, '0 * * * *', { name: 'u', payload: { a: 1 } })).id;
      });

      it('updateSchedule', async () => {
        await refused(() => tq.updateSchedule('nope', { enabled: false }), 'updateSchedule.id', 'nope');
        await refused(
          () => tq.updateSchedule(id, { cron: '* * * * *' } as never),
          'updateSchedule.change.cron',
          undefined, // an unknown key's value is not shown
        );
        await refused(() => tq.updateSchedule(id, null as never), 'updateSchedule.change', null);
        await refused(
          () => tq.updateSchedule(id, { expression: 'nope' }),
          'updateSchedule.expression',
          'nope',
        );
        await refused(
          () => tq.updateSchedule(id, { expression: '0 0 31 4 *' }),
          'updateSchedule.expression',
          '0 0 31 4 *',
        );
        await refused(
          () => tq.updateSchedule(id, { enabled: 1 as never }),
          'updateSchedule.change.enabled',
          1,
        );
        await refused(
          () => tq.updateSchedule(id, { payload: {}, payloadFactory: 'f' }),
          'updateSchedule.change.payloadFactory',
          'f',
        );
        await refused(
          () => tq.updateSchedule(id, { payloadFactory: '' }),
          'updateSchedule.change.payloadFactory',
          '',
        );
        // A bad field next to a good one: the good one is not written either.
        await refused(
          () => tq.updateSchedule(id, { expression: '*/5 * * * *', enabled: 'no' as never }),
          'updateSchedule.change.enabled',
          'no',
        );
      });

      it('listSchedules, getSchedule, deleteSchedule', async () => {
        await refused(
          () => tq.listSchedules({ enabled: 'yes' as never }),
          'listSchedules.filter.enabled',
          'yes',
        );
        await refused(() => tq.listSchedules({ name: 'u' } as never), 'listSchedules.filter.name', undefined);
        await refused(() => tq.listSchedules({ actor: '' }), 'listSchedules.filter.actor', '');
        await refused(() => tq.listSchedules(null as never), 'listSchedules.filter', null);
        await refused(() => tq.getSchedule('1234'), 'getSchedule.id', '1234');
        await refused(() => tq.getSchedule(undefined as never), 'getSchedule.id', undefined);
        await refused(() => tq.deleteSchedule('x'), 'deleteSchedule.id', 'x');
      });
    });

    describe('reads, updates and handles', () => {
      it('lists by actor and enabled; get returns a handle or null; ids are case-insensitive', async () => {
        const a = await tq.createSchedule(loose, '0 * * * *', { name: 'a' });
        const b = await tq.createSchedule(typed, '0 * * * *', {
          name: 'b',
          payload: { n: 2 },
          enabled: false,
        });
        expect((await tq.listSchedules()).map((r) => r.id)).toEqual([a.id, b.id]);
        expect((await tq.listSchedules({ actor: typed })).map((r) => r.id)).toEqual([b.id]);
        expect((await tq.listSchedules({ actor: 'sc_loose' })).map((r) => r.id)).toEqual([a.id]);
        expect((await tq.listSchedules({ enabled: false })).map((r) => r.id)).toEqual([b.id]);
        expect((await tq.getSchedule(a.id.toUpperCase()))?.record).toEqual(a.record);
        expect(await tq.getSchedule(newJobId())).toBeNull();
      });

      it('nextFireTimes(n) previews from the stored next slot and refuses n outside 1..1000', async () => {
        const h = await tq.createSchedule(loose, '*/15 * * * *', { timezone: 'America/New_York' });
        const first = h.record.nextFireAt!;
        const spec = {
          expression: '*/15 * * * *',
          timezone: 'America/New_York',
          dstStrategy: 'skip' as const,
        };
        expect(h.nextFireTimes(1)).toEqual([first]);
        expect(h.nextFireTimes(4)).toEqual([first, ...nextFireTimes(spec, first, 3)]);
        expect(h.nextFireTimes(4).map((d) => d.getTime() - first.getTime())).toEqual([
          0,
          15 * 60_000,
          30 * 60_000,
          45 * 60_000,
        ]);
        expect(h.nextFireTimes(1000)).toHaveLength(1000);
        for (const n of [0, 1001, 1.5, -1, Number.NaN, '3'])
          expect(() => h.nextFireTimes(n as number)).toThrow(
            expect.objectContaining({ field: 'nextFireTimes.n', value: n }),
          );
      });

      it('runNow makes it due now; history lists the fires newest first; limits are checked', async () => {
        const h = await tq.createSchedule(loose, '0 0 1 1 *', { name: 'yearly' });
        expect((await s.backend.dueSchedules(10)).rows).toEqual([]);
        const rec = await h.runNow();
        const due = await s.backend.dueSchedules(10);
        expect(due.rows.map((r) => r.id)).toEqual([h.id]);
        expect(rec.nextFireAt!.getTime()).toBeLessThanOrEqual(due.now.getTime());
        expect(await h.history()).toEqual([]);
        // Fire it twice as the leader would, then read the history.
        const fireOne = async (at: Date, next: Date) => {
          const [r] = await s.backend.fireSchedules(
            [
              {
                scheduleId: h.id,
                expectedNextFireAt: at,
                fires: [{ fireAt: at, job: jobOf(at) }],
                nextFireAt: next,
                failure: null,
              },
            ],
            { autoDisableThreshold: 3 },
          );
          return r!;
        };
        const t0 = rec.nextFireAt!;
        const r0 = await fireOne(t0, new Date(t0.getTime() + 1000));
        await h.runNow();
        const t1 = (await h.refresh()).nextFireAt!;
        const r1 = await fireOne(t1, new Date(t1.getTime() + HOUR));
        const hist = await h.history();
        expect(hist.map((f) => [f.fireAt, f.jobId])).toEqual([
          [t1, r1.jobIds[0]],
          [t0, r0.jobIds[0]],
        ]);
        expect(await h.history(1)).toEqual([hist[0]]);
        for (const limit of [0, 101, 2.5])
          await expect(h.history(limit)).rejects.toMatchObject({ field: 'history.limit', value: limit });
      });

      it('skipNext() passes over the next slot without a job; a bad or stale expected skips nothing', async () => {
        const h = await tq.createSchedule(loose, '0 * * * *', { timezone: 'Asia/Kathmandu' });
        const slot = h.record.nextFireAt!;
        const spec = { expression: '0 * * * *', timezone: 'Asia/Kathmandu', dstStrategy: 'skip' as const };
        const r = await h.skipNext();
        expect(r.skipped).toEqual(slot);
        expect(r.record.nextFireAt).toEqual(nextFireTimes(spec, slot, 1)[0]);
        expect(h.record).toEqual(r.record);
        expect(h.nextFireTimes(1)).toEqual([r.record.nextFireAt]);
        expect(await h.history()).toEqual([]);
        const stale = await h.skipNext(slot);
        expect(stale.skipped).toBeNull();
        expect(stale.record.nextFireAt).toEqual(r.record.nextFireAt);
        for (const bad of [new Date(Number.NaN), '2026-01-01T00:00:00Z' as unknown as Date])
          await expect(h.skipNext(bad)).rejects.toMatchObject({ field: 'skipNext.expected', value: bad });
        expect((await h.refresh()).nextFireAt).toEqual(r.record.nextFireAt);
        await h.delete();
        await expect(h.skipNext()).rejects.toBeInstanceOf(ScheduleNotFoundError);
      });

      it('enable() clears the failures and the last error; disable() keeps them', async () => {
        const h = await tq.createSchedule(loose, '0 0 1 1 *');
        const at = (await h.runNow()).nextFireAt!;
        const [r] = await s.backend.fireSchedules(
          [{ scheduleId: h.id, expectedNextFireAt: at, fires: [], nextFireAt: at, failure: 'Error: bad' }],
          { autoDisableThreshold: 1 },
        );
        expect(r!.disabled).toBe(true);
        expect(await h.refresh()).toMatchObject({
          enabled: false,
          consecutiveFailures: 1,
          lastFireError: 'Error: bad',
        });
        expect(await h.disable()).toMatchObject({ enabled: false, consecutiveFailures: 1 });
        expect(await h.enable()).toMatchObject({
          enabled: true,
          consecutiveFailures: 0,
          lastFireError: null,
        });
        expect(h.record.enabled).toBe(true);
      });

      it('updateSchedule changes expression, payload and factory; a deleted schedule is not found', async () => {
        const h = await tq.createSchedule(loose, '0 0 1 1 *', { payload: { v: 1 } });
        const up = await tq.updateSchedule(h.id, { expression: '  */10 * * * * ' });
        expect(up.cronExpr).toBe('*/10 * * * *');
        expect(up.nextFireAt!.getTime()).toBeLessThan(h.record.nextFireAt!.getTime());
        const f = await tq.updateSchedule(h.id, { payloadFactory: 'make' });
        expect(f.payloadFactory).toBe('make');
        expect(f.staticPayload).toBeUndefined();
        const p = await tq.updateSchedule(h.id, { payload: { v: 2 } });
        expect(p).toMatchObject({ payloadFactory: null, staticPayload: { v: 2 } });
        expect(await h.delete()).toBe(true);
        expect(await tq.deleteSchedule(h.id)).toBe(false);
        await expect(tq.updateSchedule(h.id, { enabled: true })).rejects.toBeInstanceOf(
          ScheduleNotFoundError,
        );
        await expect(h.enable()).rejects.toMatchObject({
          code: 'TASKQ_SCHEDULE_NOT_FOUND',
          scheduleId: h.id,
        });
        await expect(h.runNow()).rejects.toBeInstanceOf(ScheduleNotFoundError);
        await expect(h.refresh()).rejects.toBeInstanceOf(ScheduleNotFoundError);
        expect(await tq.listSchedules()).toEqual([]);
      });
    });

    /** The job of one slot of `loose`. */
    function jobOf(at: Date): EnqueueArgs {
      return buildEnqueueArgs(
        loose,
        '{}',
        { metadata: { fire_at: at.toISOString() } },
        {
          maxPending: null,
          idempotencyMaxBytes: 1024,
        },
      );
    }
  });
}

defineScheduleApiTests('PostgresBackend', async () => {
  const db = await migratedSchema('sched');
  const q = `"${db.schema}"`;
  return {
    backend: new PostgresBackend(db.driver, { schema: db.schema }),
    async reset() {
      await db.pool.query(`TRUNCATE ${q}.cron_schedules, ${q}.cron_fires, ${q}.jobs CASCADE`);
    },
    close: () => db.drop(),
  };
});

defineScheduleApiTests('InMemoryBackend', async () => {
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const backend = new InMemoryBackend({ clock });
  return {
    backend,
    async reset() {
      backend.clear();
    },
    close: async () => undefined,
  };
});

describe('listSchedules order on Postgres does not depend on the collation', () => {
  it('orders actor and name by code point, as the in-memory backend does, even under a linguistic collation', async () => {
    const db = await migratedSchema('schedcoll');
    try {
      const q = `"${db.schema}"`;
      // A database created with an ICU or en_US locale sorts 'a' before 'B'; the columns get one here.
      await db.pool.query(
        `ALTER TABLE ${q}.cron_schedules ALTER COLUMN actor TYPE text COLLATE "en-US-x-icu",
                                         ALTER COLUMN name TYPE text COLLATE "en-US-x-icu"`,
      );
      const pg = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }), { capacityCacheTtl: 0 });
      const mem = new TaskQ(new InMemoryBackend({ clock: new FakeClock(Date.UTC(2026, 5, 1)) }), {
        capacityCacheTtl: 0,
      });
      const order: string[][] = [];
      for (const tq of [pg, mem]) {
        for (const [a, n] of [
          ['b_actor', 'a'],
          ['B_actor', 'z'],
          ['b_actor', 'B'],
          ['b_actor', '_x'],
        ])
          await tq.createSchedule(a!, '0 * * * *', { name: n });
        order.push((await tq.listSchedules()).map((r) => `${r.actor}/${r.name}`));
      }
      expect(order[1]).toEqual(['B_actor/z', 'b_actor/B', 'b_actor/_x', 'b_actor/a']);
      expect(order[0]).toEqual(order[1]);
    } finally {
      await db.drop();
    }
  });
});
