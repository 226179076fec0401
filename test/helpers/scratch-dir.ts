/**
 * Temporary directories for the private servers of fault tests (see pg-cluster.ts, redis-server.ts).
 * Each directory records the pid of the test process that made it, so that a later run can remove
 * what a crashed run left behind.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const OWNER_FILE = 'owner.pid';

/** True when a process with this pid exists (signal 0 probes without signalling). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes `<tmpdir>/<prefix>*` directories whose owning test process is gone. The servers in them
 * died with their owner (parent-death signal), so only files remain.
 */
export function sweepStaleScratchDirs(prefix: string): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((e) => e.startsWith(prefix));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = join(tmpdir(), entry);
    const ownerFile = join(dir, OWNER_FILE);
    if (!existsSync(ownerFile)) continue;
    const owner = Number(readFileSync(ownerFile, 'utf8').trim());
    if (Number.isInteger(owner) && owner > 0 && !processAlive(owner)) {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** Makes a fresh `<tmpdir>/<prefix>XXXXXX` directory owned (in the sense above) by this process. */
export function makeScratchDir(prefix: string): string {
  sweepStaleScratchDirs(prefix);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  return dir;
}
