/**
 * `BENCH_BACKEND_CPU=1`: prints (stderr), at the end of each measured drain and before the workers
 * stop, the server CPU of every client connection still open, with the statement it ran last —
 * which of a system's statements (claim, outcome write, notifications, the harness's own polls)
 * the server's time per job goes to. A connection's figure is its whole life, so the statements it
 * planned and ran before the drain are in it, and a connection that closed before the end is not
 * listed. Linux, a server on this machine.
 */
import type pg from 'pg';

import { processCpuMicros } from './proc-stat.js';

export async function printBackendCpu(client: pg.Client, jobs: number): Promise<void> {
  const r = await client.query<{ pid: number; statement: string }>(
    `SELECT pid, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS statement
     FROM pg_stat_activity
     WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()`,
  );
  const rows = r.rows
    .map((row) => ({ ...row, micros: processCpuMicros(row.pid) ?? 0 }))
    .sort((a, b) => b.micros - a.micros);
  const total = rows.reduce((a, row) => a + row.micros, 0);
  process.stderr.write(
    `    backends: ${rows.length} connections, ${(total / 1000).toFixed(0)} ms of server CPU (${(total / jobs).toFixed(1)} µs/job)\n`,
  );
  for (const row of rows)
    if (row.micros > 0)
      process.stderr.write(
        `    ${(row.micros / jobs).toFixed(1).padStart(7)} µs/job ${(row.micros / 1000).toFixed(0).padStart(6)} ms  ${row.statement}\n`,
      );
}
