/**
 * CPU time used by the local PostgreSQL server's processes, read from `/proc` (Linux, a server on
 * this machine). Each process's own user + system time, plus the time of its exited children as
 * the kernel books it to the parent — the postmaster's share is every backend and autovacuum worker
 * that ended meanwhile (a worker process's connections close when it stops). Server-wide: the
 * harness's own queries count too, the same for every system. Null when nothing can be read
 * (another OS, a remote server).
 */
import { readFileSync, readdirSync } from 'node:fs';

import { processCpuMicros } from './proc-stat.js';

/** Microseconds of CPU the `postgres` processes have used so far, or null. */
export function postgresCpuMicros(): number | null {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  let micros = 0;
  let found = false;
  for (const pid of pids) {
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8');
    } catch {
      continue; // the process ended between the listing and the read
    }
    if (!comm.startsWith('postgres')) continue;
    const us = processCpuMicros(Number(pid), true);
    if (us === null) continue;
    micros += us;
    found = true;
  }
  return found ? micros : null;
}
