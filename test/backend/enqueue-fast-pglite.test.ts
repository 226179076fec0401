/**
 * `enqueueBatchFast` on the embedded PGlite driver: PGlite has no COPY sub-protocol, so its driver
 * feeds COPY from a blob (`FROM '/dev/blob'`); the jobs must come out as on a server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { PgliteDriver } from '../../src/db/pglite-driver.js';
import { DuplicateIdempotencyKeyError } from '../../src/errors/index.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { plain } from '../helpers/actors.js';

describe('enqueueBatchFast on PGlite', () => {
  let tq: TaskQ;

  beforeAll(async () => {
    const driver = await PgliteDriver.open();
    await new Migrator(driver, { schema: 'taskq' }).up();
    tq = await TaskQ.open({ driver });
  }, 60_000);
  afterAll(async () => {
    await tq.close();
  });

  it('writes the jobs through COPY from a blob, escapes included', async () => {
    const batchId = '01900000-0000-7000-8000-0000000b10b0';
    const n = await tq.enqueueBatchFast(
      [
        { actor: plain, payload: { n: 1 }, options: { tags: ['tab\there', 'line\nbreak', '\\N'] } },
        { actor: plain, payload: { n: 2 }, options: { delay: '1h', metadata: { s: 'back\\slash' } } },
      ],
      { batchId },
    );
    expect(n).toBe(2);
    const { jobs } = await tq.list({ batchId });
    const byN = (k: number) => jobs.find((j) => (j.payload as { n: number }).n === k)!;
    expect(byN(1).status).toBe('pending');
    expect(byN(1).tags).toEqual(['tab\there', 'line\nbreak', '\\N']);
    expect(byN(2).status).toBe('scheduled');
    expect(byN(2).metadata).toEqual({ s: 'back\\slash', batch_id: batchId });
  });

  it('refuses a stored idempotency key and writes nothing', async () => {
    await tq.enqueue(plain, { n: 3 }, { idempotencyKey: 'once' });
    const before = (await tq.list({ limit: 1000 })).jobs.length;
    await expect(
      tq.enqueueBatchFast([
        { actor: plain, payload: { n: 4 } },
        { actor: plain, payload: { n: 5 }, options: { idempotencyKey: 'once' } },
      ]),
    ).rejects.toBeInstanceOf(DuplicateIdempotencyKeyError);
    expect((await tq.list({ limit: 1000 })).jobs.length).toBe(before);
  });
});
