/**
 * The watchdog's detectors one by one, on injected clocks and through `runOnce()`: no thread, no
 * database, no sleeps. The trip's `exit` is a recorder, so a trip ends nothing here. The loop-lag
 * thread itself and the worker's wiring are in watchdog-worker.test.ts; the process-level trip is
 * test/faults/watchdog-loop-lag.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';

import type { Logger } from '../../src/obs/logger.js';
import { loadWorkerSettings, checkWatchdogInvariants } from '../../src/settings/load-worker-settings.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { LoopService } from '../../src/worker/loop-service.js';
import { LoopLagMonitor } from '../../src/worker/watchdog/loop-lag-monitor.js';
import { LoopLiveness } from '../../src/worker/watchdog/loop-liveness.js';
import { ShutdownWatchdog } from '../../src/worker/watchdog/shutdown-watchdog.js';
import { SiblingContract } from '../../src/worker/watchdog/sibling-contract.js';
import { StaleTickWatchdog } from '../../src/worker/watchdog/stale-tick-watchdog.js';
import { Watchdog } from '../../src/worker/watchdog/watchdog.js';
import { EXIT_WATCHDOG, WatchdogTrip } from '../../src/worker/watchdog/watchdog-trip.js';
import { flushPromises, waitFor } from '../helpers/wait.js';

interface LogLine {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}

/** A pino-shaped logger that keeps every line (with `fatal`, as pino has). */
function recordingLogger(lines: LogLine[], withFatal = true): Logger {
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, msg: msg ?? '', obj: obj as Record<string, unknown> });
    };
  const logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    ...(withFatal ? { fatal: at('fatal') } : {}),
    child: () => logger,
  };
  return logger;
}

/** A trip whose exit and dump are recorded. */
function recordedTrip(lines: LogLine[] = [], describe?: () => Record<string, unknown>) {
  const exits: number[] = [];
  const dumps: string[] = [];
  const trip = new WatchdogTrip({
    logger: recordingLogger(lines),
    exit: (code) => exits.push(code),
    writeDump: (text) => dumps.push(text),
    ...(describe ? { describe } : {}),
  });
  return { trip, exits, dumps, lines };
}

