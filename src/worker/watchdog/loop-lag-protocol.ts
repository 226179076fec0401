import type { LoopLagBudgets } from './loop-lag-monitor.js';

/**
 * What the main thread and the loop-lag thread share. The beat buffer is a `BigInt64Array` over a
 * `SharedArrayBuffer`: slot {@link BEAT_SLOT} holds the main thread's last beat
 * (`process.hrtime.bigint()`, the process-wide monotonic clock, so both threads read the same
 * time), slot {@link TICKED_SLOT} turns 1 at the first service-loop tick (which arms the detector).
 */
export interface LoopLagThreadData {
  beats: SharedArrayBuffer;
  budgets: LoopLagBudgets;
  /** Key of this worker's trip hook in the registry at {@link LOOP_LAG_HOOKS}. */
  hookId: string;
  /** For the dump. */
  workerId: string;
}

export const BEAT_SLOT = 0;
export const TICKED_SLOT = 1;
export const BEAT_SLOTS = 2;

/**
 * `Symbol.for` key of the main thread's `Map<hookId, (figures) => void>` of trip hooks. The thread
 * calls its hook through `Runtime.evaluate` while the main thread is paused: the hook counts the
 * trip, logs the critical record through the worker's logger and exits 2.
 */
export const LOOP_LAG_HOOKS = 'taskq.watchdog.loopLagHooks';

/** Figures of a loop-lag warning or trip. */
export interface LoopLagFigures {
  lagMs: number;
  budgetMs: number;
  warnBudgetMs: number;
  /** The main thread's stack as taken by the inspector, V8-style lines; null when it did not answer. */
  stack: string | null;
}

/** Messages from the loop-lag thread (read when the main loop runs again). */
export type LoopLagMessage =
  { type: 'watching' } | { type: 'warning'; figures: LoopLagFigures } | { type: 'error'; message: string };
