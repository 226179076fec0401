/**
 * Contract cases for NUL characters in JSON (Postgres jsonb cannot store \u0000): both backends
 * refuse them at the boundary, naming the field and where the NUL is, and write nothing. Run inside
 * the Backend contract (backend-contract.ts), against its client.
 */
import { expect, it } from 'vitest';
import { z } from 'zod';

import { actor, type AnyActor } from '../../src/core/actor.js';
import type { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { plain } from '../helpers/actors.js';

/** Payload actors: one with a string field in its schema, one taking any JSON. */
const noted = actor({ name: 'noted', payload: z.object({ note: z.string() }) }, async () => undefined);
const freeform = actor({ name: 'freeform' }, async () => undefined);

/** Defines the cases; `client()` is the contract's client of the current case, `count()` its job count. */
export function defineNulCases(client: () => TaskQ, count: () => Promise<number>): void {
  // Postgres jsonb cannot store \u0000; both backends refuse it before writing anything.
  const expectNulRejected = (err: unknown, field: string, where: string): void => {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    const e = err as InvalidArgumentError;
    expect(e.field).toBe(field);
    expect(e.rule).toContain('must not contain NUL (\\u0000) characters');
    expect(e.rule).toContain(where);
    expect(e.message).toContain(field);
  };

  it.each([
    ['a string field', noted, { note: 'before\u0000after' }, 'found in the string at payload.note'],
    [
      'a nested array item',
      freeform,
      { rows: [{ ok: 'x' }, { cells: ['a', 'b\u0000'] }] },
      'found in the string at payload.rows[1].cells[1]',
    ],
    [
      'an object key',
      freeform,
      { outer: { 'bad\u0000key': 1 } },
      'found in the key at payload.outer["bad\\u0000key"]',
    ],
    ['a bare string payload', freeform, '\u0000', 'found in the string at payload)'],
  ])('rejects a NUL in %s of the payload and writes nothing', async (_label, ref, payload, where) => {
    const err = await client()
      .enqueue(ref as AnyActor, payload as never)
      .catch((e: unknown) => e);
    expectNulRejected(err, 'payload', where);
    expect(await count()).toBe(0);
  });

  it('names the batch item and writes none of the batch', async () => {
    const err = await client()
      .enqueueBatch([
        { actor: freeform, payload: { fine: true } },
        { actor: noted, payload: { note: '\u0000' } },
      ])
      .catch((e: unknown) => e);
    expectNulRejected(err, 'items[1].payload', 'found in the string at items[1].payload.note');
    expect(await count()).toBe(0);
  });

  it('keeps a literal backslash-u0000 text, which is not a NUL', async () => {
    const text = 'C:\\u0000\\dir';
    const handle = await client().enqueue(noted, { note: text });
    expect((await client().getRow(handle.jobId))?.payload).toEqual({ note: text });
  });

  it('rejects a NUL in metadata and writes nothing', async () => {
    const err = await client()
      .enqueue(plain, { n: 1 }, { metadata: { source: { name: 'x\u0000' } } })
      .catch((e: unknown) => e);
    expectNulRejected(err, 'enqueue.metadata', 'found in the string at enqueue.metadata.source.name');
    expect(await count()).toBe(0);
  });
}
