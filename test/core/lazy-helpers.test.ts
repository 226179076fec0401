/** The worker's lazily made per-attempt helpers: the abort flag and the child logger. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

import { LazyChildLogger } from '../../src/obs/lazy-child-logger.js';
import type { Logger } from '../../src/obs/logger.js';
import { LazyAbort } from '../../src/worker/lazy-abort.js';

describe('LazyAbort', () => {
  it('a signal asked for before the abort follows it, with the reason', () => {
    const a = new LazyAbort();
    const signal = a.signal;
    const seen: unknown[] = [];
    signal.addEventListener('abort', () => seen.push(signal.reason));
    expect(a.aborted).toBe(false);
    a.abort('first');
    a.abort('second');
    expect(a.aborted).toBe(true);
    expect(a.reason).toBe('first');
    expect(signal.aborted).toBe(true);
    expect(seen).toEqual(['first']);
    expect(a.signal).toBe(signal);
  });

  it('a signal asked for after the abort is already aborted, with the same reason', () => {
    const a = new LazyAbort();
    const reason = new Error('cancelled');
    a.abort(reason);
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe(reason);
  });
});

describe('LazyChildLogger', () => {
  const recorder = (): { parent: Logger; children: Record<string, unknown>[]; lines: string[] } => {
    const children: Record<string, unknown>[] = [];
    const lines: string[] = [];
    const make = (bindings: Record<string, unknown>): Logger => ({
      debug: (_o, m) => lines.push(`debug ${m} ${JSON.stringify(bindings)}`),
      info: (_o, m) => lines.push(`info ${m} ${JSON.stringify(bindings)}`),
      warn: (_o, m) => lines.push(`warn ${m} ${JSON.stringify(bindings)}`),
      error: (_o, m) => lines.push(`error ${m} ${JSON.stringify(bindings)}`),
      child: (b) => {
        children.push(b);
        return make({ ...bindings, ...b });
      },
    });
    return { parent: make({}), children, lines };
  };

  it('makes the child once, on the first call, with the bindings', () => {
    const r = recorder();
    const log = new LazyChildLogger(r.parent, { jobId: 'j1', actor: 'a', queue: 'q', attempt: 1 });
    expect(r.children).toEqual([]);
    log.info({}, 'a');
    log.warn({}, 'b');
    expect(r.children).toEqual([{ jobId: 'j1', actor: 'a', queue: 'q', attempt: 1 }]);
    expect(r.lines).toEqual([
      'info a {"jobId":"j1","actor":"a","queue":"q","attempt":1}',
      'warn b {"jobId":"j1","actor":"a","queue":"q","attempt":1}',
    ]);
    log.child({ step: 2 }).error({}, 'c');
    expect(r.lines.at(-1)).toBe('error c {"jobId":"j1","actor":"a","queue":"q","attempt":1,"step":2}');
  });

  it("drops calls below a pino parent's level without making the child", () => {
    const lines: string[] = [];
    const parent = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
    const log = new LazyChildLogger(parent as unknown as Logger, {
      jobId: 'j2',
      actor: 'a',
      queue: 'q',
      attempt: 1,
    });
    log.debug({}, 'quiet');
    expect(lines).toEqual([]);
    log.info({ n: 1 }, 'loud');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ jobId: 'j2', n: 1, msg: 'loud' });
  });
});
