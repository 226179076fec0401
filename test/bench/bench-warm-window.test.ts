// The window of a warm drain (bench/lib/drain.ts, `--processing-warmup`): it opens when the last
// worker process starts its warm-up's last handler, and counts only the starts after it.
import { describe, expect, it } from 'vitest';

import { warmWindow } from '../../bench/lib/drain.js';
import type { WorkerResult } from '../../bench/lib/fleet.js';

function worker(starts: number[]): WorkerResult {
  return {
    count: starts.length,
    failed: 0,
    failures: [],
    firstStart: starts[0] ?? 0,
    lastStart: starts.at(-1) ?? 0,
    latencies: [],
    rss: [],
    peakRss: 0,
    cpuMicros: 0,
    starts,
  };
}

describe('warmWindow', () => {
  it('opens at the slowest process’s last warm-up start and counts the starts after it', () => {
    // Warm-up of 2: the first process is warm at 20, the second at 50.
    const w = warmWindow([worker([10, 20, 30, 40, 60]), worker([40, 50, 55, 70])], 2, 100);
    expect(w.first).toBe(50);
    // 60 (first process) and 55, 70 (second); 10–50 belong to the warm-up.
    expect(w.counted).toBe(3);
  });

  it('leaves out starts after the end of a partial run', () => {
    const w = warmWindow([worker([1, 2, 3, 4, 5, 6])], 2, 4);
    expect(w).toEqual({ first: 2, counted: 2 });
  });

  it('refuses a run where a process never finished its warm-up', () => {
    expect(() => warmWindow([worker([1, 2, 3]), worker([4])], 2, 10)).toThrow(
      /a worker process started 1 handlers, fewer than its warm-up of 2/,
    );
  });
});