/** A monotonic clock the test moves. */
function fakeClock(start = 1_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('the trip sequence', () => {
  it('counts by detector, logs one critical record with the figures and the worker state, dumps, exits 2', () => {
    const { trip, exits, dumps, lines } = recordedTrip([], () => ({ phase: 'running', inFlight: 3 }));
    trip.trip('stale-tick', 'loop heartbeat has not ticked', { ageMs: 12_000 });
    expect(exits).toEqual([EXIT_WATCHDOG]);
    expect(EXIT_WATCHDOG).toBe(2);
    expect(trip.trips).toEqual({
      'shutdown-deadline': 0,
      'stale-tick': 1,
      'sibling-contract': 0,
      'loop-lag': 0,
    });
    expect(lines).toEqual([
      {
        level: 'fatal',
        msg: 'watchdog-trip',
        obj: {
          detector: 'stale-tick',
          reason: 'loop heartbeat has not ticked',
          ageMs: 12_000,
          phase: 'running',
          inFlight: 3,
        },
      },
    ]);
    expect(dumps).toHaveLength(1);
    expect(dumps[0]).toContain('taskq watchdog trip (stale-tick): loop heartbeat has not ticked');
    expect(dumps[0]).toContain('  ageMs: 12000');
    expect(dumps[0]).toContain('  phase: running');
  });

  it('logs at error when the logger has no fatal, skips the dump on request, survives a failing describe', () => {
    const lines: LogLine[] = [];
    const dumps: string[] = [];
    const trip = new WatchdogTrip({
      logger: recordingLogger(lines, false),
      exit: () => undefined,
      writeDump: (t) => dumps.push(t),
      describe: () => {
        throw new Error('runner gone');
      },
    });
    trip.trip('loop-lag', 'stalled', { lagMs: 3000 }, { dump: false });
    expect(lines[0]).toMatchObject({
      level: 'error',
      msg: 'watchdog-trip',
      obj: { detector: 'loop-lag', describeFailed: 'Error: runner gone' },
    });
    expect(dumps).toEqual([]);
  });
});

describe('detector 2: stale loop ticks', () => {
  it('trips when a loop has not ticked for max(period × grace factor, floor), once', async () => {
    const clock = fakeClock();
    const liveness = new LoopLiveness({ graceFactor: 5, floorMs: 10_000 }, clock.now);
    const { trip, exits, lines } = recordedTrip();
    const check = new StaleTickWatchdog(liveness, trip, 1000, recordingLogger([]));
    liveness.tick('heartbeat', 1000); // budget: the 10 s floor
    liveness.tick('sweeps', 4000); // budget: 4 s × 5 = 20 s
    clock.advance(10_000);
    expect(await check.runOnce()).toEqual([]);
    clock.advance(1);
    const stale = await check.runOnce();
    expect(stale).toEqual([{ loop: 'heartbeat', ageMs: 10_001, periodMs: 1000, budgetMs: 10_000 }]);
    expect(exits).toEqual([2]);
    expect(lines[0]!.obj).toMatchObject({
      detector: 'stale-tick',
      reason: 'loop heartbeat has not ticked for 10001 ms (budget 10000 ms)',
    });
    clock.advance(20_000);
    await check.runOnce();
    expect(exits).toEqual([2]);
    expect(trip.trips['stale-tick']).toBe(1);
  });

  it('does not judge a loop that ticks, or one that was forgotten', async () => {
    const clock = fakeClock();
    const liveness = new LoopLiveness({ graceFactor: 5, floorMs: 10_000 }, clock.now);
    const { trip, exits } = recordedTrip();
    const check = new StaleTickWatchdog(liveness, trip, 1000, recordingLogger([]));
    liveness.tick('heartbeat', 1000);
    liveness.tick('leader-elector', 1000);
    for (let i = 0; i < 5; i++) {
      clock.advance(9_000);
      liveness.tick('heartbeat', 1000);
      expect(await check.runOnce()).toEqual([]);
      if (i === 0) liveness.forget('leader-elector');
    }
    expect(exits).toEqual([]);
    expect(liveness.ages().map((a) => a.loop)).toEqual(['heartbeat']);
  });

  it('arms the loop-lag detector at the first tick of any loop', () => {
    const liveness = new LoopLiveness({ graceFactor: 5, floorMs: 10_000 });
    const armed: string[] = [];
    liveness.whenFirstTick(() => armed.push('early'));
    liveness.tick('heartbeat', 1000);
    liveness.tick('heartbeat', 1000);
    liveness.whenFirstTick(() => armed.push('late'));
    expect(armed).toEqual(['early', 'late']);
  });
});

/** A loop whose passes throw `bug` forever; its error handling rethrows, so the loop ends. */
class BrittleLoop extends LoopService {
  passes = 0;
  constructor(
    private readonly fail: boolean,
    private readonly period: number | null = 60_000,
  ) {
    super('brittle', recordingLogger([]));
  }
  protected intervalMs(): number {
    return 60_000;
  }
  protected override livenessPeriodMs(): number | null {
    return this.period;
  }
  async runOnce(): Promise<void> {
    this.passes++;
    if (this.fail) throw new Error('bug');
  }
  protected override onError(err: unknown): void {
    throw err;
  }
}

describe('LoopService reports to the watchdog', () => {
  const watchdogs: Watchdog[] = [];
  afterEach(async () => {
    await Promise.all(watchdogs.splice(0).map((w) => w.stop()));
  });

  function watchdog(opts: { stopping?: boolean } = {}) {
    const broke: string[] = [];
    const exits: number[] = [];
    const dumps: string[] = [];
    const lines: LogLine[] = [];
    const w = new Watchdog({
      settings: loadWorkerSettings().settings,
      workerId: 'w-1',
      logger: recordingLogger(lines),
      describeWorker: () => ({ phase: 'running' }),
      isStopping: () => opts.stopping ?? false,
      onSiblingBroke: (reason) => broke.push(reason),
      exit: (code) => exits.push(code),
      writeDump: (t) => dumps.push(t),
      loopLag: false,
    });
    watchdogs.push(w);
    return { w, broke, exits, dumps, lines };
  }

  it('a loop started inside observeLoops ticks at start and after each pass, and is forgotten when stopped', async () => {
    const { w } = watchdog();
    const loop = new BrittleLoop(false);
    w.observeLoops(() => loop.start());
    await waitFor(() => loop.passes === 1);
    await flushPromises();
    expect(w.liveness.ages()).toEqual([
      expect.objectContaining({ loop: 'brittle', periodMs: 60_000, budgetMs: 300_000 }),
    ]);
    await loop.stop();
    expect(w.liveness.ages()).toEqual([]);
  });

  it('a loop started outside it, or untracked (livenessPeriodMs null), reports nothing', async () => {
    const { w } = watchdog();
    const outside = new BrittleLoop(false);
    const untracked = new BrittleLoop(false, null);
    outside.start();
    w.observeLoops(() => untracked.start());
    await waitFor(() => outside.passes === 1 && untracked.passes === 1);
    expect(w.liveness.ages()).toEqual([]);
    await Promise.all([outside.stop(), untracked.stop()]);
  });

  it('detector 3: a loop that ends while the worker runs breaks the sibling contract: counted, logged, dumped, worker torn down', async () => {
    const { w, broke, exits, dumps, lines } = watchdog();
    const loop = new BrittleLoop(true);
    w.observeLoops(() => loop.start());
    await waitFor(() => broke.length === 1);
    expect(broke).toEqual(['loop brittle ended while the worker was running']);
    expect(w.trips['sibling-contract']).toBe(1);
    expect(lines.find((l) => l.msg === 'watchdog-trip')?.obj).toMatchObject({
      detector: 'sibling-contract',
      loop: 'brittle',
      error: 'Error: bug',
    });
    expect(dumps[0]).toContain('taskq watchdog trip (sibling-contract)');
    // Not an exit of its own: the teardown exits 2, under the shutdown deadline.
    expect(exits).toEqual([]);
    expect(w.liveness.ages()).toEqual([]);
    await loop.stop();
  });

  it('a loop that ends while the worker is stopping keeps the contract', () => {
    const { trip } = recordedTrip();
    const broke: string[] = [];
    const contract = new SiblingContract(
      trip,
      () => true,
      (r) => broke.push(r),
    );
    expect(contract.ended('heartbeat', new Error('closed'))).toBe(false);
    expect(broke).toEqual([]);
    expect(trip.trips['sibling-contract']).toBe(0);
  });
});

describe('detector 1: the shutdown deadline', () => {
  const armed: ShutdownWatchdog[] = [];
  afterEach(() => armed.splice(0).forEach((w) => w.disarm()));

  function shutdownWatchdog() {
    const clock = fakeClock();
    const lines: LogLine[] = [];
    const { trip, exits, dumps } = recordedTrip(lines);
    const w = new ShutdownWatchdog(
      {
        deadlineMs: 20_000,
        dumpIntervalMs: 3_000,
        dumpAfterFraction: 0.5,
        stragglers: () => ({ phase: 'cancelling', inFlight: 2 }),
        now: clock.now,
      },
      trip,
      recordingLogger(lines),
    );
    armed.push(w);
    return { w, clock, lines, exits, dumps };
  }

  it('is idle until armed; logs the countdown once; quiet in the front half; stragglers every dump interval after; trips at the deadline', () => {
    const { w, clock, lines, exits } = shutdownWatchdog();
    expect(w.runOnce()).toBe('idle');
    w.arm();
    w.arm(); // a second stop request does not move the anchor
    expect(lines.filter((l) => l.msg === 'shutdown-watchdog-armed')).toEqual([
      { level: 'info', msg: 'shutdown-watchdog-armed', obj: { deadlineMs: 20_000, dumpAfterMs: 10_000 } },
    ]);
    clock.advance(9_999);
    expect(w.runOnce()).toBe('waiting');
    clock.advance(1);
    expect(w.runOnce()).toBe('stragglers-logged');
    expect(lines.at(-1)).toMatchObject({
      level: 'warn',
      msg: 'shutdown-stragglers',
      obj: { elapsedMs: 10_000, leftMs: 10_000, phase: 'cancelling', inFlight: 2 },
    });
    clock.advance(2_999);
    expect(w.runOnce()).toBe('waiting');
    clock.advance(1);
    expect(w.runOnce()).toBe('stragglers-logged');
    clock.advance(6_999);
    expect(w.runOnce()).toBe('stragglers-logged');
    expect(exits).toEqual([]);
    clock.advance(1);
    expect(w.runOnce()).toBe('tripped');
    expect(exits).toEqual([2]);
    expect(lines.find((l) => l.msg === 'watchdog-trip')?.obj).toMatchObject({
      detector: 'shutdown-deadline',
      elapsedMs: 20_000,
      deadlineMs: 20_000,
    });
    expect(w.runOnce()).toBe('idle');
  });

  it('a shutdown that finishes in time disarms it: no trip however late it is asked', () => {
    const { w, clock, exits } = shutdownWatchdog();
    w.arm();
    clock.advance(5_000);
    w.disarm();
    clock.advance(60_000);
    expect(w.runOnce()).toBe('idle');
    expect(w.armed).toBe(false);
    expect(exits).toEqual([]);
  });
});

describe('detector 4: the loop-lag decisions', () => {
  const budgets = { budgetMs: 30_000, warnBudgetMs: 5_000, startupGraceMs: 30_000, checkIntervalMs: 1_000 };

  it('stays unarmed through the startup grace, then measures lag from the arming at most', () => {
    const m = new LoopLagMonitor(budgets, 0);
    expect(m.check(29_000, 0, false)).toEqual({ kind: 'unarmed', lagMs: 0, nextCheckInMs: 1_000 });
    expect(m.check(29_500, 0, false)).toEqual({ kind: 'unarmed', lagMs: 0, nextCheckInMs: 500 });
    // A startup that blocked the loop for the whole grace is not held against it.
    expect(m.check(30_000, 0, false)).toMatchObject({ kind: 'ok', lagMs: 0 });
    expect(m.armed).toBe(true);
    expect(m.check(34_999, 0, false)).toMatchObject({ kind: 'ok', lagMs: 4_999, nextCheckInMs: 1 });
  });

  it('arms at the first loop tick, before the grace ends', () => {
    const m = new LoopLagMonitor(budgets, 0);
    expect(m.check(100, 90, true)).toEqual({ kind: 'ok', lagMs: 0, nextCheckInMs: 1_000 });
    expect(m.check(150, 90, true)).toEqual({ kind: 'ok', lagMs: 50, nextCheckInMs: 1_000 });
  });

  it('warns once per stall at the warn budget, trips at the budget, and times its looks for the budgets', () => {
    const m = new LoopLagMonitor(budgets, 0);
    m.check(0, 0, true);
    expect(m.check(4_500, 0, true)).toEqual({ kind: 'ok', lagMs: 4_500, nextCheckInMs: 500 });
    expect(m.check(5_000, 0, true)).toEqual({ kind: 'warn', lagMs: 5_000, nextCheckInMs: 1_000 });
    expect(m.check(6_000, 0, true)).toMatchObject({ kind: 'ok', lagMs: 6_000 });
    expect(m.check(29_600, 0, true)).toEqual({ kind: 'ok', lagMs: 29_600, nextCheckInMs: 400 });
    expect(m.check(30_000, 0, true)).toMatchObject({ kind: 'trip', lagMs: 30_000 });
  });

  it('a new beat ends the stall: the next stall warns again', () => {
    const m = new LoopLagMonitor(budgets, 0);
    m.check(0, 0, true);
    expect(m.check(5_000, 0, true).kind).toBe('warn');
    expect(m.check(8_000, 7_900, true)).toMatchObject({ kind: 'ok', lagMs: 100 });
    expect(m.check(12_900, 7_900, true).kind).toBe('warn');
  });

  it('a warn budget at or above the budget never warns', () => {
    const m = new LoopLagMonitor({ ...budgets, warnBudgetMs: 30_000 }, 0);
    m.check(0, 0, true);
    expect(m.check(29_999, 0, true).kind).toBe('ok');
    expect(m.check(30_000, 0, true).kind).toBe('trip');
  });
});

describe('load-time invariants, checked again at worker start', () => {
  const base = loadWorkerSettings().settings;

  it('accepts the defaults and anything while the watchdog is off', () => {
    expect(() => checkWatchdogInvariants(base)).not.toThrow();
    expect(() =>
      checkWatchdogInvariants({ ...base, watchdogEnabled: false, watchdogLoopLagBudgetMs: 120_000 }),
    ).not.toThrow();
  });

  it('rejects a lag budget that outlives the lease, and one at or below the check interval, naming the settings', () => {
    let err: unknown;
    try {
      checkWatchdogInvariants({ ...base, watchdogLoopLagBudgetMs: 50_000, watchdogCheckIntervalMs: 60_000 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SettingsError);
    const e = err as SettingsError;
    expect(e.code).toBe('TASKQ_INVALID_SETTINGS');
    expect(e.problems.map((p) => p.setting)).toEqual(['watchdogLoopLagBudget', 'watchdogLoopLagBudget']);
    expect(e.problems[0]!.rule).toBe(
      'watchdogLoopLagBudget 50s (settings.watchdogLoopLagBudget) + heartbeatInterval 10s ' +
        '(settings.heartbeatInterval) = 60s must be less than lockLease 60s (settings.lockLease): ' +
        'a stalled event loop must end the process before its leases expire',
    );
    expect(e.problems[1]!.rule).toContain('must be greater than watchdogCheckInterval 60s');
  });

  it('rejects a staleness budget the leader loops cannot meet', () => {
    expect(() =>
      checkWatchdogInvariants({ ...base, watchdogTickGraceFactor: 1, watchdogStaleFloorMs: 2_000 }),
    ).toThrow(/watchdogStaleFloor 2s \(settings\.watchdogStaleFloor\)\) = 2s must be greater than 2s/);
    expect(() => checkWatchdogInvariants({ ...base, dispatcherCommandTimeoutMs: 9_000 })).toThrow(
      /dispatcherCommandTimeout 9s \(settings\.dispatcherCommandTimeout\) \+ the 1s leader-loop period/,
    );
  });
});
