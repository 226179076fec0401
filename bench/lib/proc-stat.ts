/**
 * CPU accounting read from Linux's `/proc`: one process's time, the whole machine's busy and idle
 * time, and the CPU pressure counter (how long some runnable task waited for a core). Every reader
 * returns null where the file cannot be read (another OS, a process that has ended), so a harness
 * run elsewhere reports "–" instead of failing.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | null = null;

/** Kernel clock ticks per second (`getconf CLK_TCK`; 100 when that cannot be asked). */
export function clockTicks(): number {
  if (ticksPerSecond === null) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

const ticksToMicros = (ticks: number): number => (ticks / clockTicks()) * 1e6;

/**
 * Microseconds of CPU (user + system) process `pid` has used, or null. With `withChildren`, the
 * time of its exited children the kernel books to it is added (`cutime`, `cstime`).
 */
export function processCpuMicros(pid: number, withChildren = false): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may hold spaces): state is the first;
    // utime, stime, cutime and cstime are the 12th to 15th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let ticks = Number(f[11]) + Number(f[12]);
    if (withChildren) ticks += Number(f[13]) + Number(f[14]);
    return Number.isFinite(ticks) ? ticksToMicros(ticks) : null;
  } catch {
    return null;
  }
}

export interface MachineCpu {
  /** CPU time all cores spent busy (everything but idle and I/O wait), µs. */
  busyMicros: number;
  /** CPU time of all cores, busy or not, µs. */
  totalMicros: number;
  /**
   * Time during which at least one runnable task waited for a core (`/proc/pressure/cpu`, "some"
   * total), µs; null where the kernel has no pressure accounting.
   */
  waitMicros: number | null;
}

/**
 * The share (%) of the cores' time that was busy between two readings; undefined without both
 * readings or without time between them.
 */
export function busyShare(a: MachineCpu | null, b: MachineCpu | null): number | undefined {
  if (!a || !b) return undefined;
  const total = b.totalMicros - a.totalMicros;
  return total > 0 ? (100 * (b.busyMicros - a.busyMicros)) / total : undefined;
}

/** The machine's CPU counters since boot, or null. */
export function machineCpu(): MachineCpu | null {
  let fields: number[];
  try {
    // First line: "cpu  user nice system idle iowait irq softirq steal guest guest_nice".
    fields = readFileSync('/proc/stat', 'utf8')
      .split('\n', 1)[0]!
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
  } catch {
    return null;
  }
  if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null;
  const idle = fields[3]! + fields[4]!;
  const total = fields.reduce((a, b) => a + b, 0);
  return {
    busyMicros: ticksToMicros(total - idle),
    totalMicros: ticksToMicros(total),
    waitMicros: cpuWaitMicros(),
  };
}

function cpuWaitMicros(): number | null {
  try {
    const some = readFileSync('/proc/pressure/cpu', 'utf8').split('\n', 1)[0]!;
    const m = /total=(\d+)/.exec(some);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
