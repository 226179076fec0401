import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';

import type { Logger } from '../../obs/logger.js';
import { tsxLoader, type ThreadEntryLocation } from '../threads/thread-entry-location.js';
import type { LoopLagBudgets } from './loop-lag-monitor.js';
import {
  BEAT_SLOT,
  BEAT_SLOTS,
  LOOP_LAG_HOOKS,
  TICKED_SLOT,
  type LoopLagFigures,
  type LoopLagMessage,
  type LoopLagThreadData,
} from './loop-lag-protocol.js';
import type { WatchdogTrip } from './watchdog-trip.js';

/** What {@link LoopLagWatchdog} needs. */
export interface LoopLagWatchdogOptions {
  budgets: LoopLagBudgets;
  workerId: string;
  trip: WatchdogTrip;
  logger: Logger;
  /** Where the thread's program is; default `loop-lag-thread.js` (or `.ts` through tsx) beside this module. */
  entry?: () => ThreadEntryLocation;
}

type TripHook = (figures: LoopLagFigures) => void;

/**
 * Detector 4, event-loop lag, main-thread side. A blocked event loop cannot run a detector of its
 * own, so the detector is a worker thread (loop-lag-thread.ts) fed through a `SharedArrayBuffer`:
 * this side writes a beat (a monotonic timestamp) every half `watchdogCheckInterval` from an
 * unref'd timer, and raises a flag at the first service-loop tick. When the beats stop for
 * `watchdogLoopLagWarnBudget` the thread dumps the main thread's stack (taken through the
 * inspector) and this side logs `watchdog-loop-lag-warning` once the loop runs again; when they
 * stop for `watchdogLoopLagBudget` the thread trips: it calls the hook registered here on the
 * paused main thread (count, critical log, exit 2), or kills the process when the main thread is
 * stuck in native code. The settings invariant `watchdogLoopLagBudget + heartbeatInterval <
 * lockLease` makes the process go before the leases of its jobs expire.
 */
export class LoopLagWatchdog {
  private readonly beats = new BigInt64Array(new SharedArrayBuffer(BEAT_SLOTS * 8));
  private readonly hookId = randomUUID();
  private beatTimer: NodeJS.Timeout | null = null;
  private thread: Thread | null = null;
  private stopping = false;
  private warningCount = 0;
  private markWatching!: () => void;
  private readonly watchingNow = new Promise<void>((resolve) => {
    this.markWatching = resolve;
  });

  constructor(private readonly options: LoopLagWatchdogOptions) {}

  /** Resolves once the thread runs its program and watches the beats (for tests and health checks). */
  whenWatching(): Promise<void> {
    return this.watchingNow;
  }

  /** Lag warnings received so far (each stall past the warn budget counts once). */
  get warnings(): number {
    return this.warningCount;
  }

  /** True while the thread runs. */
  get watching(): boolean {
    return this.thread !== null;
  }

  /**
   * Starts beating and the thread. A thread that cannot start (the package was bundled without
   * its thread file) is logged as an error and the worker runs without this detector.
   */
  start(): void {
    if (this.beatTimer) return;
    this.beat();
    const beatEveryMs = Math.max(1, Math.floor(this.options.budgets.checkIntervalMs / 2));
    this.beatTimer = setInterval(() => this.beat(), beatEveryMs).unref();
    hooks().set(this.hookId, (figures) => this.tripped(figures));
    let entry: ThreadEntryLocation;
    try {
      entry = (this.options.entry ?? locateLoopLagThread)();
    } catch (err) {
      this.options.logger.error({ err }, 'watchdog-loop-lag-unavailable');
      return;
    }
    const workerData: LoopLagThreadData = {
      beats: this.beats.buffer as SharedArrayBuffer,
      budgets: this.options.budgets,
      hookId: this.hookId,
      workerId: this.options.workerId,
    };
    const thread = startThread(entry, workerData);
    thread.unref();
    thread.on('message', (msg: LoopLagMessage) => this.received(msg));
    thread.on('error', (err) => this.options.logger.error({ err }, 'watchdog-loop-lag-thread-failed'));
    thread.on('exit', (code) => {
      this.thread = null;
      if (!this.stopping) this.options.logger.error({ code }, 'watchdog-loop-lag-thread-died');
    });
    this.thread = thread;
  }

  /** Arms the detector before its startup grace ends (the first service-loop tick). */
  armNow(): void {
    Atomics.store(this.beats, TICKED_SLOT, 1n);
  }

  /** Stops beating and ends the thread. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.beatTimer) clearInterval(this.beatTimer);
    this.beatTimer = null;
    hooks().delete(this.hookId);
    const thread = this.thread;
    this.thread = null;
    await thread?.terminate();
  }

  private beat(): void {
    Atomics.store(this.beats, BEAT_SLOT, process.hrtime.bigint());
  }

  private received(msg: LoopLagMessage): void {
    if (msg.type === 'watching') {
      this.markWatching();
    } else if (msg.type === 'warning') {
      this.warningCount++;
      const { stack, ...figures } = msg.figures;
      this.options.logger.warn(
        { detector: 'loop-lag', ...figures, stack: stackLines(stack) },
        'watchdog-loop-lag-warning',
      );
    } else {
      this.options.logger.error({ message: msg.message }, 'watchdog-loop-lag-thread-error');
    }
  }

  /** Runs on the main thread, paused by the inspector: the thread already wrote the dump. */
  private tripped(figures: LoopLagFigures): void {
    this.options.trip.trip(
      'loop-lag',
      `the event loop ran no beat for ${figures.lagMs} ms (budget ${figures.budgetMs} ms)`,
      { ...figures, stack: stackLines(figures.stack) },
      { dump: false },
    );
  }
}

/** The dumped stack as one entry per frame (`at fn (url:line:column)`), for a structured record. */
function stackLines(stack: string | null): string[] | null {
  return stack === null ? null : stack.split('\n').map((line) => line.trim());
}

function hooks(): Map<string, TripHook> {
  const g = globalThis as unknown as Record<symbol, Map<string, TripHook> | undefined>;
  const key = Symbol.for(LOOP_LAG_HOOKS);
  return (g[key] ??= new Map());
}

const TS_MODULE = /\.(c|m)?ts$/;

/**
 * `loop-lag-thread.js` beside the compiled module, or `loop-lag-thread.ts` through tsx's loader when
 * the package runs from its sources (tests, tsx).
 */
export function locateLoopLagThread(): ThreadEntryLocation {
  const here = import.meta.url;
  const fromSource = TS_MODULE.test(new URL(here).pathname);
  const url = new URL(fromSource ? './loop-lag-thread.ts' : './loop-lag-thread.js', here);
  if (url.protocol !== 'file:' || !existsSync(fileURLToPath(url)))
    throw new Error(`the loop-lag thread's program ${url.href} does not exist (a bundle leaves it out)`);
  const loader = fromSource ? tsxLoader() : undefined;
  if (fromSource && loader === undefined)
    throw new Error(`taskq runs from its TypeScript sources and ${url.href} needs tsx to load`);
  return { url, loader };
}

/** Starts the thread; a TypeScript program goes through a bootstrap that installs tsx first. */
function startThread(entry: ThreadEntryLocation, workerData: LoopLagThreadData): Thread {
  if (entry.loader === undefined) return new Thread(entry.url, { workerData });
  const bootstrap =
    `import { register } from ${JSON.stringify(entry.loader)};\n` +
    `register();\nawait import(${JSON.stringify(entry.url.href)});\n`;
  return new Thread(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), { workerData });
}
