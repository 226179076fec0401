/**
 * CPU time used by the local PostgreSQL server's processes, read from `/proc` (Linux, a server on
 * this machine). Each process's own user + system time, plus the time of its exited children as
 * the kernel books it to the parent — the postmaster's share is every backend and autovacuum worker
 * that ended meanwhile (a worker process's connections close when it stops). Server-wide: the
 * harness's own queries count too, the same for every system. Null when nothing can be read
 * (another OS, a remote server).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

let ticksPerSecond: number | null = null;

function clockTicks(): number {
  if (ticksPerSecond === null) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** Microseconds of CPU the `postgres` processes have used so far, or null. */
export function postgresCpuMicros(): number | null {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  let ticks = 0;
  let found = false;
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the parenthesised command name: state is the first; utime, stime, cutime and
      // cstime are the 12th to 15th.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      found = true;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return found ? (ticks / clockTicks()) * 1e6 : null;
}
