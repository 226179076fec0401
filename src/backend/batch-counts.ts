import type { BatchCounts } from './batch-types.js';

/** A batch row's terminal counters. */
export interface BatchCounters {
  succeeded: number;
  failed: number;
  cancelled: number;
  crashed: number;
  abandoned: number;
}

/**
 * The children counts of a batch with a row: its size and its terminal counters (every child not
 * counted terminal is pending, scheduled or running).
 */
export function countsOfRow(expectedSize: number, c: BatchCounters): BatchCounts {
  const terminal = c.succeeded + c.failed + c.cancelled + c.crashed + c.abandoned;
  return {
    total: expectedSize,
    pending: Math.max(0, expectedSize - terminal),
    succeeded: c.succeeded,
    failed: c.failed,
    cancelled: c.cancelled,
    crashed: c.crashed,
    abandoned: c.abandoned,
  };
}

/** The children counts of a batch without a row, from its jobs counted by status. */
export function countsOfStatuses(byStatus: Partial<Record<string, number>>): BatchCounts {
  const n = (s: string): number => Number(byStatus[s] ?? 0);
  const counts = {
    pending: n('pending') + n('scheduled') + n('running'),
    succeeded: n('succeeded'),
    failed: n('failed'),
    cancelled: n('cancelled'),
    crashed: n('crashed'),
    abandoned: n('abandoned'),
  };
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  return { total, ...counts };
}
