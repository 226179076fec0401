import { describe, expect, it } from 'vitest';

import { WakeAnnouncer } from '../src/backend/postgres/wake-announcer.js';

/** A `send` whose calls the test ends one by one, recording the order of events. */
function controlledSend() {
  const ends: (() => void)[] = [];
  const log: string[] = [];
  let sends = 0;
  const send = () => {
    const n = ++sends;
    log.push(`send ${n} starts`);
    return new Promise<void>((resolve) => {
      ends.push(() => {
        log.push(`send ${n} ends`);
        resolve();
      });
    });
  };
  return {
    send,
    log,
    get sends() {
      return sends;
    },
    /** Ends the oldest send still running, then lets its continuations run. */
    async endNext() {
      ends.shift()!();
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('WakeAnnouncer', () => {
  it('sends at once when nothing is in flight, and resolves when that send ends', async () => {
    const c = controlledSend();
    const wakes = new WakeAnnouncer(c.send);
    let done = false;
    const p = wakes.announce().then(() => (done = true));
    expect(c.sends).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    await c.endNext();
    await p;
    expect(done).toBe(true);
  });

  it('never lets a caller share a send that started before its call: it waits for the next one', async () => {
    const c = controlledSend();
    const wakes = new WakeAnnouncer(c.send);
    const first = wakes.announce();
    const order: string[] = [];
    // Arrives while send 1 is in flight: send 1 may have reached the server before its insert.
    const second = wakes.announce().then(() => order.push('second resolved'));
    expect(c.sends).toBe(1);
    await c.endNext();
    await first;
    // Send 1 ended; send 2 started after the second caller's call and is the one it waits for.
    expect(c.sends).toBe(2);
    expect(order).toEqual([]);
    await c.endNext();
    await second;
    expect(c.log).toEqual(['send 1 starts', 'send 1 ends', 'send 2 starts', 'send 2 ends']);
    expect(order).toEqual(['second resolved']);
  });

  it('gives every caller arriving during one send the same next send: one in flight, one waiting', async () => {
    const c = controlledSend();
    const wakes = new WakeAnnouncer(c.send);
    const first = wakes.announce();
    const waiting = Array.from({ length: 20 }, () => wakes.announce());
    expect(new Set(waiting).size).toBe(1);
    await c.endNext();
    await first;
    expect(c.sends).toBe(2);
    // A caller arriving while send 2 is in flight waits for a third.
    const late = wakes.announce();
    expect(waiting.includes(late)).toBe(false);
    await c.endNext();
    await Promise.all(waiting);
    expect(c.sends).toBe(3);
    await c.endNext();
    await late;
    expect(c.sends).toBe(3);
  });

  it('starts afresh once everything has ended', async () => {
    const c = controlledSend();
    const wakes = new WakeAnnouncer(c.send);
    const a = wakes.announce();
    await c.endNext();
    await a;
    const b = wakes.announce();
    expect(c.sends).toBe(2);
    await c.endNext();
    await b;
    expect(c.log).toEqual(['send 1 starts', 'send 1 ends', 'send 2 starts', 'send 2 ends']);
  });
});

describe('WakeAnnouncer with a failing send', () => {
  it('still sends the next wake-up for the callers queued behind a failed one', async () => {
    let calls = 0;
    const wakes = new WakeAnnouncer(() => {
      calls++;
      return calls === 1 ? Promise.reject(new Error('connection lost')) : Promise.resolve();
    });
    const first = wakes.announce();
    const second = wakes.announce();
    await expect(first).rejects.toThrow('connection lost');
    await expect(second).resolves.toBeUndefined();
    expect(calls).toBe(2);
  });
});
