/**
 * BucketTurns: one turn at a time per limit, in the order the jobs queued; a job that gives up
 * (its deadline, an abort) leaves the queue without holding up the jobs behind it.
 */
import { describe, expect, it } from 'vitest';

import { BucketTurns } from '../../src/worker/bucket-turns.js';
import { flushPromises } from '../helpers/wait.js';

const later = (ms: number) => performance.now() + ms;

describe('BucketTurns', () => {
  it('gives turns one at a time per limit, first queued first, and limits apart', async () => {
    const turns = new BucketTurns();
    const order: string[] = [];
    const first = (await turns.take('a', later(1000)))!;
    const queued = ['b1', 'b2', 'b3'].map((name) =>
      turns.take('a', later(1000)).then((end) => {
        order.push(name);
        return end!;
      }),
    );
    // Another limit is not held up by this one.
    const other = await turns.take('b', later(1000));
    expect(other).not.toBeNull();
    other!();
    await flushPromises();
    expect(order).toEqual([]);
    first();
    const e1 = await queued[0]!;
    await flushPromises();
    expect(order).toEqual(['b1']);
    e1();
    (await queued[1]!)();
    (await queued[2]!)();
    expect(order).toEqual(['b1', 'b2', 'b3']);
    expect(turns.busy).toBe(0);
  });

  it('a job that gives up (deadline or abort) leaves its place; the jobs behind still get theirs', async () => {
    const turns = new BucketTurns();
    const first = (await turns.take('a', later(1000)))!;
    const deadline = later(30);
    const timedOut = turns.take('a', deadline);
    const abort = new AbortController();
    const aborted = turns.take('a', later(1000), abort.signal);
    const behind = turns.take('a', later(1000));
    let gaveUp = false;
    void timedOut.then(() => (gaveUp = true));
    await flushPromises();
    expect(gaveUp).toBe(false); // still queued before its deadline
    // Given up when its deadline passes (no wall-clock assertion: Node's timers run on the event
    // loop's cached millisecond clock and may fire up to a millisecond before performance.now()).
    expect(await timedOut).toBeNull();
    abort.abort();
    expect(await aborted).toBeNull();
    let got = false;
    void behind.then(() => (got = true));
    await flushPromises();
    expect(got).toBe(false);
    first();
    const end = await behind;
    expect(end).not.toBeNull();
    end!();
    expect(turns.busy).toBe(0);
  });
});
