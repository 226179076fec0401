// The benchmark's CPU accounting (bench/lib/proc-stat.ts, load-cpu.ts): the figures the latency
// workload reports for its loaded phases. Linux-only readers; the machines this runs on are Linux.
import { describe, expect, it } from 'vitest';

import { cpuBetween, cpuSnapshot, LOAD_CPU_METRICS, type CpuSnapshot } from '../../bench/lib/load-cpu.js';
import { busyShare, machineCpu, processCpuMicros } from '../../bench/lib/proc-stat.js';

/** Computes until this process has used `ms` of CPU (by Node's own count). */
function spin(ms: number): void {
  const start = process.cpuUsage();
  for (;;) {
    const used = process.cpuUsage(start);
    if (used.user + used.system >= ms * 1000) return;
    for (let i = 0; i < 10_000; i++) Math.sqrt(Math.random());
  }
}

describe('proc-stat', () => {
  it("reads this process's CPU time, which grows while it computes", () => {
    const before = processCpuMicros(process.pid);
    expect(before).not.toBeNull();
    spin(60);
    const after = processCpuMicros(process.pid)!;
    // The kernel counts in clock ticks (10 ms): 60 ms of CPU shows as at least 50 ms.
    expect(after - before!).toBeGreaterThanOrEqual(50_000);
  });

  it('returns null for a process that does not exist', () => {
    expect(processCpuMicros(2 ** 30)).toBeNull();
  });

  it("reads the machine's counters: busy time within the total, both growing", () => {
    const a = machineCpu()!;
    spin(30);
    const b = machineCpu()!;
    expect(a.busyMicros).toBeLessThanOrEqual(a.totalMicros);
    expect(b.totalMicros).toBeGreaterThan(a.totalMicros);
    expect(b.busyMicros).toBeGreaterThanOrEqual(a.busyMicros);
  });
});

describe('busyShare', () => {
  const at = (busyMicros: number, totalMicros: number) => ({ busyMicros, totalMicros, waitMicros: null });

  it('is the busy part of the time between two readings, in percent', () => {
    expect(busyShare(at(1_000_000, 2_000_000), at(2_500_000, 4_000_000))).toBe(75);
  });

  it('is undefined without both readings or without time between them', () => {
    expect(busyShare(null, at(1, 2))).toBeUndefined();
    expect(busyShare(at(1, 2), null)).toBeUndefined();
    expect(busyShare(at(1, 2), at(1, 2))).toBeUndefined();
  });
});

describe('cpuBetween', () => {
  const snap = (over: Partial<CpuSnapshot>): CpuSnapshot => ({
    atMs: 0,
    machine: { busyMicros: 0, totalMicros: 0, waitMicros: 0 },
    postgres: 0,
    workers: 0,
    loadGenerator: 0,
    ...over,
  });

  it('gives the busy share, the wait per second and the CPU per job of each part', () => {
    const a = snap({});
    const b = snap({
      atMs: 2000,
      machine: { busyMicros: 3_000_000, totalMicros: 4_000_000, waitMicros: 500_000 },
      postgres: 1_000_000,
      workers: 600_000,
      loadGenerator: 400_000,
    });
    expect(new Map(cpuBetween(a, b, 1000).map(([m, v]) => [m.metric, v]))).toEqual(
      new Map([
        [LOAD_CPU_METRICS.busy.metric, 75],
        [LOAD_CPU_METRICS.wait.metric, 250],
        [LOAD_CPU_METRICS.postgres.metric, 1000],
        [LOAD_CPU_METRICS.workers.metric, 600],
        [LOAD_CPU_METRICS.loadGenerator.metric, 400],
      ]),
    );
  });

  it('leaves out what could not be read, and the per-job figures when no job was offered', () => {
    const a = snap({ machine: null, postgres: null, workers: null });
    const b = snap({ atMs: 1000, machine: null, postgres: null, workers: null, loadGenerator: 10 });
    expect(cpuBetween(a, b, 10).map(([m]) => m.metric)).toEqual([LOAD_CPU_METRICS.loadGenerator.metric]);
    const c = snap({ atMs: 1000, machine: { busyMicros: 1, totalMicros: 2, waitMicros: null } });
    expect(cpuBetween(snap({}), c, 0).map(([m]) => m.metric)).toEqual([LOAD_CPU_METRICS.busy.metric]);
  });

  it('takes a snapshot of real counters', () => {
    const s = cpuSnapshot([process.pid]);
    expect(s.machine).not.toBeNull();
    expect(s.workers).toBeGreaterThan(0);
    expect(s.loadGenerator).toBeGreaterThan(0);
    expect(cpuSnapshot([]).workers).toBeNull();
  });
});
