/**
 * The program of the loop-lag thread (detector 4), started by loop-lag-watchdog.ts. It runs on its
 * own event loop, so it keeps running when the main thread's loop is blocked: it reads the main
 * thread's beats from shared memory and, when they stop, warns and then ends the process. It
 * imports nothing that touches the database or the logger.
 */
import { parentPort, workerData } from 'node:worker_threads';

import { LoopLagMonitor } from './loop-lag-monitor.js';
import {
  BEAT_SLOT,
  LOOP_LAG_HOOKS,
  TICKED_SLOT,
  type LoopLagFigures,
  type LoopLagMessage,
  type LoopLagThreadData,
} from './loop-lag-protocol.js';
import { formatStack, MainThreadInspector } from './main-thread-inspector.js';
import { EXIT_WATCHDOG, writeToStderr } from './watchdog-trip.js';

/** How long the main thread gets to pause for the inspector (it answers within milliseconds from JS). */
const PAUSE_TIMEOUT_MS = 1000;
/** How long the main thread gets to run the trip hook and exit before the thread kills the process. */
const EXIT_TIMEOUT_MS = 1000;

const port = parentPort;
if (!port) throw new Error('loop-lag-thread runs only as a worker thread started by LoopLagWatchdog');
const data = workerData as LoopLagThreadData;
const beats = new BigInt64Array(data.beats);
const nowMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;
const monitor = new LoopLagMonitor(data.budgets, nowMs());
const post = (msg: LoopLagMessage): void => port.postMessage(msg);

async function watch(): Promise<void> {
  for (;;) {
    let waitMs = data.budgets.checkIntervalMs;
    try {
      const lastBeat = Number(Atomics.load(beats, BEAT_SLOT) / 1000n) / 1000;
      const verdict = monitor.check(nowMs(), lastBeat, Atomics.load(beats, TICKED_SLOT) !== 0n);
      if (verdict.kind === 'trip') return await trip(verdict.lagMs);
      if (verdict.kind === 'warn') {
        await warn(verdict.lagMs);
        continue; // look again at once: the pause took time
      }
      waitMs = verdict.nextCheckInMs;
    } catch (err) {
      // A dead thread would leave the worker unprotected without a word: say so and keep watching.
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      writeToStderr(`taskq watchdog: loop-lag thread error (still watching): ${message}`);
      post({ type: 'error', message });
    }
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

function figures(lagMs: number, stack: string | null): LoopLagFigures {
  const { budgetMs, warnBudgetMs } = data.budgets;
  return { lagMs: Math.round(lagMs), budgetMs, warnBudgetMs, stack };
}

function header(kind: string, f: LoopLagFigures): string {
  return (
    `taskq watchdog ${kind} (loop-lag): the event loop has run no beat for ${f.lagMs} ms ` +
    `(warn budget ${f.warnBudgetMs} ms, budget ${f.budgetMs} ms)\n  pid: ${process.pid}\n  workerId: ${data.workerId}\n`
  );
}

function stackSection(stack: string | null, pauseMs: number): string {
  return stack === null
    ? `  main thread stack: none — the main thread did not answer the inspector within ${PAUSE_TIMEOUT_MS} ms ` +
        `(blocked in a native call, or no inspector in this Node)\n`
    : `  main thread stack (paused by the inspector in ${Math.round(pauseMs)} ms):\n${stack}\n`;
}

/** Tier 1: dump the main thread's stack to stderr now; the main thread logs it when it runs again. */
async function warn(lagMs: number): Promise<void> {
  const inspector = new MainThreadInspector();
  const pausedAt = nowMs();
  const frames = await inspector.pause(PAUSE_TIMEOUT_MS);
  const pauseMs = nowMs() - pausedAt;
  await inspector.resume(PAUSE_TIMEOUT_MS);
  const f = figures(lagMs, frames && formatStack(frames));
  writeToStderr(header('warning', f) + stackSection(f.stack, pauseMs));
  post({ type: 'warning', figures: f });
}

/**
 * Tier 2, terminal: take the main thread's stack, write the dump, then have the main thread run
 * its trip hook (count, critical log, exit 2) through the inspector. When the main thread does not
 * answer (stuck in native code), or its exit does not come, the thread writes the critical record
 * itself and kills the process with SIGKILL: no other way out of a process exists from a thread.
 */
async function trip(lagMs: number): Promise<void> {
  let f = figures(lagMs, null);
  try {
    const inspector = new MainThreadInspector();
    const pausedAt = nowMs();
    const frames = await inspector.pause(PAUSE_TIMEOUT_MS);
    f = figures(lagMs, frames && formatStack(frames));
    writeToStderr(header('trip', f) + stackSection(f.stack, nowMs() - pausedAt));
    if (frames !== null) {
      const hook = `globalThis[Symbol.for(${JSON.stringify(LOOP_LAG_HOOKS)})]?.get(${JSON.stringify(data.hookId)})`;
      await inspector.evaluate(
        `(() => { try { ${hook}?.(${JSON.stringify(f)}); } finally { process.exit(${EXIT_WATCHDOG}); } })()`,
        EXIT_TIMEOUT_MS,
      );
    }
  } finally {
    // Reached only when the main thread did not exit: whatever failed above, the process must end.
    writeToStderr(
      JSON.stringify({
        level: 60,
        time: Date.now(),
        pid: process.pid,
        workerId: data.workerId,
        detector: 'loop-lag',
        ...f,
        stack: undefined,
        exit: 'SIGKILL',
        msg: 'watchdog-trip',
      }),
    );
    process.kill(process.pid, 'SIGKILL');
  }
}

post({ type: 'watching' });
void watch();
