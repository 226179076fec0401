/**
 * Where the CPU went while a loaded phase ran: the machine's busy share, how long runnable tasks
 * waited for a core, and the CPU per job of the Postgres server, the worker processes and the load
 * generator (this harness process, which makes the enqueue calls). On a machine whose two cores
 * are shared by all of them, a latency tail follows the moments when every core is taken; these
 * figures put that in the report next to the percentiles.
 */
import { nowMs } from './common.js';
import { postgresCpuMicros } from './pg-cpu.js';
import { busyShare, machineCpu, processCpuMicros, type MachineCpu } from './proc-stat.js';
import type { MetricSpec } from './results.js';

export interface CpuSnapshot {
  /** When it was taken, `nowMs()`. */
  atMs: number;
  machine: MachineCpu | null;
  postgres: number | null;
  /** Sum over the worker processes, or null when any could not be read. */
  workers: number | null;
  loadGenerator: number;
}

/** The counters now; `workerPids` are the worker processes of the phase. */
export function cpuSnapshot(workerPids: readonly number[]): CpuSnapshot {
  let workers: number | null = 0;
  for (const pid of workerPids) {
    const us = processCpuMicros(pid);
    workers = us === null || workers === null ? null : workers + us;
  }
  const own = process.cpuUsage();
  return {
    atMs: nowMs(),
    machine: machineCpu(),
    postgres: postgresCpuMicros(),
    workers: workerPids.length ? workers : null,
    loadGenerator: own.user + own.system,
  };
}

export const LOAD_CPU_METRICS = {
  busy: { metric: 'machine busy (%)', unit: '%', better: 'lower' },
  wait: { metric: 'CPU wait (ms per s)', unit: 'ms/s', better: 'lower' },
  postgres: { metric: 'Postgres CPU (µs/job)', unit: 'µs/job', better: 'lower' },
  workers: { metric: 'worker CPU (µs/job)', unit: 'µs/job', better: 'lower' },
  loadGenerator: { metric: 'load generator CPU (µs/job)', unit: 'µs/job', better: 'lower' },
} satisfies Record<string, MetricSpec>;

/**
 * The figures between two snapshots over `jobs` jobs offered in that window, as (metric, value)
 * pairs; a figure whose counters could not be read is left out. Per job offered, not run: a system
 * that falls behind has run fewer in the window, and its figures per job read low.
 */
export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot, jobs: number): [MetricSpec, number][] {
  const out: [MetricSpec, number][] = [];
  if (a.machine && b.machine) {
    const busy = busyShare(a.machine, b.machine);
    if (busy !== undefined) out.push([LOAD_CPU_METRICS.busy, busy]);
    const wallMs = b.atMs - a.atMs;
    if (a.machine.waitMicros !== null && b.machine.waitMicros !== null && wallMs > 0)
      out.push([LOAD_CPU_METRICS.wait, (b.machine.waitMicros - a.machine.waitMicros) / wallMs]);
  }
  if (jobs <= 0) return out;
  if (a.postgres !== null && b.postgres !== null)
    out.push([LOAD_CPU_METRICS.postgres, (b.postgres - a.postgres) / jobs]);
  if (a.workers !== null && b.workers !== null)
    out.push([LOAD_CPU_METRICS.workers, (b.workers - a.workers) / jobs]);
  out.push([LOAD_CPU_METRICS.loadGenerator, (b.loadGenerator - a.loadGenerator) / jobs]);
  return out;
}
