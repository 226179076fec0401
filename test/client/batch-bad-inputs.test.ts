/**
 * Bad inputs of the batch API on the in-memory backend: enqueueBatch's failurePolicy and
 * finalizer, AbortBatchAfter, listBatches' filter, getBatch / batchStatus ids and waitForBatch's
 * options. Each raises InvalidArgumentError (or the documented TypeError) naming the field, and
 * nothing is written: no job, no batch row.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { AbortBatchAfter, BatchFailurePolicy } from '../../src/client/batch-policy.js';
import { batchItem, type BatchOptions } from '../../src/client/batch-items.js';
import type { BatchFilter } from '../../src/client/batch-filter.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { WaitForBatchOptions } from '../../src/client/wait-for-batch.js';
import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { PayloadValidationError } from '../../src/errors/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const kid = actor({ name: 'bbi_child' }, async () => undefined);
const typed = actor({ name: 'bbi_typed', payload: z.object({ n: z.number() }) }, async () => undefined);
const ID = '01900000-0000-7000-8000-00000000b0b0';

/** Anything, as a type the API refuses at compile time (the run-time checks are under test). */
const loose = <T>(v: unknown): T => v as T;

describe('batch API bad inputs (in-memory backend)', () => {
  let backend: InMemoryBackend;
  let tq: TaskQ;

  beforeEach(() => {
    const clock = new FakeClock();
    backend = new InMemoryBackend({ clock });
    tq = new TaskQ(backend, { clock, capacityCacheTtl: 0 });
  });

  /** `run` fails with InvalidArgumentError on `field`, and nothing is stored. */
  async function refuses(run: () => Promise<unknown>, field: string, rule?: RegExp): Promise<void> {
    const err = await run().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err, `expected ${field} to be refused`).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe(field);
    if (rule) expect((err as InvalidArgumentError).rule).toMatch(rule);
    expect((err as Error).message).not.toContain('[object Object]');
    expect((await tq.list({ limit: 1000 })).jobs).toEqual([]);
    expect((await tq.listBatches()).batches).toEqual([]);
  }

  const items = [batchItem(kid, {}), batchItem(kid, {})];
  const batch = (options: unknown) => () => tq.enqueueBatch(items, loose<BatchOptions>(options));

  describe('enqueueBatch: failurePolicy and finalizer', () => {
    const cases: [string, unknown, string, RegExp?][] = [
      [
        'a plain object as policy',
        { failurePolicy: { failureThreshold: 2 } },
        'enqueueBatch.failurePolicy',
        /BatchFailurePolicy/,
      ],
      ['a number as policy', { failurePolicy: 3 }, 'enqueueBatch.failurePolicy'],
      ['a null policy', { failurePolicy: null }, 'enqueueBatch.failurePolicy'],
      ['a null finalizer', { finalizer: null }, 'enqueueBatch.finalizer', /actor, payload/],
      ['a string finalizer', { finalizer: 'fin' }, 'enqueueBatch.finalizer'],
      [
        'an unknown finalizer field',
        { finalizer: { actor: kid, payload: {}, delay: 5 } },
        'enqueueBatch.finalizer.delay',
      ],
      [
        'a finalizer without an actor',
        { finalizer: { payload: {} } },
        'enqueueBatch.finalizer.actor',
        /actor\(\)/,
      ],
      [
        'a finalizer actor that is a name',
        { finalizer: { actor: 'bbi_child', payload: {} } },
        'enqueueBatch.finalizer.actor',
      ],
      [
        'a bad finalizer option',
        { finalizer: { actor: kid, payload: {}, options: { priority: 1.5 } } },
        'enqueue.priority',
      ],
      [
        'an unknown batch option',
        { failurePolicies: new AbortBatchAfter(1) },
        'enqueueBatch.options.failurePolicies',
        /failurePolicy/,
      ],
    ];
    for (const [name, options, field, rule] of cases)
      it(`refuses ${name}`, async () => {
        await refuses(batch(options), field, rule);
      });

    it("refuses a finalizer payload that fails its actor's schema, writing nothing", async () => {
      const err = await batch({ finalizer: { actor: typed, payload: { n: 'x' } } })().catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PayloadValidationError);
      expect((await tq.list({ limit: 1000 })).jobs).toEqual([]);
      expect((await tq.listBatches()).batches).toEqual([]);
    });

    it('writes the batch once the options are valid (the refusals above were the inputs, not the backend)', async () => {
      const h = await tq.enqueueBatch(items, {
        failurePolicy: new AbortBatchAfter(1),
        finalizer: batchItem(kid, {}),
      });
      expect((await tq.getBatch(h.batchId))?.failureThreshold).toBe(1);
    });
  });

  describe('AbortBatchAfter', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31, '3', null])
      it(`refuses consecutiveFailures ${String(bad)}`, () => {
        let err: unknown;
        try {
          new AbortBatchAfter(loose<number>(bad));
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ field: 'AbortBatchAfter.consecutiveFailures', value: bad });
      });

    it('accepts a whole number of at least 1, and the abstract policy cannot be built', () => {
      expect(new AbortBatchAfter(1).failureThreshold).toBe(1);
      expect(new AbortBatchAfter(3).shouldAbort(3)).toBe(true);
      const Abstract = BatchFailurePolicy as unknown as new () => BatchFailurePolicy;
      expect(() => new Abstract()).toThrow(TypeError);
    });
  });

  describe('listBatches filter', () => {
    const cases: [string, unknown, string][] = [
      ['a non-object filter', 'active', 'filter'],
      ['an unknown field', { queues: ['a'] }, 'filter.queues'],
      ['an empty queue', { queue: '' }, 'filter.queue'],
      ['a number queue', { queue: 5 }, 'filter.queue'],
      ['a non-boolean active', { active: 'yes' }, 'filter.active'],
      ['a batchId that is no UUID', { batchId: 'b-1' }, 'filter.batchId'],
      ['a negative limit', { limit: -1 }, 'filter.limit'],
      ['a limit over 1,000', { limit: 1001 }, 'filter.limit'],
      ['a fractional limit', { limit: 2.5 }, 'filter.limit'],
      ['a foreign cursor', { cursor: 'page-2' }, 'filter.cursor'],
      ['a damaged cursor', { cursor: 'b1.bm90LWEtY3Vyc29y' }, 'filter.cursor'],
    ];
    for (const [name, filter, field] of cases)
      it(`refuses ${name}`, async () => {
        await refuses(() => tq.listBatches(loose<BatchFilter>(filter)), field);
      });
  });

  describe('batch ids', () => {
    it('getBatch and batchStatus refuse an id that is no UUID', async () => {
      await refuses(() => tq.getBatch('batch-1'), 'batchId', /UUID/);
      await refuses(() => tq.batchStatus('batch-1'), 'batchId', /UUID/);
    });
  });

  describe('waitForBatch options', () => {
    const cases: [string, string, unknown, string][] = [
      ['a batch id that is no UUID', 'nope', {}, 'waitForBatch.batchId'],
      ['non-object options', ID, 'fast', 'waitForBatch.options'],
      ['an unknown option', ID, { snoozeIntervl: '5s' }, 'waitForBatch.snoozeIntervl'],
      ['a negative snoozeInterval', ID, { snoozeInterval: -5 }, 'waitForBatch.snoozeInterval'],
      ['an unreadable snoozeInterval', ID, { snoozeInterval: 'soon' }, 'waitForBatch.snoozeInterval'],
      [
        'a non-boolean snoozeViaException',
        ID,
        { snoozeViaException: 'no' },
        'waitForBatch.snoozeViaException',
      ],
      ['expectAtLeast 0', ID, { expectAtLeast: 0 }, 'waitForBatch.expectAtLeast'],
      ['a fractional expectAtLeast', ID, { expectAtLeast: 1.5 }, 'waitForBatch.expectAtLeast'],
      ['an unknown onEmpty', ID, { onEmpty: 'ignore' }, 'waitForBatch.onEmpty'],
      ['an excludeJobId that is no UUID', ID, { excludeJobId: 'me' }, 'waitForBatch.excludeJobId'],
      ['a signal that is no AbortSignal', ID, { signal: { aborted: false } }, 'waitForBatch.signal'],
    ];
    for (const [name, batchId, options, field] of cases)
      it(`refuses ${name}`, async () => {
        await refuses(() => tq.waitForBatch(batchId, loose<WaitForBatchOptions>(options)), field);
      });
  });
});
