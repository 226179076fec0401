/**
 * The watchdog in a running worker: the loop-lag thread's warning tier against this process's own
 * blocked main thread (the terminal tier ends the process: test/faults/watchdog-loop-lag.test.ts),
 * and the worker's wiring on the in-memory backend — which loops are watched, start and stop, the
 * invariants checked at start, the exit code.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import type { Logger } from '../../src/obs/logger.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { EXIT_CODES } from '../../src/worker/run-worker.js';
import { LoopLagWatchdog } from '../../src/worker/watchdog/loop-lag-watchdog.js';
import { WatchdogTrip } from '../../src/worker/watchdog/watchdog-trip.js';
import { Worker } from '../../src/worker/worker.js';
import { waitFor } from '../helpers/wait.js';

interface LogLine {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}

function recordingLogger(lines: LogLine[]): Logger {
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, msg: msg ?? '', obj: obj as Record<string, unknown> });
    };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return logger;
}

/** Keeps this thread's event loop busy for `ms`: the stall the detector must see. */
function spinFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe('the loop-lag thread', () => {
  it('warns once about a stall past the warn budget, with the blocked main thread’s stack, and lets it run on', async () => {
    const lines: LogLine[] = [];
    const exits: number[] = [];
    const logger = recordingLogger(lines);
    const trip = new WatchdogTrip({ logger, exit: (code) => exits.push(code), writeDump: () => undefined });
    const watchdog = new LoopLagWatchdog({
      // A budget far beyond the stall: a trip here would end the test process.
      budgets: { budgetMs: 120_000, warnBudgetMs: 300, startupGraceMs: 60_000, checkIntervalMs: 50 },
      workerId: 'w-lag',
      trip,
      logger,
    });
    watchdog.start();
    try {
      await watchdog.whenWatching();
      watchdog.armNow();
      // Long enough for the inspector to find it still spinning on a loaded machine (it gets 1 s),
      // even when the watchdog thread waits seconds for a core before it sees the lag.
      spinFor(8_000);
      await waitFor(() => watchdog.warnings === 1, 10_000, 'the lag warning');
      const warning = lines.find((l) => l.msg === 'watchdog-loop-lag-warning');
      console.log(
        `[watchdog warn] lag at the warning: ${String(warning?.obj.lagMs)} ms (warn budget 300 ms)`,
      );
      expect(warning).toMatchObject({
        level: 'warn',
        obj: { detector: 'loop-lag', warnBudgetMs: 300, budgetMs: 120_000 },
      });
      expect(warning!.obj.lagMs as number).toBeGreaterThanOrEqual(300);
      // The pause lands in spinFor or in what it calls (performance.now's internals): spinFor is
      // among the first frames.
      const frames = warning!.obj.stack as string[];
      expect(frames.slice(0, 4).some((f) => /^at spinFor \(/.test(f))).toBe(true);
      expect(exits).toEqual([]);
      expect(trip.trips['loop-lag']).toBe(0);
      expect(watchdog.watching).toBe(true);
    } finally {
      await watchdog.stop();
    }
    expect(watchdog.watching).toBe(false);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
  }, 40_000);
});

const noop = actor({ name: 'wd_noop', queue: 'wd', payload: z.object({}) }, async () => undefined);

describe('the worker’s watchdog', () => {
  it('watches the interval loops (not the batch-by-batch retention loops), runs the lag thread, and stands down at stop', async () => {
    const lines: LogLine[] = [];
    const worker = new Worker({
      actors: [noop],
      backend: new InMemoryBackend(),
      logger: recordingLogger(lines),
      settings: { pgDsn: null, queues: ['wd'], watchdogEnabled: true },
    });
    await worker.start();
    const watchdog = worker.watchdog!;
    try {
      await waitFor(() => watchdog.liveness.ages().length >= 7, 10_000, 'the loops to tick');
      expect(
        watchdog.liveness
          .ages()
          .map((a) => a.loop)
          .sort(),
      ).toEqual([
        'cron',
        'heartbeat',
        'leader-elector',
        'maintenance-sweeps',
        'progress-flusher',
        'scheduled-promoter',
        'stranded-jobs',
      ]);
      await watchdog.loopLag!.whenWatching();
      expect(watchdog.loopLag!.watching).toBe(true);
    } finally {
      const stopping = worker.stop();
      expect(watchdog.shutdown.armed).toBe(true);
      await stopping;
    }
    expect(watchdog.shutdown.armed).toBe(false);
    expect(watchdog.loopLag!.watching).toBe(false);
    expect(watchdog.liveness.ages()).toEqual([]);
    expect(watchdog.trips).toEqual({
      'shutdown-deadline': 0,
      'stale-tick': 0,
      'sibling-contract': 0,
      'loop-lag': 0,
    });
    expect(lines.filter((l) => l.msg === 'shutdown-watchdog-armed')).toHaveLength(1);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
  }, 30_000);

  it('has no watchdog when watchdogEnabled is false', async () => {
    const worker = new Worker({
      actors: [noop],
      backend: new InMemoryBackend(),
      logger: recordingLogger([]),
      settings: { pgDsn: null, queues: ['wd'], watchdogEnabled: false },
    });
    await worker.start();
    expect(worker.watchdog).toBeNull();
    await worker.stop();
  });

  it('refuses to start on resolved settings that break an invariant, naming the settings, before connecting', async () => {
    const settings = {
      ...loadWorkerSettings({ overrides: { pgDsn: null, queues: ['wd'] } }).settings,
      watchdogLoopLagBudgetMs: 55_000,
    };
    const backend = new InMemoryBackend();
    const worker = new Worker({ actors: [noop], backend, logger: recordingLogger([]), settings });
    const err = await worker.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SettingsError);
    expect((err as SettingsError).problems).toEqual([
      expect.objectContaining({
        setting: 'watchdogLoopLagBudget',
        value: 55_000,
        rule: expect.stringContaining('must be less than lockLease 60s') as unknown,
      }),
    ]);
    expect(await worker.stopped).toBe('fatal');
    expect(worker.watchdog).toBeNull();
  });

  it('a worker torn down by the watchdog exits 2', () => {
    expect(EXIT_CODES.watchdog).toBe(2);
  });
});
