/**
 * Payload typing: `enqueue()` takes the schema's input (fields with defaults optional) while the
 * handler sees its output. Checked by the type checker (`npm run typecheck`
 * covers test files) and at run time on the in-memory backend.
 */
import { z } from 'zod';
import { describe, expect, expectTypeOf, it } from 'vitest';

import { actor, type InputOf, type PayloadOf } from '../../src/core/actor.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { batchItem } from '../../src/client/batch-items.js';

const Order = z.object({
  id: z.string(),
  priority: z.enum(['low', 'high']).default('low'),
  amountCents: z.number().int(),
});

const place = actor({ name: 'types_place', payload: Order }, async (p) => {
  expectTypeOf(p).toEqualTypeOf<{ id: string; priority: 'low' | 'high'; amountCents: number }>();
  expect(p.priority).toBe('low'); // the default, applied at enqueue
  return p.amountCents;
});

describe('payload types', () => {
  it('enqueue takes the schema input; the handler gets the output', async () => {
    expectTypeOf<InputOf<typeof place>>().toEqualTypeOf<{
      id: string;
      priority?: 'low' | 'high' | undefined;
      amountCents: number;
    }>();
    expectTypeOf<PayloadOf<typeof place>>().toEqualTypeOf<{
      id: string;
      priority: 'low' | 'high';
      amountCents: number;
    }>();
    const jobs = new TaskQ(new InMemoryBackend());
    const h = await jobs.enqueue(place, { id: 'o1', amountCents: 1250 });
    // @ts-expect-error amountCents is required
    await expect(jobs.enqueue(place, { id: 'o2' })).rejects.toThrow(/amountCents/);
    await jobs.enqueueBatch([batchItem(place, { id: 'o3', amountCents: 1 })]);
    // What is stored is the schema's output: the default is filled in.
    expect((await h.refresh()).payload).toEqual({ id: 'o1', priority: 'low', amountCents: 1250 });
    expect(await place.run({ id: 'o4', priority: 'low', amountCents: 5 }, {} as never)).toBe(5);
  });

  it('an actor without a schema takes and sees unknown', () => {
    const loose = actor({ name: 'types_loose' }, async (p) => p);
    expect(loose.name).toBe('types_loose');
    expectTypeOf<InputOf<typeof loose>>().toEqualTypeOf<unknown>();
  });
});
