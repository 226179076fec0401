/**
 * The leader elector on the in-memory backend (a FakeClock for the backend's lease, a hand-moved
 * monotonic clock for the elector's own count): election, the local lease deadline of a resumed
 * process, step-down on a refused renewal or sweep, and giving the lease up when stopping.
 */
import { describe, expect, it } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { Logger } from '../../src/obs/logger.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { LeaderElector } from '../../src/worker/maintenance/leader-elector.js';
import { MaintenanceSweeps } from '../../src/worker/maintenance/maintenance-sweeps.js';

const A = '018f0000-0000-7000-8000-00000000f00a';
const B = '018f0000-0000-7000-8000-00000000f00b';
const LEASE = 4000;

function recorder(): { logger: Logger; lines: { msg: string; obj: Record<string, unknown> }[] } {
  const lines: { msg: string; obj: Record<string, unknown> }[] = [];
  const push = (obj: object, msg?: string): void => {
    lines.push({ msg: msg ?? '', obj: obj as Record<string, unknown> });
  };
  const logger: Logger = { debug: push, info: push, warn: push, error: push, child: () => logger };
  return { logger, lines };
}

function setup() {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const backend = new InMemoryBackend({ clock });
  let local = 0;
  const make = (workerId: string) => {
    const rec = recorder();
    const elector = new LeaderElector(
      backend,
      { workerId, hostname: 'h' },
      1000,
      LEASE,
      rec.logger,
      () => local,
    );
    return { elector, ...rec };
  };
  return {
    clock,
    backend,
    a: make(A),
    b: make(B),
    /** Time passes for both the backend and the electors' monotonic clock. */
    pass(ms: number) {
      clock.advance(ms);
      local += ms;
    },
  };
}

const messages = (lines: { msg: string; obj: Record<string, unknown> }[], msg: string) =>
  lines.filter((l) => l.msg === msg).map((l) => l.obj);

describe('LeaderElector', () => {
  it('leads while it renews; a frozen leader stops calling itself leader, then steps down when resumed', async () => {
    const { a, b, pass, backend } = setup();
    expect(await a.elector.runOnce()).toBe(true);
    expect(await b.elector.runOnce()).toBe(false);
    expect(messages(a.lines, 'leader-elected')).toEqual([{ leader: true, term: '1' }]);
    pass(LEASE - 1000);
    expect(await a.elector.runOnce()).toBe(true);
    expect(a.elector.fence).toEqual({ workerId: A, term: '1' });

    // A freezes: no tick for longer than the lease. B takes over; A, resumed, no longer leads.
    pass(LEASE + 500);
    expect(await b.elector.runOnce()).toBe(true);
    expect(b.elector.fence?.term).toBe('2');
    expect(a.elector.isLeader).toBe(false);
    let ran = false;
    expect(
      await a.elector.fenced(async () => {
        ran = true;
      }),
    ).toBeNull();
    expect(ran).toBe(false);
    expect(await a.elector.runOnce()).toBe(false);
    expect(messages(a.lines, 'leader-stepped-down')).toEqual([
      { leader: false, term: '1', reason: 'lease-lost' },
    ]);
    expect((await backend.getLeaderLease())?.workerId).toBe(B);
  });

  it('steps down when the backend refuses a sweep of its term; the sweep pass does nothing', async () => {
    const { a, b, clock, backend } = setup();
    expect(await a.elector.runOnce()).toBe(true);
    // The backend's clock alone moves (A's own count says it still leads): B takes over.
    clock.advance(LEASE + 1);
    expect(await b.elector.runOnce()).toBe(true);
    const sweeps = new MaintenanceSweeps(
      backend,
      a.elector,
      { sweepIntervalMs: 1000, cancellationGracePeriodMs: 0, cleanupGracePeriodMs: 0, staleWorkerAfterMs: 1 },
      a.logger,
    );
    expect(a.elector.isLeader).toBe(true);
    expect(await sweeps.runOnce()).toEqual({
      reclaimed: 0,
      retried: 0,
      deadlineFailed: 0,
      resultsExpired: 0,
      staleWorkers: 0,
      staleBatchesCompleted: [],
    });
    expect(a.elector.isLeader).toBe(false);
    expect(messages(a.lines, 'leader-stepped-down')).toEqual([
      { leader: false, term: '1', reason: 'sweep-refused' },
    ]);
    expect(await a.elector.runOnce()).toBe(false);
    expect(messages(a.lines, 'leader-stepped-down')).toHaveLength(1);
  });

  it('gives the lease up when it stops, so another worker takes over at once', async () => {
    const { a, b } = setup();
    expect(await a.elector.runOnce()).toBe(true);
    expect(await b.elector.runOnce()).toBe(false);
    await a.elector.stop();
    expect(messages(a.lines, 'leader-stepped-down')).toEqual([
      { leader: false, term: '1', reason: 'stopping' },
    ]);
    expect(await b.elector.runOnce()).toBe(true);
    expect(b.elector.fence?.term).toBe('2');
  });
});
